// The import checker (scripts/check-imports.ts) that `npm test` runs before
// the tests: it passes on src/ as it is, and it fails, naming the modules in
// order, on a circle of value imports and on one of type imports alike.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";

const SCRIPT = resolve(import.meta.dirname, "../scripts/check-imports.ts");

function check(root?: string) {
  const result = spawnSync(process.execPath, [SCRIPT, ...(root ? [root] : [])], { encoding: "utf8" });
  return { status: result.status, output: result.stdout + result.stderr };
}

function tree(t: { after(fn: () => void): void }, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "import-circles-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  return root;
}

describe("the import checker", () => {
  test("finds no circle in src/", () => {
    const { status, output } = check();
    assert.equal(status, 0, output);
    assert.match(output, /No import circles/);
  });

  test("fails on a circle of imports and prints it", (t) => {
    const root = tree(t, {
      "a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "b.ts": 'import { c } from "./c.ts";\nexport const b = c;\n',
      "c.ts": '// import { a } from "./a.ts" is only a comment\nimport { a } from "./a.ts";\nexport const c = a;\n',
      "d.ts": 'import { a } from "./a.ts";\nimport fastify from "fastify";\nexport const d = [a, fastify];\n',
    });
    const { status, output } = check(root);
    assert.equal(status, 1, output);
    assert.match(output, /a\.ts -> b\.ts -> c\.ts -> a\.ts/);
    assert.doesNotMatch(output, /d\.ts/);
  });

  test("counts type-only imports and re-exports", (t) => {
    const root = tree(t, {
      "a.ts": 'import type { B } from "./b.ts";\nexport type A = { b?: B };\n',
      "b.ts": 'export type { A as B } from "./a.ts";\n',
    });
    const { status, output } = check(root);
    assert.equal(status, 1, output);
    assert.match(output, /a\.ts -> b\.ts -> a\.ts/);
  });
});
