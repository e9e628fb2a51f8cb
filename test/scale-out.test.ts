// Several instances behind one address, on one PostgreSQL and one Redis, as
// real processes: migrations applied once by instances starting together;
// sign-up on one, token from the other; failed logins counted across both;
// PostgreSQL and Redis going away (503s within the timeout) and coming back
// (recovery, no user lost or duplicated); graceful shutdown under load.
// Needs POSTGRES_URL and REDIS_URL: skipped with a message without them,
// except under CI=true, where that is a failure.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { sharedStores } from "./postgres-fixture.ts";
import { type RunningService, scratchDir, startService } from "./process.ts";
import { TcpProxy } from "./proxy.ts";

const POSTGRES_URL = process.env.POSTGRES_URL;
const REDIS_URL = process.env.REDIS_URL;
const MISSING = !POSTGRES_URL || !REDIS_URL;
const SKIP_MESSAGE =
  "scale-out tests need POSTGRES_URL and REDIS_URL (e.g. postgres://postgres@127.0.0.1:5432/test and redis://127.0.0.1:6379)";
if (MISSING && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires them`);

const SECRET = "scale-out-test-secret-of-at-least-32-bytes";
const PASSWORD = "correct horse battery";

function instanceEnv(databaseUrl: string, redisUrl: string, prefix: string, extra: Record<string, string> = {}) {
  return {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: prefix,
    SIGNING_SECRET: SECRET,
    // No MFA_ENCRYPTION_KEY: authenticator apps are off until it is set, nothing else needs it.
    // No PUBLIC_URL: only the settings the README requires for several instances. Each names its own
    // address as its tokens' issuer, and each accepts the other's tokens all the same.
    DB_TIMEOUT_MS: "1000",
    REDIS_TIMEOUT_MS: "500",
    LOG_LEVEL: "info",
    ...extra,
  };
}

async function start(t: TestContext, env: Record<string, string>): Promise<RunningService> {
  const service = await startService(scratchDir(t), env);
  t.after(() => service.stop());
  return service;
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const login = (base: string, username: string, password: string) =>
  fetch(`${base}/auth/token`, { method: "POST", body: new URLSearchParams({ username, password }) });

describe("several instances on one PostgreSQL and one Redis", { skip: MISSING ? SKIP_MESSAGE : false }, () => {
  test("instances starting together apply each migration exactly once", async (t) => {
    const { admin, schema, withSchema, prefix } = await sharedStores(t, POSTGRES_URL!);
    const env = instanceEnv(withSchema(POSTGRES_URL!), REDIS_URL!, prefix);
    await Promise.all([start(t, env), start(t, env), start(t, env)]);
    const { rows } = await admin.query(
      `SELECT version, count(*)::int AS n FROM ${schema}.schema_migrations GROUP BY version`,
    );
    assert.ok(rows.length >= 1);
    for (const row of rows) assert.equal(row.n, 1, `version ${row.version} recorded once`);
  });

  test("sign-up on one, token from the other, /me on the first; revocation and failed logins count across both", async (t) => {
    const { withSchema, prefix } = await sharedStores(t, POSTGRES_URL!);
    const env = instanceEnv(withSchema(POSTGRES_URL!), REDIS_URL!, prefix, {
      LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS: "4",
    });
    const [a, b] = await Promise.all([start(t, env), start(t, env)]);
    for (const instance of [a, b]) {
      const notices = instance.output().match(/MFA_ENCRYPTION_KEY is unset: authenticator apps are off/g) ?? [];
      assert.equal(notices.length, 1, "said once at start");
    }

    assert.equal((await post(`${a.baseUrl}/users`, { email: "ada@example.com", password: PASSWORD })).status, 201);
    const token = await login(b.baseUrl, "ada@example.com", PASSWORD);
    assert.equal(token.status, 200);
    const { access_token } = (await token.json()) as { access_token: string };
    const me = await fetch(`${a.baseUrl}/me`, { headers: { authorization: `Bearer ${access_token}` } });
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { email: string }).email, "ada@example.com");

    // A session revoked on one instance is over on the other: revocation lives in the shared database.
    const login2 = (await (await login(b.baseUrl, "ada@example.com", PASSWORD)).json()) as { refresh_token: string };
    const revoked = await fetch(`${a.baseUrl}/auth/revoke`, {
      method: "POST",
      body: new URLSearchParams({ token: login2.refresh_token }),
    });
    assert.equal(revoked.status, 200);
    const refreshed = await fetch(`${b.baseUrl}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: login2.refresh_token }),
    });
    assert.equal(refreshed.status, 401, "the other instance honours the revocation");

    // Two failures on each instance reach the limit of four together.
    for (const base of [a.baseUrl, b.baseUrl, a.baseUrl, b.baseUrl])
      assert.equal((await login(base, "ada@example.com", "wrong")).status, 401);
    assert.equal((await login(a.baseUrl, "ada@example.com", PASSWORD)).status, 429);
    assert.equal((await login(b.baseUrl, "ada@example.com", PASSWORD)).status, 429);
  });

  test("answers 503 within the timeout while PostgreSQL is away and recovers by itself, losing and duplicating no user", async (t) => {
    const { admin, schema, withSchema, prefix } = await sharedStores(t, POSTGRES_URL!);
    const target = new URL(POSTGRES_URL!);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
    t.after(() => proxy.stop());
    const viaProxy = new URL(POSTGRES_URL!);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String(proxy.port);
    const service = await start(t, instanceEnv(withSchema(viaProxy.toString()), REDIS_URL!, prefix));
    for (const email of ["a@example.com", "b@example.com"])
      assert.equal((await post(`${service.baseUrl}/users`, { email, password: PASSWORD })).status, 201);

    await proxy.stop();
    for (const request of [
      () => post(`${service.baseUrl}/users`, { email: "c@example.com", password: PASSWORD }),
      () => login(service.baseUrl, "a@example.com", PASSWORD),
      () => fetch(`${service.baseUrl}/readyz`),
    ]) {
      const started = performance.now();
      const response = await request();
      const elapsed = performance.now() - started;
      assert.equal(response.status, 503);
      assert.equal(typeof ((await response.json()) as { detail: string }).detail, "string");
      assert.ok(elapsed < 3000, `answered in ${Math.round(elapsed)} ms`);
    }
    assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200, "the process itself lives");

    await proxy.start();
    let recovered = false;
    for (let i = 0; i < 50 && !recovered; i++) {
      recovered = (await fetch(`${service.baseUrl}/readyz`)).status === 200;
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(recovered, "ready again once PostgreSQL is back");
    assert.equal((await post(`${service.baseUrl}/users`, { email: "c@example.com", password: PASSWORD })).status, 201);
    assert.equal((await login(service.baseUrl, "a@example.com", PASSWORD)).status, 200);
    const { rows } = await admin.query(`SELECT email FROM ${schema}.users ORDER BY email`);
    assert.deepEqual(
      rows.map((row) => row.email),
      ["a@example.com", "b@example.com", "c@example.com"],
    );
  });

  test("answers 503 while Redis is away and recovers by itself", async (t) => {
    const { withSchema, prefix } = await sharedStores(t, POSTGRES_URL!);
    const target = new URL(REDIS_URL!);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    await proxy.start();
    t.after(() => proxy.stop());
    const service = await start(t, instanceEnv(withSchema(POSTGRES_URL!), `redis://127.0.0.1:${proxy.port}`, prefix));
    assert.equal((await post(`${service.baseUrl}/users`, { email: "a@example.com", password: PASSWORD })).status, 201);

    await proxy.stop();
    const started = performance.now();
    const refused = await login(service.baseUrl, "a@example.com", PASSWORD);
    assert.equal(refused.status, 503);
    assert.ok(performance.now() - started < 3000);
    assert.equal((await fetch(`${service.baseUrl}/readyz`)).status, 503);

    await proxy.start();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await login(service.baseUrl, "a@example.com", PASSWORD)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(status, 200, "logins work again once Redis is back");
  });

  test("finishes the requests in flight on SIGTERM, then exits 0", async (t) => {
    const { withSchema, prefix } = await sharedStores(t, POSTGRES_URL!);
    // With a drain delay, as in production: requests sent around SIGTERM are still accepted and served.
    // (Without one, a connection that is still in the kernel's accept queue, or whose request has not
    // been read yet, when the listener closes is reset: see docs/deployment.md, "Shutdown and drain".)
    const env = instanceEnv(withSchema(POSTGRES_URL!), REDIS_URL!, prefix, { SHUTDOWN_DELAY_MS: "500" });
    const service = await start(t, env);
    assert.equal((await post(`${service.baseUrl}/users`, { email: "a@example.com", password: PASSWORD })).status, 201);
    const inFlight = Array.from({ length: 12 }, () => login(service.baseUrl, "a@example.com", PASSWORD));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const exit = service.stop();
    const statuses = await Promise.all(inFlight.map(async (response) => (await response).status));
    assert.deepEqual(statuses, Array(12).fill(200));
    assert.equal(await exit, 0);
    assert.match(service.output(), /"msg":"stopped"/);
  });
});
