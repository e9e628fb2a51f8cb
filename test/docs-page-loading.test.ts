// Swagger UI's plugin (with the static-file server and YAML library under it) is loaded on the first
// request for /docs, not when the service starts (src/operations/docs.ts). A file of its own: node --test
// runs each file in a fresh process, so nothing else here has asked for /docs before this test looks.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { buildTestApp } from "./helpers.ts";

test("loads Swagger UI on the first request for /docs, not at start; HEAD and 404 as before", async (t) => {
  const loaded = () =>
    Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes("@fastify/swagger-ui"));
  const { app } = await buildTestApp(t);
  assert.equal(loaded(), false, "Swagger UI was loaded at start");
  const [page, again] = await Promise.all([
    app.inject({ method: "GET", url: "/docs/" }),
    app.inject({ method: "GET", url: "/docs/" }),
  ]);
  assert.equal(loaded(), true);
  assert.equal(page.statusCode, 200);
  assert.equal(again.body, page.body);
  assert.match(String(page.headers["content-security-policy"]), /^default-src 'self'/);
  const css = await app.inject({ method: "GET", url: "/docs/static/swagger-ui.css" });
  const head = await app.inject({ method: "HEAD", url: "/docs/static/swagger-ui.css" });
  assert.equal(head.statusCode, 200);
  assert.equal(head.body, "");
  assert.equal(head.headers["content-length"], css.headers["content-length"]);
  const unchanged = await app.inject({
    method: "GET",
    url: "/docs/static/swagger-ui.css",
    headers: { "if-none-match": String(css.headers.etag) },
  });
  assert.equal(unchanged.statusCode, 304);
  for (const url of ["/docs/static/nope.js", "/docs/nope", "/docs/static/%2e%2e/%2e%2e/package.json"]) {
    const missing = await app.inject({ method: "GET", url });
    assert.equal(missing.statusCode, 404, url);
    assert.deepEqual(missing.json(), { detail: "Not Found" }, url);
  }
});
