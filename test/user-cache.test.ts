// The token check's user cache (src/auth/user-cache.ts): a hit is served
// from memory, and nothing stale is ever served. In-process on both
// backends (the lookup counts the store's reads); with a real CLI writing
// the same SQLite file; and with two real instances on PostgreSQL, with and
// without Redis, where a change on one instance must refuse the old token on
// the other within one second, also while the notification channel is cut.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { createUserLookup } from "../src/auth/user-cache.ts";
import type { UserRecord, UserStore } from "../src/store/store.ts";
import { createUser, openTestStore, TestClock } from "./helpers.ts";
import { sharedStores } from "./postgres-fixture.ts";
import { CLI, type RunningService, run, scratchDir, startService } from "./process.ts";
import { TcpProxy } from "./proxy.ts";

const PASSWORD = "correct horse battery";

/** A store whose findByEmail calls are counted. */
function counting(store: UserStore): { store: UserStore; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "findByEmail") {
        return (email: string) => {
          reads += 1;
          return target.findByEmail(email);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: counted, reads: () => reads };
}

async function lookupOn(t: TestContext, settings = { ttlMs: 5000, maxEntries: 100 }) {
  const clock = new TestClock();
  const raw = await openTestStore(t, clock.read);
  const { store, reads } = counting(raw);
  const lookup = createUserLookup(store, settings, clock.read);
  // The first use starts PostgreSQL's listener; wait until the feed is usable.
  for (let i = 0; i < 100 && !raw.userChanges.usable(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(raw.userChanges.usable(), "the change feed is up");
  return { raw, lookup, reads, clock };
}

describe("user cache, in process", () => {
  test("a second lookup of the same user is answered from memory, whatever the case of the e-mail", async (t) => {
    const { raw, lookup, reads } = await lookupOn(t);
    await createUser(raw, "ada@example.com", PASSWORD);
    assert.equal((await lookup.findByEmail("ada@example.com"))?.email, "ada@example.com");
    assert.equal((await lookup.findByEmail("ADA@example.com"))?.email, "ada@example.com");
    assert.equal(reads(), 1);
  });

  test("every write to the user drops its entry at once: password, deactivation, e-mail change, deletion", async (t) => {
    const { raw, lookup, reads } = await lookupOn(t);
    const ada = await createUser(raw, "ada@example.com", PASSWORD);
    const writes: [string, () => Promise<unknown>, (user: UserRecord | undefined) => void][] = [
      [
        "password change",
        () => raw.update(ada.id, { hashedPassword: "new" }, { endSessions: true }),
        (user) => assert.notEqual(user?.credentialStamp, ada.credentialStamp),
      ],
      ["deactivation", () => raw.update(ada.id, { isActive: false }), (user) => assert.equal(user?.isActive, false)],
      [
        "e-mail change",
        () => raw.update(ada.id, { email: "ada2@example.com" }),
        (user) => assert.equal(user, undefined),
      ],
    ];
    for (const [name, write, check] of writes) {
      await lookup.findByEmail("ada@example.com");
      const before = reads();
      await write();
      const user = await lookup.findByEmail("ada@example.com");
      assert.equal(reads(), before + 1, `${name}: read from the store again`);
      check(user);
    }
    await raw.update(ada.id, { email: "ada@example.com" });
    assert.ok(await lookup.findByEmail("ada@example.com"));
    await raw.remove(ada.id);
    assert.equal(await lookup.findByEmail("ada@example.com"), undefined, "deletion");
  });

  test("entries expire after their time limit; misses are never kept", async (t) => {
    const { raw, lookup, reads, clock } = await lookupOn(t, { ttlMs: 1000, maxEntries: 100 });
    await createUser(raw, "ada@example.com", PASSWORD);
    await lookup.findByEmail("ada@example.com");
    clock.advanceSeconds(1);
    await lookup.findByEmail("ada@example.com");
    assert.equal(reads(), 2, "expired");
    await lookup.findByEmail("nobody@example.com");
    await lookup.findByEmail("nobody@example.com");
    assert.equal(reads(), 4, "a miss asks the store each time");
  });

  test("holds at most maxEntries users, dropping the oldest", async (t) => {
    const { raw, lookup, reads } = await lookupOn(t, { ttlMs: 5000, maxEntries: 2 });
    for (const name of ["a", "b", "c"]) await createUser(raw, `${name}@example.com`, PASSWORD);
    for (const name of ["a", "b", "c"]) await lookup.findByEmail(`${name}@example.com`);
    await lookup.findByEmail("c@example.com");
    await lookup.findByEmail("b@example.com");
    assert.equal(reads(), 3);
    await lookup.findByEmail("a@example.com");
    assert.equal(reads(), 4, "a was dropped");
  });

  test("a lookup that raced a change does not keep what it read", async (t) => {
    const { raw, lookup, reads } = await lookupOn(t);
    const ada = await createUser(raw, "ada@example.com", PASSWORD);
    const racing = lookup.findByEmail("ada@example.com");
    await raw.update(ada.id, { isActive: false });
    await racing;
    assert.equal((await lookup.findByEmail("ada@example.com"))?.isActive, false);
    assert.equal(reads(), 2);
  });

  test("while the change feed is not usable, every lookup asks the store", async (t) => {
    const clock = new TestClock();
    const raw = await openTestStore(t, clock.read);
    await createUser(raw, "ada@example.com", PASSWORD);
    const { store, reads } = counting(raw);
    const down = new Proxy(store, {
      get: (target, property) =>
        property === "userChanges"
          ? { usable: () => false, subscribe: () => {} }
          : Reflect.get(target, property, target),
    });
    const lookup = createUserLookup(down, { ttlMs: 5000, maxEntries: 100 }, clock.read);
    await lookup.findByEmail("ada@example.com");
    await lookup.findByEmail("ada@example.com");
    assert.equal(reads(), 2);
  });
});

async function bearerStatus(base: string, token: string): Promise<number> {
  return (await fetch(`${base}/me`, { headers: { authorization: `Bearer ${token}` } })).status;
}

async function loginAt(base: string, email: string, password = PASSWORD) {
  const response = await fetch(`${base}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: email, password }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as { access_token: string };
}

/** Polls until the old token is refused: it must happen within one second. */
async function refusedWithinASecond(base: string, token: string): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < 1000) {
    if ((await bearerStatus(base, token)) === 401) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail("the old token still opened GET /me one second after the change");
}

describe("user cache with another process writing the same SQLite file", () => {
  test("a deactivation by the CLI refuses the user's token within a tenth of a second", async (t) => {
    const dir = scratchDir(t);
    const env = { DATABASE_URL: "sqlite:users.db", SIGNING_SECRET: "s".repeat(40), LOG_LEVEL: "info" };
    const service = await startService(dir, env);
    t.after(() => service.stop());
    const signUp = await fetch(`${service.baseUrl}/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com", password: PASSWORD }),
    });
    assert.equal(signUp.status, 201);
    const { access_token } = await loginAt(service.baseUrl, "ada@example.com");
    assert.equal(await bearerStatus(service.baseUrl, access_token), 200);
    assert.equal(await bearerStatus(service.baseUrl, access_token), 200, "now cached");
    const cli = await run([CLI, "users", "deactivate", "ada@example.com"], { cwd: dir, env });
    assert.equal(cli.code, 0, cli.stderr);
    // Another process's write is noticed within DATA_VERSION_CHECK_MS (100 ms), well inside one second.
    await refusedWithinASecond(service.baseUrl, access_token);
  });
});

