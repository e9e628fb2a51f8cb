// The OpenAPI document passes Redocly CLI's recommended rules (errors fail;
// warnings are printed). Telemetry and update checks are off: the linter
// only reads the file it is given.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { buildTestApp } from "./helpers.ts";
import { scratchDir } from "./process.ts";

const REDOCLY = resolve(import.meta.dirname, "../node_modules/@redocly/cli/bin/cli.js");

describe("OpenAPI lint", () => {
  test("the document passes Redocly CLI's recommended ruleset with no errors", async (t) => {
    const { app } = await buildTestApp(t);
    const document = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    const file = join(scratchDir(t), "openapi.json");
    writeFileSync(file, JSON.stringify(document, null, 2));
    const result = spawnSync(process.execPath, [REDOCLY, "lint", file, "--format=stylish"], {
      encoding: "utf8",
      timeout: 60_000,
      env: {
        PATH: process.env.PATH ?? "",
        REDOCLY_TELEMETRY: "off",
        REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
        NO_COLOR: "1",
      },
    });
    const output = `${result.stdout}${result.stderr}`;
    assert.equal(result.status, 0, output);
    assert.doesNotMatch(output, /\berror\b/, output);
  });
});
