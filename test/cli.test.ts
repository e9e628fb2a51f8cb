// The operator's command line: creating a user with a piped password, and
// clear failures with non-zero exit codes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { passwords } from "./helpers.ts";
import { CLI, run, scratchDir } from "./process.ts";

const PASSWORD = "correct horse battery";

describe("npm run cli -- users create", () => {
  test("creates a user from an e-mail argument and a password piped on standard input", async (t) => {
    const cwd = scratchDir(t);
    const result = await run([CLI, "users", "create", " Grace@Example.com"], { cwd, input: `${PASSWORD}\n` });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^created user grace@example\.com \(id [0-9a-f-]{36}\)\n$/);
    assert.ok(!result.stdout.includes(PASSWORD));
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    const user = await store.findByEmail("grace@example.com");
    assert.ok(user && (await passwords.verify(user.hashedPassword, PASSWORD)));
  });

  test("creates an admin with --admin", async (t) => {
    const cwd = scratchDir(t);
    const result = await run([CLI, "users", "create", "--admin", "root@example.com"], { cwd, input: PASSWORD });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^created admin root@example\.com/);
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    assert.equal((await store.findByEmail("root@example.com"))?.isAdmin, true);
  });

  test("uses the DATABASE_URL of the environment", async (t) => {
    const cwd = scratchDir(t);
    const result = await run([CLI, "users", "create", "a@example.com"], {
      cwd,
      input: PASSWORD,
      env: { DATABASE_URL: "sqlite:other.db" },
    });
    assert.equal(result.code, 0, result.stderr);
    const store = openSqliteStore(join(cwd, "other.db"));
    t.after(() => store.close());
    assert.ok(await store.findByEmail("a@example.com"));
  });

  const failures: [string, string[], string, number, RegExp][] = [
    [
      "a taken e-mail",
      ["users", "create", "a@example.com"],
      PASSWORD,
      1,
      /^error: a user with the e-mail a@example\.com already exists$/,
    ],
    [
      "a short password",
      ["users", "create", "b@example.com"],
      "short",
      1,
      /^error: password must not have fewer than 8 characters$/,
    ],
    ["an invalid e-mail", ["users", "create", "not-an-email"], PASSWORD, 1, /^error: email must match format "email"$/],
    [
      "no password on standard input",
      ["users", "create", "c@example.com"],
      "",
      1,
      /^error: no password on standard input$/,
    ],
    ["a missing e-mail", ["users", "create"], PASSWORD, 2, /^error: users create takes exactly one e-mail/],
    ["an unknown option", ["users", "create", "x@example.com", "--root"], PASSWORD, 2, /^error: unknown option --root/],
    ["an unknown command", ["users", "frobnicate"], "", 2, /^error: unknown command: users frobnicate/],
  ];
  for (const [name, args, input, code, message] of failures) {
    test(`fails with exit code ${code} and one clear line for ${name}`, async (t) => {
      const cwd = scratchDir(t);
      if (name === "a taken e-mail") await run([CLI, "users", "create", "a@example.com"], { cwd, input: PASSWORD });
      const result = await run([CLI, ...args], { cwd, input });
      assert.equal(result.code, code);
      assert.match(result.stderr.trimEnd(), message);
      assert.ok(!result.stderr.includes(PASSWORD) || input !== PASSWORD);
    });
  }

  test("prints its usage with --help and exits 0", async (t) => {
    const result = await run([CLI, "--help"], { cwd: scratchDir(t) });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /users create <email>/);
  });
});
