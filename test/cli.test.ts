// The operator's command line: creating a user with a piped password, and
// clear failures with non-zero exit codes.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import bcrypt from "bcryptjs";
import { parsePrivateKey } from "../src/auth/keys.ts";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { createRateLimits, MemoryCounterStore } from "../src/auth/rate-limits.ts";
import { createSecondFactors } from "../src/auth/second-factors.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { passwords, testConfig } from "./helpers.ts";
import { CLI, run, scratchDir, startService } from "./process.ts";

const PASSWORD = "correct horse battery";

describe("npm run cli", () => {
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
    ["users list with an argument", ["users", "list", "everyone"], "", 2, /^error: users list takes no arguments/],
    [
      "secret generate with an argument",
      ["secret", "generate", "now"],
      "",
      2,
      /^error: unknown command: secret generate now/,
    ],
    [
      "users deactivate without an e-mail",
      ["users", "deactivate"],
      "",
      2,
      /^error: users deactivate takes exactly one e-mail/,
    ],
    [
      "users deactivate of nobody",
      ["users", "deactivate", "nobody@example.com"],
      "",
      1,
      /^error: no user with the e-mail nobody@example\.com$/,
    ],
    ["serve with an unusable setting", ["serve"], "", 2, /^configuration error: PORT: /],
    [
      "a common password",
      ["users", "create", "d@example.com"],
      "password123",
      1,
      /^error: This password is on a list of common or breached passwords; choose another one$/,
    ],
    [
      "mail list with a bad status",
      ["mail", "list", "--status", "lost"],
      "",
      2,
      /^error: mail list takes only --status/,
    ],
    ["mail retry without an id", ["mail", "retry"], "", 2, /^error: mail retry takes one message id or --all-failed/],
    [
      "mail retry of an unknown id",
      ["mail", "retry", "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
      "",
      1,
      /^error: no failed message with the id 0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f$/,
    ],
  ];
  for (const [name, args, input, code, message] of failures) {
    test(`fails with exit code ${code} and one clear line for ${name}`, async (t) => {
      const cwd = scratchDir(t);
      if (name === "a taken e-mail") await run([CLI, "users", "create", "a@example.com"], { cwd, input: PASSWORD });
      const env: Record<string, string> = name === "serve with an unusable setting" ? { PORT: "eighty" } : {};
      const result = await run([CLI, ...args], { cwd, input, env });
      assert.equal(result.code, code);
      assert.match(result.stderr.trimEnd(), message);
      assert.ok(!result.stderr.includes(PASSWORD) || input !== PASSWORD);
    });
  }

  test("users import brings bcrypt and Argon2 hashes over; those users log in with their old passwords", async (t) => {
    const cwd = scratchDir(t);
    const bcryptHash = bcrypt.hashSync("old bcrypt password", 4);
    const argonHash = await createPasswordHasher({ memoryKib: 8_192, timeCost: 1, parallelism: 1 }).hash(
      "old argon password",
    );
    const lines = [
      JSON.stringify({ email: "Grace@Example.com", hash: bcryptHash, full_name: "Grace Hopper" }),
      JSON.stringify({ email: "alan@example.com", hash: argonHash }),
      "",
      JSON.stringify({ email: "grace@example.com", hash: bcryptHash }),
      "not json",
      JSON.stringify({ email: "plain@example.com", hash: "hunter2" }),
      JSON.stringify({ email: "nope", hash: bcryptHash }),
    ];
    writeFileSync(join(cwd, "users.jsonl"), `${lines.join("\n")}\n`);
    const result = await run([CLI, "users", "import", "users.jsonl"], { cwd });
    assert.equal(result.code, 1, "bad lines make the exit code 1");
    assert.equal(result.stdout, "imported 2, skipped 1 existing, 3 invalid\n");
    assert.match(result.stderr, /^line 5: not a JSON object$/m);
    assert.match(result.stderr, /^line 6: hash is missing or not a bcrypt or Argon2 hash$/m);
    assert.match(result.stderr, /^line 7: email is missing or invalid$/m);
    assert.ok(!result.stderr.includes("hunter2") && !result.stderr.includes(bcryptHash), "hashes are never echoed");

    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    const grace = await store.findByEmail("grace@example.com");
    assert.equal(grace?.fullName, "Grace Hopper");
    assert.ok(grace && (await passwords.verify(grace.hashedPassword, "old bcrypt password")));
    const alan = await store.findByEmail("alan@example.com");
    assert.ok(alan && (await passwords.verify(alan.hashedPassword, "old argon password")));
    assert.ok(passwords.needsRehash(alan.hashedPassword), "upgraded at first login, not at import");
  });

  test("users import fails with exit code 1 for a file it cannot read", async (t) => {
    const result = await run([CLI, "users", "import", "missing.jsonl"], { cwd: scratchDir(t) });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, "error: cannot read missing.jsonl: ENOENT\n");
  });

  test("migrate creates the schema on a new database and is a no-op the second time", async (t) => {
    const cwd = scratchDir(t);
    for (let i = 0; i < 2; i++) {
      const result = await run([CLI, "migrate"], { cwd });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^database schema is up to date \(version \d+\)\n$/);
    }
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    assert.equal(await store.countActiveAdmins(), 0);
  });

  test("migrate fails with exit code 1 and one line when the database cannot be reached", async (t) => {
    const result = await run([CLI, "migrate"], {
      cwd: scratchDir(t),
      env: {
        DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
        SIGNING_SECRET: "x".repeat(32),
        MFA_ENCRYPTION_KEY: "m".repeat(32),
        DB_TIMEOUT_MS: "500",
      },
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^error: cannot migrate the database named by DATABASE_URL: /);
    assert.equal(result.stderr.trim().split("\n").length, 1);
  });

  test("users list prints every user as tab-separated lines", async (t) => {
    const cwd = scratchDir(t);
    await run([CLI, "users", "create", "--admin", "root@example.com"], { cwd, input: PASSWORD });
    await run([CLI, "users", "create", "ada@example.com"], { cwd, input: PASSWORD });
    const result = await run([CLI, "users", "list"], { cwd });
    assert.equal(result.code, 0, result.stderr);
    const lines = result.stdout.trim().split("\n");
    assert.equal(lines[0], "id\temail\tadmin\tactive\tcreated_at");
    assert.match(lines[1] ?? "", /^[0-9a-f-]{36}\troot@example\.com\ttrue\ttrue\t\d{4}-/);
    assert.match(lines[2] ?? "", /\tada@example\.com\tfalse\ttrue\t/);
    assert.ok(!result.stdout.includes("argon2"), "never a hash");
  });

  test("users set-password replaces the hash and ends the user's sessions; unknown e-mails fail with exit 1", async (t) => {
    const cwd = scratchDir(t);
    await run([CLI, "users", "create", "ada@example.com"], { cwd, input: PASSWORD });
    const result = await run([CLI, "users", "set-password", "ADA@example.com"], {
      cwd,
      input: "a brand new passphrase\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "password set for ada@example.com; its sessions have ended\n");
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    const ada = await store.findByEmail("ada@example.com");
    assert.ok(ada && (await passwords.verify(ada.hashedPassword, "a brand new passphrase")));
    assert.ok(ada?.credentialsChangedAt, "older access tokens stop working");
    // The security notification, queued for the service's sender, naming no operator device or address.
    const [notice, ...others] = await store.listMail({ limit: 10 });
    assert.deepEqual([notice?.kind, notice?.recipient, others], ["password_changed", "ada@example.com", []]);
    // Its language (issue 37): the account chose none and an operator's command asks for none, so DEFAULT_LOCALE.
    const payload = JSON.parse(notice?.payload ?? "{}");
    assert.deepEqual(Object.keys(payload), ["at", "device", "address", "byAdmin", "locale"]);
    assert.equal(payload.locale, "en");
    const unknown = await run([CLI, "users", "set-password", "nobody@example.com"], {
      cwd,
      input: "a brand new passphrase\n",
    });
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, "error: no user with the e-mail nobody@example.com\n");
    const short = await run([CLI, "users", "set-password", "ada@example.com"], { cwd, input: "short\n" });
    assert.equal(short.code, 1);
  });

  test("users deactivate deactivates and ends sessions, but refuses the last active admin", async (t) => {
    const cwd = scratchDir(t);
    await run([CLI, "users", "create", "--admin", "root@example.com"], { cwd, input: PASSWORD });
    await run([CLI, "users", "create", "ada@example.com"], { cwd, input: PASSWORD });
    const result = await run([CLI, "users", "deactivate", "ada@example.com"], { cwd });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "deactivated ada@example.com; its sessions have ended\n");
    const lastAdmin = await run([CLI, "users", "deactivate", "root@example.com"], { cwd });
    assert.equal(lastAdmin.code, 1);
    assert.equal(lastAdmin.stderr, "error: root@example.com is the last active admin\n");
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    assert.equal((await store.findByEmail("ada@example.com"))?.isActive, false);
    assert.equal((await store.findByEmail("root@example.com"))?.isActive, true);
    const notices = (await store.listMail({ limit: 10 })).map((message) => [message.kind, message.recipient]);
    assert.deepEqual(notices, [["account_deactivated", "ada@example.com"]], "the refused one queued nothing");
  });

  test("mail list shows the outbox with failed messages visible; mail retry queues them again", async (t) => {
    const cwd = scratchDir(t);
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    const message = { kind: "email_changed" as const, userId: null, payload: "{}", messageDomain: "example.com" };
    await store.enqueueMail({ ...message, recipient: "gone@example.com" });
    await store.enqueueMail({ ...message, recipient: "fine@example.com" });
    const now = new Date().toISOString();
    const [first, second] = await store.claimMail("test", now, new Date(Date.now() + 60_000).toISOString(), 10);
    await store.completeMail(first!.id, "test", { status: "failed", error: "EENVELOPE: 550 no such mailbox" });
    await store.completeMail(second!.id, "test", { status: "sent", at: now });
    await store.close();

    const failed = await run([CLI, "mail", "list", "--status", "failed"], { cwd });
    assert.equal(failed.code, 0, failed.stderr);
    const lines = failed.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2);
    assert.match(
      lines[1]!,
      new RegExp(`^${first!.id}\tfailed\temail_changed\tgone@example.com\t1\t.*550 no such mailbox$`),
    );
    const all = await run([CLI, "mail", "list"], { cwd });
    assert.equal(all.stdout.trimEnd().split("\n").length, 3);

    const retried = await run([CLI, "mail", "retry", "--all-failed"], { cwd });
    assert.equal(retried.code, 0, retried.stderr);
    assert.equal(retried.stdout, "1 failed message queued again\n");
    const pending = await run([CLI, "mail", "list", "--status", "pending"], { cwd });
    assert.match(pending.stdout, /\tpending\temail_changed\tgone@example\.com\t0\t/);
  });

  test("mfa reseal moves every TOTP secret to the first MFA_ENCRYPTION_KEY; one no key opens is exit 1", async (t) => {
    const cwd = scratchDir(t);
    const [older, newer, other] = ["older", "newer", "other"].map((name) => `${name}-mfa-key-of-at-least-32-bytes!!`);
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
    const limits = createRateLimits({ ...testConfig().rateLimit, enabled: false }, new MemoryCounterStore());
    const factors = createSecondFactors({
      store,
      keys: [older!],
      signingMaterial: [],
      issuer: "x",
      limits,
      clock: Date.now,
    });
    await factors.enrolTotp(user);
    const sealed = (await store.listTotpSecrets())[0]!.sealedSecret;
    await store.close();

    const moved = await run([CLI, "mfa", "reseal"], { cwd, env: { MFA_ENCRYPTION_KEY: `${newer},${older}` } });
    assert.equal(moved.code, 0, moved.stderr);
    assert.equal(moved.stdout, "1 TOTP secret(s) sealed under the first MFA_ENCRYPTION_KEY\n");
    const reopened = openSqliteStore(join(cwd, "data", "users.db"));
    assert.notEqual((await reopened.listTotpSecrets())[0]!.sealedSecret, sealed);
    await reopened.close();
    assert.equal((await run([CLI, "mfa", "reseal"], { cwd, env: { MFA_ENCRYPTION_KEY: newer! } })).code, 0);

    const lost = await run([CLI, "mfa", "reseal"], { cwd, env: { MFA_ENCRYPTION_KEY: other! } });
    assert.equal(lost.code, 1);
    assert.match(lost.stderr, /^error: 1 TOTP secret\(s\) open with none of the keys in MFA_ENCRYPTION_KEY/);
    assert.ok(!lost.stderr.includes(other!) && !lost.stdout.includes(newer!));
  });

  test("secret generate prints a fresh 256-bit base64url secret each time", async (t) => {
    const cwd = scratchDir(t);
    const first = await run([CLI, "secret", "generate"], { cwd });
    const second = await run([CLI, "secret", "generate"], { cwd });
    assert.equal(first.code, 0);
    assert.match(first.stdout, /^[A-Za-z0-9_-]{43}\n$/);
    assert.notEqual(first.stdout, second.stdout);
  });

  test("key generate writes an owner-only private key for SIGNING_KEY_FILE, prints its kid, never overwrites", async (t) => {
    const cwd = scratchDir(t);
    for (const algorithm of ["EdDSA", "ES256"] as const) {
      const file = `${algorithm}.pem`;
      const made = await run([CLI, "key", "generate", algorithm, file], { cwd });
      assert.equal(made.code, 0, made.stderr);
      assert.equal(statSync(join(cwd, file)).mode & 0o777, 0o600);
      const pem = readFileSync(join(cwd, file), "utf8");
      assert.equal(made.stdout, `${parsePrivateKey(algorithm, pem).kid}\n`);
      assert.doesNotMatch(made.stdout, /PRIVATE/);
      const again = await run([CLI, "key", "generate", algorithm, file], { cwd });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^error: cannot write .*: EEXIST/);
      assert.equal(readFileSync(join(cwd, file), "utf8"), pem, "the existing key is untouched");
    }
    const usage = await run([CLI, "key", "generate", "RS256", "x.pem"], { cwd });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^error: key generate takes an algorithm \(EdDSA or ES256\) and a file/);
  });

  test("serve starts the service, which answers and stops cleanly on SIGTERM", async (t) => {
    const service = await startService(scratchDir(t), {}, [CLI, "serve"]);
    t.after(() => service.stop());
    assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200);
    assert.equal(await service.stop(), 0);
  });

  test("prints its usage with --help and exits 0", async (t) => {
    const result = await run([CLI, "--help"], { cwd: scratchDir(t) });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /users create <email>/);
  });
});
