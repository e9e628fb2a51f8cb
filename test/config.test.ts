// loadConfig: defaults, validation with one message naming the setting, and
// the generated signing-secret file on the embedded default.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { generatePrivateKeyPem } from "../src/auth/keys.ts";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";
import { NOTICE_KINDS } from "../src/store/store.ts";

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
      MFA_ENCRYPTION_KEY: "a-second-factor-key-of-at-least-32-bytes",
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

  test("the password-hash queue holds 100 turns per core unless PASSWORD_HASH_QUEUE_LIMIT says otherwise", (t) => {
    const cwd = tempDir(t);
    const limit = (env: Record<string, string>) =>
      loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd).config.passwordHashQueueLimit;
    assert.equal(limit({}), 100 * availableParallelism());
    assert.equal(limit({ PASSWORD_HASH_QUEUE_LIMIT: "" }), 100 * availableParallelism());
    assert.equal(limit({ PASSWORD_HASH_QUEUE_LIMIT: "0" }), 0);
    assert.equal(limit({ PASSWORD_HASH_QUEUE_LIMIT: "5000" }), 5000);
  });

  test("webhooks: private addresses refused, a 10-second deadline and a day's grace unless set", (t) => {
    const cwd = tempDir(t);
    const webhooks = (env: Record<string, string>) =>
      loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd).config.webhooks;
    assert.deepEqual(webhooks({}), {
      refusePrivateAddresses: true,
      timeoutMs: 10_000,
      secretGraceSeconds: 86_400,
      pollIntervalMs: 1000,
    });
    assert.deepEqual(
      webhooks({
        WEBHOOK_REFUSE_PRIVATE_ADDRESSES: "false",
        WEBHOOK_TIMEOUT_MS: "2500",
        WEBHOOK_SECRET_GRACE_SECONDS: "0",
      }),
      { refusePrivateAddresses: false, timeoutMs: 2500, secretGraceSeconds: 0, pollIntervalMs: 1000 },
    );
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ["PORT", { PORT: "http" }, /^PORT: must be a whole number from 0 to 65535, got "http"$/],
    [
      "SECURITY_NOTIFICATIONS",
      { SECURITY_NOTIFICATIONS: "password_changed, lunch" },
      /^SECURITY_NOTIFICATIONS: must be "all", "none" or a comma list of password_changed, .*account_deactivated; got "lunch"$/,
    ],
    ["SECURITY_NOTIFICATIONS", { SECURITY_NOTIFICATIONS: "new_device,,passkey_added" }, /got ""$/],
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
    [
      "PASSWORD_HASH_QUEUE_LIMIT",
      { PASSWORD_HASH_QUEUE_LIMIT: "-1" },
      /^PASSWORD_HASH_QUEUE_LIMIT: must be a whole number from 0 to 100000, got "-1"$/,
    ],
    ["PASSWORD_HASH_QUEUE_LIMIT", { PASSWORD_HASH_QUEUE_LIMIT: "lots" }, /^PASSWORD_HASH_QUEUE_LIMIT: must be/],
    ["PASSWORD_HASH_QUEUE_LIMIT", { PASSWORD_HASH_QUEUE_LIMIT: "100001" }, /^PASSWORD_HASH_QUEUE_LIMIT: must be/],
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
    assert.equal(config.publicUrl, undefined, "unset: links are built on the listen address");
    assert.deepEqual(config.mail.transport, { kind: "file", directory: join(cwd, "data", "mail") });
    assert.equal(config.mail.from, "User service <no-reply@localhost>");
    assert.equal(config.accountRecovery.passwordResetTtlSeconds, 1800);
    assert.equal(config.accountRecovery.verificationRequired, false);
    assert.equal(config.accountRecovery.linkBaseUrl, "http://127.0.0.1:8000");
    assert.equal(config.passwordListCheck, true);
    assert.deepEqual(config.securityNotifications, new Set(NOTICE_KINDS), "every security notification by default");
    const notices = (value: string) =>
      loadConfig({ SIGNING_SECRET: SECRET, SECURITY_NOTIFICATIONS: value }, cwd).config.securityNotifications;
    assert.deepEqual(notices("NONE"), new Set());
    assert.deepEqual(notices("all"), new Set(NOTICE_KINDS));
    assert.deepEqual(notices(" new_device , password_changed"), new Set(["new_device", "password_changed"]));

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
    ["WEBHOOK_REFUSE_PRIVATE_ADDRESSES", { WEBHOOK_REFUSE_PRIVATE_ADDRESSES: "in production" }],
    ["WEBHOOK_TIMEOUT_MS", { WEBHOOK_TIMEOUT_MS: "10" }],
    ["WEBHOOK_TIMEOUT_MS", { WEBHOOK_TIMEOUT_MS: "600000" }],
    ["WEBHOOK_SECRET_GRACE_SECONDS", { WEBHOOK_SECRET_GRACE_SECONDS: "-1" }],
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
  test("signs with HS256 by default; SIGNING_ALGORITHM picks EdDSA or ES256, read from SIGNING_KEY_FILE (first signs)", (t) => {
    const cwd = tempDir(t);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.signingAlgorithm, "HS256");
    const [a, b] = [generatePrivateKeyPem("ES256"), generatePrivateKeyPem("ES256")];
    writeFileSync(join(cwd, "a.pem"), a, { mode: 0o600 });
    writeFileSync(join(cwd, "b.pem"), b, { mode: 0o600 });
    const { config } = loadConfig({ SIGNING_ALGORITHM: "es256", SIGNING_KEY_FILE: "b.pem, a.pem" }, cwd);
    assert.equal(config.signingAlgorithm, "ES256");
    assert.deepEqual(config.signingKeys, [b, a]);
    assert.deepEqual(config.signingSecrets, []);
  });

  test("generates an owner-only private key beside the database when SIGNING_KEY_FILE is unset, and reuses it", (t) => {
    const cwd = tempDir(t);
    const first = loadConfig({ SIGNING_ALGORITHM: "EdDSA" }, cwd);
    const file = join(cwd, "data", "signing-key-eddsa.pem");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(readFileSync(file, "utf8"), first.config.signingKeys[0]);
    assert.match(first.notices.join("\n"), /generated a new EdDSA key/);
    assert.doesNotMatch(first.notices.join("\n"), /PRIVATE KEY/);
    assert.deepEqual(loadConfig({ SIGNING_ALGORITHM: "EdDSA" }, cwd).config.signingKeys, first.config.signingKeys);
    assert.throws(() => statSync(join(cwd, "data", "signing-secret")), /ENOENT/, "no HS256 secret is made");
    chmodSync(file, 0o640);
    assert.throws(
      () => loadConfig({ SIGNING_ALGORITHM: "EdDSA" }, cwd),
      /^ConfigError: SIGNING_KEY_FILE: .* readable by other users/,
    );
  });

  test("a restart reads the kept key files and generates no key (an RSA key cost tens of ms of every start)", (t) => {
    const cwd = tempDir(t);
    loadConfig({ SIGNING_ALGORITHM: "EdDSA" }, cwd); // the first start writes the signing and OpenID Connect keys
    const generate = t.mock.method(crypto, "generateKeyPairSync");
    syncBuiltinESMExports(); // the named imports of node:crypto see the mock
    t.after(() => {
      generate.mock.restore();
      syncBuiltinESMExports();
    });
    const again = loadConfig({ SIGNING_ALGORITHM: "EdDSA" }, cwd);
    assert.match(again.notices.join("\n"), /using the EdDSA key kept in/);
    assert.equal(generate.mock.callCount(), 0);
  });

  test("refuses bad signing settings with one line naming the setting and no key material", (t) => {
    const cwd = tempDir(t);
    writeFileSync(join(cwd, "ed.pem"), generatePrivateKeyPem("EdDSA"), { mode: 0o600 });
    writeFileSync(join(cwd, "junk.pem"), "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
    const cases: [Record<string, string>, RegExp][] = [
      [{ SIGNING_ALGORITHM: "RS256" }, /^SIGNING_ALGORITHM: must be one of HS256, EdDSA, ES256/],
      [{ SIGNING_ALGORITHM: "ES256", SIGNING_KEY_FILE: "ed.pem" }, /^SIGNING_KEY_FILE: .*ed\.pem must be a P-256/],
      [
        { SIGNING_ALGORITHM: "EdDSA", SIGNING_KEY_FILE: "junk.pem" },
        /^SIGNING_KEY_FILE: .*junk\.pem is not a PEM private key/,
      ],
      [
        { SIGNING_ALGORITHM: "EdDSA", SIGNING_KEY_FILE: "missing.pem" },
        /^SIGNING_KEY_FILE: cannot read .*missing\.pem: ENOENT/,
      ],
      [
        { SIGNING_SECRET: SECRET, SIGNING_KEY_FILE: "ed.pem" },
        /^SIGNING_KEY_FILE: is for SIGNING_ALGORITHM=EdDSA or ES256/,
      ],
      [{ SIGNING_ALGORITHM: "EdDSA", SIGNING_SECRET: SECRET }, /^SIGNING_SECRET: is for HS256/],
      [
        { SIGNING_ALGORITHM: "EdDSA", DATABASE_URL: "postgres://db/x" },
        /^SIGNING_KEY_FILE: is required with PostgreSQL/,
      ],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig(env, cwd),
        (error: unknown) =>
          error instanceof ConfigError && message.test(error.message) && !error.message.includes("not a key"),
        JSON.stringify(env),
      );
    }
  });

  test("reads PUBLIC_URL, TOKEN_ISSUER (default PUBLIC_URL), TOKEN_AUDIENCE and INTROSPECTION_CLIENTS", (t) => {
    const cwd = tempDir(t);
    const bare = loadConfig({ SIGNING_SECRET: SECRET }, cwd).config;
    assert.equal(bare.publicUrl, undefined);
    assert.equal(bare.tokenIssuer, undefined, "the listen address, decided when the server listens");
    assert.deepEqual(bare.introspectionClients, []);
    const withUrl = loadConfig({ SIGNING_SECRET: SECRET, PUBLIC_URL: "https://auth.example.com" }, cwd).config;
    assert.equal(withUrl.publicUrl, "https://auth.example.com");
    assert.equal(withUrl.tokenIssuer, "https://auth.example.com");
    const { config } = loadConfig(
      {
        SIGNING_SECRET: SECRET,
        PUBLIC_URL: "https://auth.example.com",
        TOKEN_ISSUER: "https://issuer.example.com/tenant",
        TOKEN_AUDIENCE: "orders-api",
        INTROSPECTION_CLIENTS: `orders:${SECRET}, billing:${"b".repeat(40)}`,
      },
      cwd,
    );
    assert.equal(config.tokenIssuer, "https://issuer.example.com/tenant");
    assert.equal(config.tokenAudience, "orders-api");
    assert.deepEqual(config.introspectionClients, [
      { id: "orders", secret: SECRET },
      { id: "billing", secret: "b".repeat(40) },
    ]);
  });

  test("OAUTH_ERROR_FIELDS: off unless turned on; a value that is not a switch stops the service naming it", (t) => {
    const cwd = tempDir(t);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.oauthErrorFields, false);
    assert.equal(loadConfig({ SIGNING_SECRET: SECRET, OAUTH_ERROR_FIELDS: "on" }, cwd).config.oauthErrorFields, true);
    assert.throws(
      () => loadConfig({ SIGNING_SECRET: SECRET, OAUTH_ERROR_FIELDS: "rfc" }, cwd),
      /^ConfigError: OAUTH_ERROR_FIELDS: must be true or false, got "rfc"$/,
    );
  });

  test("refuses bad URLs, audiences and introspection clients, never echoing a client secret", (t) => {
    const cwd = tempDir(t);
    const cases: [Record<string, string>, RegExp][] = [
      [{ PUBLIC_URL: "auth.example.com" }, /^PUBLIC_URL: must be an absolute http/],
      [{ PUBLIC_URL: "ftp://auth.example.com" }, /^PUBLIC_URL:/],
      [{ TOKEN_ISSUER: "https://auth.example.com?x=1" }, /^TOKEN_ISSUER:/],
      [{ TOKEN_AUDIENCE: "a b" }, /^TOKEN_AUDIENCE:/],
      [{ TOKEN_AUDIENCE: "a,b" }, /^TOKEN_AUDIENCE:/],
      [{ INTROSPECTION_CLIENTS: "no-secret" }, /^INTROSPECTION_CLIENTS: entry 1/],
      [
        { INTROSPECTION_CLIENTS: "orders:hunter2" },
        /^INTROSPECTION_CLIENTS: the secret of "orders" must be at least 32 bytes/,
      ],
      [{ INTROSPECTION_CLIENTS: `a:${SECRET},a:${SECRET}` }, /^INTROSPECTION_CLIENTS: a client id appears twice/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd),
        (error: unknown) =>
          error instanceof ConfigError && message.test(error.message) && !error.message.includes("hunter2"),
        JSON.stringify(env),
      );
    }
  });

  test("MFA_ENCRYPTION_KEY: a list (first seals), a generated owner-only file beside SQLite, optional with PostgreSQL", (t) => {
    const cwd = tempDir(t);
    const keys = ["k".repeat(32), "j".repeat(40)];
    const listed = loadConfig({ SIGNING_SECRET: SECRET, MFA_ENCRYPTION_KEY: ` ${keys.join(" , ")} ` }, cwd);
    assert.deepEqual(listed.config.mfa.encryptionKeys, keys);
    assert.throws(() => statSync(join(cwd, "data", "mfa-encryption-key")), /ENOENT/);

    const first = loadConfig({ SIGNING_SECRET: SECRET }, cwd);
    const file = join(cwd, "data", "mfa-encryption-key");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const [generated] = first.config.mfa.encryptionKeys;
    assert.ok(Buffer.byteLength(generated!) >= 32);
    assert.notEqual(generated, first.config.signingSecrets[0]);
    assert.match(first.notices.join("\n"), /MFA_ENCRYPTION_KEY is unset: generated a new second-factor encryption key/);
    assert.doesNotMatch(first.notices.join("\n"), new RegExp(generated!));
    assert.deepEqual(loadConfig({ SIGNING_SECRET: SECRET }, cwd).config.mfa.encryptionKeys, [generated]);
    chmodSync(file, 0o644);
    assert.throws(
      () => loadConfig({ SIGNING_SECRET: SECRET }, cwd),
      /^ConfigError: MFA_ENCRYPTION_KEY: the secret file .* is readable by other users/,
    );

    for (const [env, message] of [
      [{ MFA_ENCRYPTION_KEY: "short" }, /^MFA_ENCRYPTION_KEY: MFA_ENCRYPTION_KEY must be at least 32 bytes, got 5$/],
      [
        { MFA_ENCRYPTION_KEY: `${"k".repeat(32)},short` },
        /^MFA_ENCRYPTION_KEY: secret number 2 must be at least 32 bytes, got 5$/,
      ],
      [{ TOTP_ISSUER: "a:b" }, /^TOTP_ISSUER: must be 1 to 64 printable characters without a colon/],
      [{ MFA_LIMIT_PER_ACCOUNT: "0" }, /^MFA_LIMIT_PER_ACCOUNT: must be a whole number from 1 to 1000/],
    ] as const) {
      assert.throws(
        () => loadConfig({ SIGNING_SECRET: SECRET, ...env }, tempDir(t)),
        (error: unknown) =>
          error instanceof ConfigError && message.test(error.message) && !error.message.includes("k".repeat(32)),
        JSON.stringify(env),
      );
    }

    // Only authenticator apps need it: a PostgreSQL deployment without it starts, and says so once.
    const postgres = loadConfig({ SIGNING_SECRET: SECRET, DATABASE_URL: "postgres://db/users" }, cwd);
    assert.deepEqual(postgres.config.mfa.encryptionKeys, []);
    assert.deepEqual(
      postgres.notices.filter((notice) => notice.includes("MFA_ENCRYPTION_KEY")),
      [
        "MFA_ENCRYPTION_KEY is unset: authenticator apps are off until it is set (one value shared by every " +
          "instance); passkeys and recovery codes work without it",
      ],
    );
    const postgresWithKey = {
      SIGNING_SECRET: SECRET,
      DATABASE_URL: "postgres://db/users",
      MFA_ENCRYPTION_KEY: keys[0],
    };
    const withKey = loadConfig(postgresWithKey, cwd);
    assert.deepEqual(withKey.config.mfa.encryptionKeys, [keys[0]]);
    // (OpenID Connect's own notice, off without OIDC_SIGNING_KEY_FILE on PostgreSQL, is test/oidc-config.test.ts's.)
    assert.deepEqual(
      withKey.notices.filter((notice) => !notice.startsWith("OIDC_SIGNING_KEY_FILE")),
      [],
    );
    assert.throws(
      () => loadConfig({ SIGNING_SECRET: undefined, DATABASE_URL: "postgres://db/users" }, cwd),
      /^ConfigError: SIGNING_SECRET: is required with PostgreSQL/,
      "the signing secret is still required",
    );

    assert.equal(
      loadConfig(
        { SIGNING_SECRET: SECRET, DATABASE_URL: "sqlite::memory:", PUBLIC_URL: "https://auth.example.com" },
        cwd,
      ).config.mfa.totpIssuer,
      "auth.example.com",
    );
  });
});
