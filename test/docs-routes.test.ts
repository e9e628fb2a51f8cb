// docs/reference/routes.md is what scripts/docs-routes.ts writes from the
// OpenAPI document the service serves: a route, schema or description changed
// in the code without `npm run docs:routes` fails here, so the page and the
// service never disagree.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { ROUTES_FILE, routesReference } from "../scripts/docs-routes.ts";

test("the routes reference is the one the script writes from the OpenAPI document", async () => {
  const written = readFileSync(ROUTES_FILE, "utf8");
  const expected = await routesReference();
  assert.ok(
    written === expected,
    "docs/reference/routes.md differs from the OpenAPI document: run `npm run docs:routes` and commit the result",
  );
});

test("the routes reference names every operation of the document, and the routes settings add", async () => {
  const page = await routesReference();
  for (const heading of [
    "### `POST /auth/token`",
    "### `GET /me`",
    "### `GET /.well-known/openid-configuration`",
    "### `GET /auth/upstream/providers`",
    "### `POST /auth/register`",
  ])
    assert.ok(page.includes(`${heading}\n`), heading);
  assert.match(page, /### `POST \/auth\/register`\n[\s\S]*?\*Served only while `DYNAMIC_CLIENT_REGISTRATION=on`\.\*/);
  assert.doesNotMatch(page.split("### `GET /me`\n")[1]?.split("\n### ")[0] ?? "", /Served only while/);
});