const POSTGRES_URL = process.env.POSTGRES_URL;
const REDIS_URL = process.env.REDIS_URL;
const SKIP_MESSAGE =
  "cross-instance cache tests need POSTGRES_URL and REDIS_URL (e.g. postgres://postgres@127.0.0.1:5432/test)";
if ((!POSTGRES_URL || !REDIS_URL) && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires them`);

const ADMIN = { email: "root@example.com", password: "a long operator passphrase" };

/** Instances A and B on one fresh schema; B may reach PostgreSQL through a fault proxy. */
async function twoInstances(t: TestContext, { redis, proxyForB }: { redis: boolean; proxyForB?: TcpProxy }) {
  const { withSchema, prefix, admin, schema } = await sharedStores(t, POSTGRES_URL!);
  const env = {
    SIGNING_SECRET: "cache-test-secret-of-at-least-32-bytes!!",
    MFA_ENCRYPTION_KEY: "cache-test-mfa-key-of-at-least-32-bytes!",
    // Behind one balancer address: otherwise each instance would name its own port as the tokens' issuer.
    PUBLIC_URL: "http://balancer.test",
    FIRST_ADMIN_EMAIL: ADMIN.email,
    FIRST_ADMIN_PASSWORD: ADMIN.password,
    ARGON2_MEMORY_KIB: "7168",
    ARGON2_TIME_COST: "1",
    RATE_LIMIT: "off",
    DB_TIMEOUT_MS: "1000",
    LOG_LEVEL: "info",
    ...(redis ? { REDIS_URL: REDIS_URL!, REDIS_KEY_PREFIX: prefix } : {}),
  };
  const start = async (databaseUrl: string): Promise<RunningService> => {
    const service = await startService(scratchDir(t), { ...env, DATABASE_URL: withSchema(databaseUrl) });
    t.after(() => service.stop());
    return service;
  };
  const a = await start(POSTGRES_URL!);
  let bUrl = POSTGRES_URL!;
  if (proxyForB) {
    const url = new URL(POSTGRES_URL!);
    url.port = String(proxyForB.port);
    bUrl = url.toString();
  }
  const b = await start(bUrl);
  const root = (await loginAt(a.baseUrl, ADMIN.email, ADMIN.password)).access_token;
  // Each instance starts listening for changes as it starts; give B's listener a moment to be up.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { a: a.baseUrl, b: b.baseUrl, root, admin, schema };
}

const call = (base: string, method: string, path: string, token: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

/** Signs a user up on A, logs in on A, and makes B cache the user. */
async function cachedOnB(a: string, b: string, email: string): Promise<{ id: string; token: string }> {
  const signUp = await fetch(`${a}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  assert.equal(signUp.status, 201);
  const { id } = (await signUp.json()) as { id: string };
  const { access_token } = await loginAt(a, email);
  assert.equal(await bearerStatus(b, access_token), 200);
  assert.equal(await bearerStatus(b, access_token), 200);
  return { id, token: access_token };
}

