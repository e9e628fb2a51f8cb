// The README's typed-client snippet, as a reader would use it: types are
// generated from the live service's /openapi.json with the openapi-typescript
// CLI, the snippet is copied out of README.md verbatim, type-checked with tsc
// in strict mode, and run against the live service, which must see its calls
// take effect. A README edit that breaks the snippet, or an OpenAPI change that
// breaks its types, fails here.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { buildApp } from "../src/app.ts";
import { openTestStore, testConfig } from "./helpers.ts";
import { run } from "./process.ts";

const ROOT = resolve(import.meta.dirname, "..");
/** Inside the project, so the snippet's imports resolve from its node_modules as a reader's would. */
const WORK = join(ROOT, "test-artifacts", `typed-client-${process.pid}`);

function snippet(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const match = /<!-- typed-client:start[^>]*-->\s*```ts\n([\s\S]*?)```\s*<!-- typed-client:end -->/.exec(readme);
  assert.ok(match, "README.md has the typed-client snippet between its markers");
  return match[1] as string;
}

/** Runs this Node.js in the work folder; the answer's output is stdout and stderr together. */
async function node(args: string[], env: Record<string, string> = {}) {
  const { code, stdout, stderr } = await run(args, { cwd: WORK, env });
  return { code, output: stdout + stderr };
}

test("the README's typed client type-checks against generated types and works against a live service", async (t) => {
  mkdirSync(WORK, { recursive: true });
  t.after(() => rmSync(WORK, { recursive: true, force: true }));
  const store = await openTestStore(t);
  const app = await buildApp({ config: testConfig(), store });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  const baseUrl = await app.listen({ host: "127.0.0.1", port: 0 });

  // The README's command: npx openapi-typescript <url>/openapi.json -o user-service.ts
  const generate = await node([
    join(ROOT, "node_modules/openapi-typescript/bin/cli.js"),
    `${baseUrl}/openapi.json`,
    "-o",
    "user-service.ts",
  ]);
  assert.equal(generate.code, 0, generate.output);
  writeFileSync(join(WORK, "client.ts"), snippet());

  const typecheck = await node([
    join(ROOT, "node_modules/typescript/bin/tsc"),
    "--noEmit",
    "--strict",
    "--noUncheckedIndexedAccess",
    "--target",
    "es2024",
    "--module",
    "nodenext",
    "--moduleResolution",
    "nodenext",
    "--allowImportingTsExtensions",
    "--skipLibCheck",
    "--types",
    "node",
    "--typeRoots",
    join(ROOT, "node_modules/@types"),
    "client.ts",
  ]);
  assert.equal(typecheck.code, 0, `tsc:\n${typecheck.output}`);

  const client = await node(["client.ts"], { USER_SERVICE_URL: baseUrl });
  assert.equal(client.code, 0, client.output);
  assert.match(client.output, /^[0-9a-f-]{36} grace@example\.com Rear Admiral Hopper token valid for 1800 s\n$/);
  const grace = await store.findByEmail("grace@example.com");
  assert.equal(grace?.fullName, "Rear Admiral Hopper", "the calls took effect in the service");
});
