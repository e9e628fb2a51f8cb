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

  test("connection settings: timeouts, keep-alive, backlog and drain delay have safe defaults and can be set", (t) => {
    const cwd = tempDir(t);
    assert.deepEqual(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.connections, {
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      checkIntervalMs: 1_000,
      listenBacklog: 4096,
      shutdownDelayMs: 5_000,
    });
    const env = {
      SIGNING_SECRET: SECRET,
      HEADERS_TIMEOUT_MS: "1000",
      REQUEST_TIMEOUT_MS: "4000",
      KEEP_ALIVE_TIMEOUT_MS: "5000",
      LISTEN_BACKLOG: "1024",
      SHUTDOWN_DELAY_MS: "0",
    };
    assert.deepEqual(loadConfig(env, cwd).config.connections, {
      headersTimeoutMs: 1000,
      requestTimeoutMs: 4000,
      keepAliveTimeoutMs: 5000,
      checkIntervalMs: 500,
      listenBacklog: 1024,
      shutdownDelayMs: 0,
    });
    // The default delay leaves at least half of a shorter shutdown bound to the requests in flight.
    const short = loadConfig({ SIGNING_SECRET: SECRET, SHUTDOWN_TIMEOUT_MS: "3000" }, cwd).config;
    assert.equal(short.connections.shutdownDelayMs, 1500);
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
    ["HEADERS_TIMEOUT_MS", { HEADERS_TIMEOUT_MS: "0" }, /^HEADERS_TIMEOUT_MS: must be a whole number from 500/],
    [
      "REQUEST_TIMEOUT_MS",
      { HEADERS_TIMEOUT_MS: "20000", REQUEST_TIMEOUT_MS: "10000" },
      /^REQUEST_TIMEOUT_MS: must be at least HEADERS_TIMEOUT_MS \(20000\), got "10000"$/,
    ],
    ["KEEP_ALIVE_TIMEOUT_MS", { KEEP_ALIVE_TIMEOUT_MS: "5s" }, /^KEEP_ALIVE_TIMEOUT_MS: must be a whole number/],
    ["LISTEN_BACKLOG", { LISTEN_BACKLOG: "0" }, /^LISTEN_BACKLOG: must be a whole number from 1 to 65535/],
    [
      "SHUTDOWN_DELAY_MS",
      { SHUTDOWN_DELAY_MS: "10000" },
      /^SHUTDOWN_DELAY_MS: must be less than SHUTDOWN_TIMEOUT_MS \(10000\)/,
    ],
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
});
