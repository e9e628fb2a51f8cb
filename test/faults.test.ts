// What production does to a service, reproduced with real processes and a
// real PostgreSQL behind a fault proxy (test/proxy.ts): a connection cut in
// the middle of a transaction, backends terminated as a restart or failover
// does, a database lost right after a commit, a network that swallows
// packets. After every fault the process must be alive, every acknowledged
// write present and no half-done write visible.
// Needs POSTGRES_URL: skipped with a message without it, except under
// CI=true, where that is a failure. (The same all-or-nothing rule on SQLite
// is tested at the store level in test/store-atomicity.test.ts.)
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { sharedStores } from "./postgres-fixture.ts";
import { type RunningService, scratchDir, startService } from "./process.ts";
import { TcpProxy } from "./proxy.ts";

const POSTGRES_URL = process.env.POSTGRES_URL;
const SKIP_MESSAGE = "fault tests need POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)";
if (!POSTGRES_URL && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires it`);

const SECRET = "fault-test-secret-of-at-least-32-bytes!!";
const PASSWORD = "correct horse battery";
const NEW_PASSWORD = "a brand new passphrase";

interface Harness {
  service: RunningService;
  proxy: TcpProxy;
  base: string;
  applicationName: string;
  admin: Awaited<ReturnType<typeof sharedStores>>["admin"];
}

/** One instance on a fresh schema, talking to PostgreSQL through a fault proxy. */
async function harness(t: TestContext): Promise<Harness> {
  const { admin, withSchema } = await sharedStores(t, POSTGRES_URL!);
  const target = new URL(POSTGRES_URL!);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.start();
  t.after(() => proxy.stop());
  const throughProxy = new URL(POSTGRES_URL!);
  throughProxy.port = String(proxy.port);
  const applicationName = `faults_${proxy.port}`;
  throughProxy.searchParams.set("application_name", applicationName);
  const service = await startService(scratchDir(t), {
    DATABASE_URL: withSchema(throughProxy.toString()),
    SIGNING_SECRET: SECRET,
    MFA_ENCRYPTION_KEY: `mfa-${SECRET}`,
    DB_TIMEOUT_MS: "1000",
    // Cheaper hashing keeps the storms short; the parameters do not matter to these faults.
    ARGON2_MEMORY_KIB: "7168",
    ARGON2_TIME_COST: "1",
    RATE_LIMIT: "off",
  });
  t.after(() => service.stop());
  return { service, proxy, base: service.baseUrl, applicationName, admin };
}

function form(fields: Record<string, string>) {
  return { method: "POST", body: new URLSearchParams(fields) };
}

const json = (method: string, body: unknown, token?: string): RequestInit => ({
  method,
  headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});

async function signUp(base: string, email: string): Promise<void> {
  const response = await fetch(`${base}/users`, json("POST", { email, password: PASSWORD }));
  assert.equal(response.status, 201, await response.text());
}

async function login(base: string, email: string, password = PASSWORD) {
  return fetch(`${base}/auth/token`, form({ username: email, password }));
}

async function tokensFor(base: string, email: string, password = PASSWORD) {
  const response = await login(base, email, password);
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as { access_token: string; refresh_token: string };
}

const refresh = (base: string, refreshToken: string) =>
  fetch(`${base}/auth/token`, form({ grant_type: "refresh_token", refresh_token: refreshToken }));

const changePassword = (base: string, accessToken: string) =>
  fetch(`${base}/me/password`, json("PUT", { current_password: PASSWORD, new_password: NEW_PASSWORD }, accessToken));

/** After a fault: waits (bounded) until /readyz says the database answers again, as a load balancer would. */
async function ready({ base }: Harness): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    if ((await fetch(`${base}/readyz`)).status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail("not ready again within 5 s");
}

async function assertAlive({ service, base }: Harness): Promise<void> {
  assert.equal(service.child.exitCode, null, `the process is alive:\n${service.output()}`);
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
}

describe("faults on the way to PostgreSQL", { skip: POSTGRES_URL ? false : SKIP_MESSAGE }, () => {
  test("a connection cut inside the password change's transaction: 503, process alive, nothing of the change applied", async (t) => {
    const h = await harness(t);
    await signUp(h.base, "ada@example.com");
    const tokens = await tokensFor(h.base, "ada@example.com");

    // The statement that revokes the sessions comes after the new password within the transaction.
    h.proxy.cutAt(/UPDATE sessions SET revoked_at/);
    const cut = await changePassword(h.base, tokens.access_token);
    assert.equal(cut.status, 503, await cut.text());
    assert.equal(h.proxy.cuts, 1, "the fault fired");
    await assertAlive(h);
    await ready(h);

    // All or nothing: the old password, the session and the access token all still work.
    assert.equal((await login(h.base, "ada@example.com", NEW_PASSWORD)).status, 401, "the new password is not set");
    const refreshed = await refresh(h.base, tokens.refresh_token);
    assert.equal(refreshed.status, 200, "the session was not ended");
    const { refresh_token: current } = (await refreshed.json()) as { refresh_token: string };
    assert.equal(
      (await fetch(`${h.base}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status,
      200,
    );

    // Without the fault the same change applies whole.
    assert.equal((await changePassword(h.base, tokens.access_token)).status, 204);
    assert.equal((await refresh(h.base, current)).status, 401, "the session ended with the change");
    assert.equal((await login(h.base, "ada@example.com", NEW_PASSWORD)).status, 200);
  });

  test("a login cut inside its transaction: 503, process alive, no session written, the next login works", async (t) => {
    const h = await harness(t);
    await signUp(h.base, "ada@example.com");
    // The session insert, inside the login transaction (a pattern no background work, such as the mail
    // sender recording its deliveries, can send).
    h.proxy.cutAt(/sessions_insert/);
    const cut = await login(h.base, "ada@example.com");
    assert.equal(cut.status, 503, await cut.text());
    await assertAlive(h);
    await ready(h);
    const { access_token } = await tokensFor(h.base, "ada@example.com");
    const sessions = await fetch(`${h.base}/me/sessions`, { headers: { authorization: `Bearer ${access_token}` } });
    assert.equal(((await sessions.json()) as { items: unknown[] }).items.length, 1, "only the login that answered 200");
  });

  test("backends terminated mid-storm (pg_terminate_backend, as a restart or failover does): the process lives on", async (t) => {
    const h = await harness(t);
    const emails = Array.from({ length: 8 }, (_, i) => `user${i}@example.com`);
    for (const email of emails) await signUp(h.base, email);

    let storming = true;
    const statuses = new Map<number, number>();
    const storm = Promise.all(
      emails.map(async (email) => {
        while (storming) {
          const response = await login(h.base, email);
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          if (response.status === 200) {
            const { refresh_token } = (await response.json()) as { refresh_token: string };
            const rotated = await refresh(h.base, refresh_token);
            statuses.set(rotated.status, (statuses.get(rotated.status) ?? 0) + 1);
          }
        }
      }),
    );
    let terminated = 0;
    for (let round = 0; round < 15; round++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const { rows } = await h.admin.query(
        "SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) AS killed",
        [h.applicationName],
      );
      terminated += rows[0].n as number;
    }
    storming = false;
    await storm;

    assert.ok(terminated > 0, "backends were terminated");
    await assertAlive(h);
    await ready(h);
    for (const status of statuses.keys()) assert.ok([200, 401, 503].includes(status), `status ${status}`);
    assert.ok((statuses.get(200) ?? 0) > 0, "requests succeeded between the terminations");
    // Every user can still log in: the pool replaced the terminated connections.
    for (const email of emails) assert.equal((await login(h.base, email)).status, 200);
  });

  test("connections reset and a network that swallows packets: 503 within the timeout, then recovery", async (t) => {
    const h = await harness(t);
    await signUp(h.base, "ada@example.com");
    const { access_token } = await tokensFor(h.base, "ada@example.com");
    const me = () => fetch(`${h.base}/me`, { headers: { authorization: `Bearer ${access_token}` } });

    h.proxy.reset();
    assert.ok([200, 503].includes((await me()).status));
    await assertAlive(h);

    h.proxy.blackhole();
    const started = Date.now();
    assert.equal((await me()).status, 503);
    assert.ok(Date.now() - started < 3000, "answered within DB_TIMEOUT_MS, not left hanging");
    await assertAlive(h);
    h.proxy.pass();
    h.proxy.reset();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await me()).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(status, 200, "recovers by itself");
  });

  describe("once a write has committed, its success is answered, even if the database goes away right after", () => {
    test("refresh: 200 with the new pair, which works once the database is back", async (t) => {
      const h = await harness(t);
      await signUp(h.base, "ada@example.com");
      const tokens = await tokensFor(h.base, "ada@example.com");
      h.proxy.cutAfter(/COMMIT/);
      const rotated = await refresh(h.base, tokens.refresh_token);
      assert.equal(rotated.status, 200, await rotated.clone().text());
      assert.equal(h.proxy.cuts, 1, "the database went away after the commit");
      const pair = (await rotated.json()) as { access_token: string; refresh_token: string };
      h.proxy.pass();
      await ready(h);
      assert.equal((await refresh(h.base, pair.refresh_token)).status, 200, "the rotation was committed");
    });

    test("sign-up: 201, and the account exists", async (t) => {
      const h = await harness(t);
      h.proxy.cutAfter(/COMMIT/);
      await signUp(h.base, "ada@example.com");
      h.proxy.pass();
      await ready(h);
      assert.equal((await login(h.base, "ada@example.com")).status, 200);
    });

    test("login: 200 with tokens whose session exists", async (t) => {
      const h = await harness(t);
      await signUp(h.base, "ada@example.com");
      h.proxy.cutAfter(/COMMIT/);
      const tokens = await tokensFor(h.base, "ada@example.com");
      h.proxy.pass();
      await ready(h);
      assert.equal((await refresh(h.base, tokens.refresh_token)).status, 200);
    });

    test("password change: 204, and the new password is the one that works", async (t) => {
      const h = await harness(t);
      await signUp(h.base, "ada@example.com");
      const tokens = await tokensFor(h.base, "ada@example.com");
      h.proxy.cutAfter(/COMMIT/);
      assert.equal((await changePassword(h.base, tokens.access_token)).status, 204);
      h.proxy.pass();
      await ready(h);
      assert.equal((await login(h.base, "ada@example.com", NEW_PASSWORD)).status, 200);
      assert.equal((await refresh(h.base, tokens.refresh_token)).status, 401);
    });
  });
});
