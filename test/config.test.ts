// loadConfig: defaults, validation with one message naming the setting, and
// the generated signing-secret file on the embedded default.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), "config-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const SECRET = "s".repeat(32);

describe("loadConfig", () => {
  test("defaults to 127.0.0.1:8000, info logs and an SQLite file under ./data", (t) => {
    const cwd = tempDir(t);
    const { config } = loadConfig({ SIGNING_SECRET: SECRET }, cwd);
    assert.equal(config.host, "127.0.0.1");
    assert.equal(config.port, 8000);
    assert.equal(config.logLevel, "info");
    assert.deepEqual(config.database, { kind: "sqlite", path: join(cwd, "data", "users.db"), synchronous: "normal" });
  });

  test("reads HOST, PORT, LOG_LEVEL and the sqlite: forms of DATABASE_URL", (t) => {
    const cwd = tempDir(t);
    const env = {
      HOST: "0.0.0.0",
      PORT: "9000",
      LOG_LEVEL: "WARN",
      SIGNING_SECRET: SECRET,
      DATABASE_URL: "sqlite:db/x.db",
    };
    const { config } = loadConfig(env, cwd);
    assert.equal(config.host, "0.0.0.0");
    assert.equal(config.port, 9000);
    assert.equal(config.logLevel, "warn");
    assert.deepEqual(config.database, { kind: "sqlite", path: join(cwd, "db", "x.db"), synchronous: "normal" });
    assert.deepEqual(loadConfig({ ...env, DATABASE_URL: "sqlite::memory:" }, cwd).config.database, {
      kind: "sqlite",
      path: ":memory:",
      synchronous: "normal",
    });
    assert.deepEqual(
      loadConfig({ ...env, DATABASE_URL: "sqlite:/abs/u.db", SQLITE_SYNCHRONOUS: "FULL" }, cwd).config.database,
      { kind: "sqlite", path: "/abs/u.db", synchronous: "full" },
    );
    const postgres = {
      ...env,
      DATABASE_URL: "postgres://app@db.internal:5432/users",
      DB_POOL_SIZE: "25",
      DB_TIMEOUT_MS: "1500",
    };
    assert.deepEqual(loadConfig(postgres, cwd).config.database, {
      kind: "postgres",
      url: "postgres://app@db.internal:5432/users",
      poolSize: 25,
      timeoutMs: 1500,
    });
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ["PORT", { PORT: "http" }, /^PORT: must be a whole number from 0 to 65535, got "http"$/],
    ["PORT", { PORT: "70000" }, /^PORT: /],
    ["PORT", { PORT: "-1" }, /^PORT: /],
    ["PORT", { PORT: "80.5" }, /^PORT: /],
    ["LOG_LEVEL", { LOG_LEVEL: "loud" }, /^LOG_LEVEL: must be one of/],
    ["DATABASE_URL", { DATABASE_URL: "mysql://root:pw@db/users" }, /^DATABASE_URL: must look like/],
    ["DATABASE_URL", { DATABASE_URL: "postgres://" }, /^DATABASE_URL: postgres:\/\/ needs a host$/],
    ["DB_POOL_SIZE", { DB_POOL_SIZE: "0" }, /^DB_POOL_SIZE: must be a whole number from 1 to 1000/],
    ["SQLITE_SYNCHRONOUS", { SQLITE_SYNCHRONOUS: "off" }, /^SQLITE_SYNCHRONOUS: must be normal or full, got "off"$/],
    [
      "MAX_SESSIONS_PER_USER",
      { MAX_SESSIONS_PER_USER: "0" },
      /^MAX_SESSIONS_PER_USER: must be a whole number from 1 to 10000/,
    ],
    [
      "SIGNING_SECRET",
      { SIGNING_SECRET: "", DATABASE_URL: "postgres://db/users" },
      /^SIGNING_SECRET: is required with PostgreSQL/,
    ],
    ["DATABASE_URL", { DATABASE_URL: "sqlite:" }, /^DATABASE_URL: sqlite: needs a file path/],
    [
      "SIGNING_SECRET",
      { SIGNING_SECRET: "too-short-secret" },
      /^SIGNING_SECRET: SIGNING_SECRET must be at least 32 bytes, got 16$/,
    ],
  ];
  for (const [setting, env, message] of bad) {
    test(`stops with one line naming ${setting} for ${JSON.stringify(env)}`, (t) => {
      const cwd = tempDir(t);
      assert.throws(
        () => loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd),
        (error: unknown) => error instanceof ConfigError && error.setting === setting && message.test(error.message),
      );
    });
  }

  test("never echoes a database URL that may carry a password", (t) => {
    const cwd = tempDir(t);
    assert.throws(
      () => loadConfig({ SIGNING_SECRET: SECRET, DATABASE_URL: "mysql://root:hunter2@db/users" }, cwd),
      (error: unknown) => error instanceof ConfigError && !error.message.includes("hunter2"),
    );
  });

  test("counts the secret's length in bytes, not characters", (t) => {
    const cwd = tempDir(t);
    assert.doesNotThrow(() => loadConfig({ SIGNING_SECRET: "é".repeat(16) }, cwd));
    assert.throws(() => loadConfig({ SIGNING_SECRET: "é".repeat(15) }, cwd), ConfigError);
  });

  test("generates a secret file readable by its owner only when SIGNING_SECRET is unset, and reuses it", (t) => {
    const cwd = tempDir(t);
    const first = loadConfig({}, cwd);
    const file = join(cwd, "data", "signing-secret");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(cwd, "data")).mode & 0o077, 0);
    assert.ok(Buffer.byteLength(first.config.signingSecrets[0]!) >= 32);
    assert.equal(readFileSync(file, "utf8").trim(), first.config.signingSecrets[0]!);
    assert.match(first.notices.join("\n"), /generated a new signing secret/);
    assert.doesNotMatch(first.notices.join("\n"), new RegExp(first.config.signingSecrets[0]!));

    const second = loadConfig({}, cwd);
    assert.equal(second.config.signingSecrets[0], first.config.signingSecrets[0]!);
    assert.match(second.notices.join("\n"), /using the signing secret kept in/);
  });

  test("refuses a secret file that other users can read", (t) => {
    const cwd = tempDir(t);
    loadConfig({}, cwd);
    chmodSync(join(cwd, "data", "signing-secret"), 0o644);
    assert.throws(
      () => loadConfig({}, cwd),
      /^ConfigError: SIGNING_SECRET: the secret file .* is readable by other users/,
    );
  });

  test("refuses a secret file holding fewer than 32 bytes", (t) => {
    const cwd = tempDir(t);
    loadConfig({}, cwd);
    writeFileSync(join(cwd, "data", "signing-secret"), "short\n", { mode: 0o600 });
    assert.throws(() => loadConfig({}, cwd), /SIGNING_SECRET: the secret in .* must be at least 32 bytes/);
  });

  test("prefers SIGNING_SECRET over the file and writes no file then", (t) => {
    const cwd = tempDir(t);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.signingSecrets[0], SECRET);
    assert.throws(() => statSync(join(cwd, "data", "signing-secret")), /ENOENT/);
  });

  test("uses a process-only random secret for an in-memory database", (t) => {
    const cwd = tempDir(t);
    const a = loadConfig({ DATABASE_URL: "sqlite::memory:" }, cwd).config.signingSecrets[0];
    const b = loadConfig({ DATABASE_URL: "sqlite::memory:" }, cwd).config.signingSecrets[0];
    assert.notEqual(a, b);
    assert.throws(() => statSync(join(cwd, "data")), /ENOENT/);
  });

  test("opens sign-up by default and reads SIGNUP_OPEN and the first admin", (t) => {
    const cwd = tempDir(t);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.signupOpen, true);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.firstAdmin, undefined);
    const { config } = loadConfig(
      {
        SIGNING_SECRET: SECRET,
        SIGNUP_OPEN: "false",
        FIRST_ADMIN_EMAIL: "root@example.com",
        FIRST_ADMIN_PASSWORD: " spaced password ",
      },
      cwd,
    );
    assert.equal(config.signupOpen, false);
    assert.deepEqual(config.firstAdmin, { email: "root@example.com", password: " spaced password " });
  });

  test("treats an empty value as unset", (t) => {
    const cwd = tempDir(t);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET, PORT: "", HOST: " " }, cwd).config.port, 8000);
  });

  test("mail and account recovery: defaults beside the database, and every setting read", (t) => {
    const cwd = tempDir(t);
    const { config } = loadConfig({ SIGNING_SECRET: SECRET }, cwd);
    assert.equal(config.publicUrl, "http://127.0.0.1:8000");
    assert.deepEqual(config.mail.transport, { kind: "file", directory: join(cwd, "data", "mail") });
    assert.equal(config.mail.from, "User service <no-reply@localhost>");
    assert.equal(config.accountRecovery.passwordResetTtlSeconds, 1800);
    assert.equal(config.accountRecovery.verificationRequired, false);
    assert.equal(config.accountRecovery.linkBaseUrl, "http://127.0.0.1:8000");
    assert.equal(config.passwordListCheck, true);

    const custom = loadConfig(
      {
        SIGNING_SECRET: SECRET,
        PUBLIC_URL: "https://id.example.com/",
        MAIL_URL: "smtps://mailer:s3cret@smtp.example.com:465",
        EMAIL_VERIFICATION_REQUIRED: "true",
        PASSWORD_RESET_TTL_SECONDS: "900",
        ACCOUNT_LINK_BASE_URL: "https://app.example.com/account",
        PASSWORD_LIST_CHECK: "off",
        MAIL_REQUEST_LIMIT_PER_EMAIL: "5",
      },
      cwd,
    ).config;
    assert.equal(custom.publicUrl, "https://id.example.com", "no trailing slash");
    assert.equal(custom.mail.from, "User service <no-reply@id.example.com>");
    assert.deepEqual(custom.mail.transport, { kind: "smtp", url: "smtps://mailer:s3cret@smtp.example.com:465" });
    assert.equal(custom.accountRecovery.verificationRequired, true);
    assert.equal(custom.accountRecovery.passwordResetTtlSeconds, 900);
    assert.equal(custom.accountRecovery.linkBaseUrl, "https://app.example.com/account");
    assert.equal(custom.passwordListCheck, false);
    assert.equal(custom.rateLimit.mailRequestsPerEmail, 5);
    assert.deepEqual(loadConfig({ SIGNING_SECRET: SECRET, MAIL_URL: "file:outbox" }, cwd).config.mail.transport, {
      kind: "file",
      directory: join(cwd, "outbox"),
    });
  });

  const invalid: [string, Record<string, string>][] = [
    ["PUBLIC_URL", { PUBLIC_URL: "id.example.com" }],
    ["PUBLIC_URL", { PUBLIC_URL: "ftp://id.example.com" }],
    ["PUBLIC_URL", { PUBLIC_URL: "https://id.example.com/?next=1" }],
    ["MAIL_URL", { MAIL_URL: "http://smtp.example.com" }],
    ["MAIL_URL", { MAIL_URL: "smtp://" }],
    ["MAIL_FROM", { MAIL_FROM: "not an address" }],
    ["EMAIL_VERIFICATION_REQUIRED", { EMAIL_VERIFICATION_REQUIRED: "sometimes" }],
    ["PASSWORD_RESET_TTL_SECONDS", { PASSWORD_RESET_TTL_SECONDS: "5" }],
    ["ACCOUNT_LINK_BASE_URL", { ACCOUNT_LINK_BASE_URL: "/account" }],
    ["PASSWORD_LIST_CHECK", { PASSWORD_LIST_CHECK: "maybe" }],
    ["MAIL_MAX_ATTEMPTS", { MAIL_MAX_ATTEMPTS: "0" }],
    ["FIRST_ADMIN_PASSWORD", { FIRST_ADMIN_EMAIL: "root@example.com", FIRST_ADMIN_PASSWORD: "password123" }],
  ];
  for (const [name, env] of invalid) {
    test(`refuses ${name}=${Object.values(env).at(-1)} with one line naming it`, (t) => {
      const cwd = tempDir(t);
      assert.throws(
        () => loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd),
        (error: unknown) => error instanceof ConfigError && error.setting === name,
      );
    });
  }

  test("never echoes a MAIL_URL, which may carry the SMTP password", (t) => {
    const cwd = tempDir(t);
    assert.throws(
      () => loadConfig({ SIGNING_SECRET: SECRET, MAIL_URL: "smtpx://user:hunter2@host" }, cwd),
      (error: unknown) => error instanceof ConfigError && !error.message.includes("hunter2"),
    );
  });
});