const changes: [string, (a: string, root: string, user: { id: string; token: string }) => Promise<Response>][] = [
  ["deactivation", (a, root, user) => call(a, "PATCH", `/users/${user.id}`, root, { is_active: false })],
  ["deletion", (a, root, user) => call(a, "DELETE", `/users/${user.id}`, root)],
  [
    "password change",
    (a, _root, user) =>
      call(a, "PUT", "/me/password", user.token, { current_password: PASSWORD, new_password: "another passphrase" }),
  ],
  ["e-mail change", (a, _root, user) => call(a, "PATCH", "/me", user.token, { email: `moved-${user.id}@example.com` })],
];

describe("user cache across instances on PostgreSQL", {
  skip: POSTGRES_URL && REDIS_URL ? false : SKIP_MESSAGE,
}, () => {
  for (const redis of [false, true]) {
    test(`a change on instance A refuses the old token on instance B within one second (${redis ? "with" : "without"} Redis)`, async (t) => {
      const { a, b, root, admin, schema } = await twoInstances(t, { redis });
      // The control: a write behind the service's back (no notification) is not seen by B while its
      // entry lives, which shows that B really answers from memory, so the refusals below are the
      // notifications' doing.
      const control = await cachedOnB(a, b, `control-${redis}@example.com`);
      await admin.query(`UPDATE ${schema}.users SET is_active = false WHERE id = $1`, [control.id]);
      assert.equal(await bearerStatus(b, control.token), 200, "served from B's cache");
      for (const [name, change] of changes) {
        const user = await cachedOnB(a, b, `${name.replaceAll(/\W/g, "")}-${redis}@example.com`);
        const response = await change(a, root, user);
        assert.ok(response.ok, `${name}: ${response.status}`);
        const took = await refusedWithinASecond(b, user.token);
        t.diagnostic(`${name}: refused on B after ${took} ms`);
      }
    });
  }

  test("with the notification channel cut, B does not use its cache: a change on A is refused on B at once", async (t) => {
    const target = new URL(POSTGRES_URL!);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    await proxy.start();
    t.after(() => proxy.stop());
    const { a, b, root, admin } = await twoInstances(t, { redis: false, proxyForB: proxy });
    const first = await cachedOnB(a, b, "first@example.com");

    // Cut B's listening connection and keep it from listening again.
    proxy.cutAt(/LISTEN uts_user_changes/, 1000);
    const cutListeners = async () =>
      (
        await admin.query(
          "SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'uts-user-changes' AND client_port IS NOT NULL AND pid <> pg_backend_pid()) AS k",
        )
      ).rows[0].n as number;
    assert.ok((await cutListeners()) >= 1, "a listener was terminated");
    await new Promise((resolve) => setTimeout(resolve, 300));

    // No notification can reach B now; the change must still be refused at B on the next request.
    const response = await call(a, "PATCH", `/users/${first.id}`, root, { is_active: false });
    assert.equal(response.status, 200);
    assert.equal(await bearerStatus(b, first.token), 401, "refused at once, not after a time limit");

    // And B keeps answering from the database, correctly, while the channel stays down.
    const second = await cachedOnB(a, b, "second@example.com");
    assert.equal((await call(a, "PATCH", `/users/${second.id}`, root, { is_active: false })).status, 200);
    assert.equal(await bearerStatus(b, second.token), 401);
    assert.ok(proxy.cuts >= 1, "B tried to listen again and was cut");
  });
});
