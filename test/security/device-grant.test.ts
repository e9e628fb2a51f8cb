// The device authorization grant (RFC 8628, issue 36) as an attacker tries
// it. The list first:
// - a device code redeemed twice (one use), or raced by two redemptions;
// - a device code presented by another client (and then still its owner's);
// - an expired device code; a code approved in a browser session that has
//   since ended;
// - user codes guessed at /device: the sixth wrong code within a minute is
//   refused, per browser session and per address, also with the right code,
//   and the count is shared across instances (the rate-limit counters;
//   Redis when REDIS_URL is set);
// - the user code presented as the device code, a device code as an
//   authorization code;
// - an unknown client, a wrong secret, a client without the grant type, at
//   the endpoint and at the token endpoint;
// - the page's forms posted without the session cookie, without or with
//   another session's form token, or with a decision token for another code
//   (a cross-site form cannot approve);
// - bad input: wrong types, repeated and huge fields, unknown scopes, JSON;
// - a second instance: approved on one, redeemed on the other, once.
// Every refusal is RFC 6749's error shape (or the page's), 4xx, never a 5xx.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.ts";
import { MemoryCounterStore } from "../../src/auth/rate-limits.ts";
import { UNSUPPORTED_GRANT_TYPE } from "../../src/errors.ts";
import { RedisCounterStore } from "../../src/store/redis.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import type { UserStore } from "../../src/store/store.ts";
import {
  authorizeDevice,
  basic,
  DEVICE_GRANT,
  decide,
  enterCode,
  entryFormToken,
  form,
  formToken,
  poll,
  registerDeviceClients,
  setUpDevice,
  startDevice,
} from "../device/fixture.ts";
import { bearer, createUser, openPostgresSchema, requestToken, TestClock, testConfig } from "../helpers.ts";
import { OIDC_KEY } from "../oidc/fixture.ts";
import { scratchDir } from "../process.ts";

const INVALID_DEVICE_CODE = "The device code is invalid, already used or not this client's";
const invalidGrant = {
  error: "invalid_grant",
  error_description: INVALID_DEVICE_CODE,
  detail: INVALID_DEVICE_CODE,
};

describe("device grant: refusals", () => {
  test("a device code redeemed twice, or by two at once: one wins, the other is invalid_grant", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    await decide(s.app, s.cookie, started.user_code, "approve");
    const [a, b] = await Promise.all([
      poll(s.app, started.device_code, s.devices.tv),
      poll(s.app, started.device_code, s.devices.tv),
    ]);
    assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 400]);
    const loser = a.statusCode === 400 ? a : b;
    assert.deepEqual(loser.json(), invalidGrant);
    const third = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(third.statusCode, 400);
    assert.deepEqual(third.json(), invalidGrant);
  });

  test("another client's device code is refused and stays its owner's", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    await decide(s.app, s.cookie, started.user_code, "approve");
    const stolen = await poll(s.app, started.device_code, { headers: basic(s.devices.cli.id, s.devices.cli.secret) });
    assert.equal(stolen.statusCode, 400);
    assert.deepEqual(stolen.json(), invalidGrant);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).statusCode, 200);
  });

  test("unknown codes, expired codes, a code whose browser session ended", async (t) => {
    const s = await setUpDevice(t);
    const unknown = await poll(s.app, "x".repeat(43), s.devices.tv);
    assert.equal(unknown.statusCode, 400);
    assert.deepEqual(unknown.json(), invalidGrant);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    await decide(s.app, s.cookie, started.user_code, "approve");
    // The person signs out of the browser in which they approved: the approval ends with it.
    const session = await s.app.inject({ url: "/me/sessions", headers: bearer(s.own.access_token) });
    assert.equal(session.statusCode, 200, session.body);
    await s.app.inject({ method: "POST", url: "/auth/revoke", ...form({ token: s.own.refresh_token }) });
    const ended = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(ended.statusCode, 400);
    assert.deepEqual(ended.json(), invalidGrant);
  });

  test("codes presented where they are not meant: the user code as the device code, a device code as an authorization code", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    await decide(s.app, s.cookie, started.user_code, "approve");
    for (const wrong of [started.user_code, started.user_code.replace("-", "")]) {
      const answer = await poll(s.app, wrong, s.devices.tv);
      assert.equal(answer.statusCode, 400);
      assert.deepEqual(answer.json(), invalidGrant);
    }
    const asCode = await s.app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { ...form({}).headers, ...basic(s.clients.partner.id, s.clients.partner.secret) },
      payload: new URLSearchParams({
        grant_type: "authorization_code",
        code: started.device_code,
        redirect_uri: "https://rp.example/callback",
        code_verifier: "v".repeat(43),
      }).toString(),
    });
    assert.equal(asCode.statusCode, 400);
    assert.equal(asCode.json().error, "invalid_grant");
    // Still the device's, once.
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).statusCode, 200);
  });

  test("clients: unknown, wrong secret, without the grant type, at both endpoints", async (t) => {
    const s = await setUpDevice(t);
    const unknown = await startDevice(s.app, "no-such-client");
    assert.equal(unknown.statusCode, 401);
    assert.deepEqual(unknown.json(), {
      error: "invalid_client",
      error_description: "Client authentication failed",
      detail: "Client authentication failed",
    });
    const wrongSecret = await s.app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      headers: { ...form({}).headers, ...basic(s.devices.cli.id, "wrong") },
      payload: "",
    });
    assert.equal(wrongSecret.statusCode, 401);
    assert.equal(wrongSecret.headers["www-authenticate"], 'Basic realm="clients"');
    assert.equal(wrongSecret.json().error, "invalid_client");
    // The partner is registered for authorization_code only.
    const partner = basic(s.clients.partner.id, s.clients.partner.secret);
    const notForDevices = await s.app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      headers: { ...form({}).headers, ...partner },
      payload: "",
    });
    assert.equal(notForDevices.statusCode, 400);
    const refusal = `This client is not registered for the ${DEVICE_GRANT} grant`;
    assert.deepEqual(notForDevices.json(), {
      error: "unauthorized_client",
      error_description: refusal,
      detail: refusal,
    });
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    const atToken = await poll(s.app, started.device_code, { headers: partner });
    assert.equal(atToken.statusCode, 400);
    assert.deepEqual(atToken.json(), { error: "unauthorized_client", error_description: refusal, detail: refusal });
    const noClient = await s.app.inject({
      method: "POST",
      url: "/auth/token",
      ...form({ grant_type: DEVICE_GRANT, device_code: started.device_code }),
    });
    assert.equal(noClient.statusCode, 400);
    // No client at all: the token endpoint's answer to a grant it only serves registered clients.
    assert.equal(noClient.json().detail, UNSUPPORTED_GRANT_TYPE);
  });

  test("bad input: scopes, repeated, huge and missing fields, JSON, wrong types", async (t) => {
    const s = await setUpDevice(t);
    const scope = await startDevice(s.app, s.devices.tv.id, "openid admin");
    assert.equal(scope.statusCode, 400);
    assert.deepEqual(scope.json(), {
      error: "invalid_scope",
      error_description: "A requested scope is not available to this client",
      detail: "A requested scope is not available to this client",
    });
    // The CLI is registered for openid email: profile is not its to ask.
    const cli = await s.app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      headers: { ...form({}).headers, ...basic(s.devices.cli.id, s.devices.cli.secret) },
      payload: "scope=openid+profile",
    });
    assert.equal(cli.json().error, "invalid_scope");
    const cases: [string, string, string, number][] = [
      [
        "/oauth/device_authorization",
        "application/x-www-form-urlencoded",
        `client_id=${s.devices.tv.id}&client_id=x`,
        400,
      ],
      ["/oauth/device_authorization", "application/x-www-form-urlencoded", `client_id=${"a".repeat(5000)}`, 400],
      [
        "/oauth/device_authorization",
        "application/x-www-form-urlencoded",
        `client_id=${s.devices.tv.id}&scope=${"openid ".repeat(500)}`,
        400,
      ],
      ["/oauth/device_authorization", "application/json", JSON.stringify({ client_id: s.devices.tv.id }), 415],
      ["/oauth/device_authorization", "application/x-www-form-urlencoded", "", 401],
      [
        "/auth/token",
        "application/x-www-form-urlencoded",
        `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=${s.devices.tv.id}`,
        400,
      ],
      [
        "/auth/token",
        "application/x-www-form-urlencoded",
        `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=${s.devices.tv.id}&device_code=${"a".repeat(5000)}`,
        400,
      ],
      [
        "/auth/token",
        "application/x-www-form-urlencoded",
        `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=${s.devices.tv.id}&device_code=a&device_code=b`,
        400,
      ],
    ];
    for (const [url, type, payload, status] of cases) {
      const answer = await s.app.inject({ method: "POST", url, headers: { "content-type": type }, payload });
      assert.equal(answer.statusCode, status, `${url} ${payload.slice(0, 80)}: ${answer.body}`);
      if (status === 415) continue;
      // A repeated field is refused by the token endpoint's form parser before the grant is known: the
      // spec's `detail` alone, as for every grant there. Anything else has RFC 6749's shape, also a field
      // the schema refuses before the client is known (too long).
      const repeatedAtToken = url === "/auth/token" && payload.includes("device_code=a&device_code=b");
      assert.equal(typeof answer.json().detail, "string", answer.body);
      if (!repeatedAtToken) assert.equal(answer.json().error_description, answer.json().detail, answer.body);
      if (!repeatedAtToken) assert.equal(typeof answer.json().error, "string", answer.body);
    }
    // The page with nonsense: 4xx pages, never a 5xx.
    for (const payload of ["user_code=%00%FF", `user_code=${"B".repeat(10_000)}`, "user_code[]=x&form_token=1"]) {
      const answer = await s.app.inject({
        method: "POST",
        url: "/device",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: s.cookie },
        payload,
      });
      assert.ok(answer.statusCode >= 400 && answer.statusCode < 500, `${payload}: ${answer.statusCode}`);
    }
    const huge = await s.app.inject({ url: `/device?user_code=${"x".repeat(5000)}`, headers: { cookie: s.cookie } });
    assert.equal(huge.statusCode, 200);
  });

  test("the page's forms: no cookie, no or another session's form token, a decision for another code", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    // Without the cookie: off to the sign-in page, coming back here; nothing decided.
    const anonymous = await s.app.inject({ url: `/device?user_code=${started.user_code}` });
    assert.equal(anonymous.statusCode, 303);
    assert.equal(
      anonymous.headers.location,
      `/sign-in?${new URLSearchParams({ continue: `/device?user_code=${started.user_code}` })}`,
    );
    const posted = await s.app.inject({
      method: "POST",
      url: "/device/decision",
      ...form({ user_code: started.user_code.replace("-", ""), decision: "approve" }),
    });
    assert.equal(posted.statusCode, 303);
    // Another person's session, and a form token of the first one.
    await createUser(s.store, "eve@example.com", "correct horse battery");
    const eve = await requestToken(s.app, { username: "eve@example.com", password: "correct horse battery" });
    const opened = await s.app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(eve.json().access_token),
    });
    const eveCookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const adaToken = await entryFormToken(s.app, s.cookie);
    const crossed = await s.app.inject({
      method: "POST",
      url: "/device",
      headers: { ...form({}).headers, cookie: eveCookie },
      payload: new URLSearchParams({ user_code: started.user_code, form_token: adaToken }).toString(),
    });
    assert.equal(crossed.statusCode, 400);
    assert.ok(crossed.body.includes("The form has expired"));
    // The decision token is bound to the code it was shown for.
    const other = await authorizeDevice(s.app, s.devices.tv.id);
    const confirm = await enterCode(s.app, s.cookie, started.user_code);
    const swapped = await s.app.inject({
      method: "POST",
      url: "/device/decision",
      headers: { ...form({}).headers, cookie: s.cookie },
      payload: new URLSearchParams({
        user_code: other.user_code.replace("-", ""),
        form_token: formToken(confirm.body),
        decision: "approve",
      }).toString(),
    });
    assert.equal(swapped.statusCode, 400);
    assert.equal((await poll(s.app, other.device_code, s.devices.tv)).json().error, "authorization_pending");
    s.clock.advanceSeconds(10);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).json().error, "authorization_pending");
  });

  test("user codes guessed: the sixth wrong code a minute is refused, per browser and per address", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    for (let i = 0; i < 5; i++) {
      const wrong = await enterCode(s.app, s.cookie, "BBBB-BBBB");
      assert.equal(wrong.statusCode, 400);
      assert.ok(wrong.body.includes("That code is not valid"));
    }
    // Even the right code is refused now, from this browser (another address too).
    const refused = await enterCode(s.app, s.cookie, started.user_code, "192.0.2.7");
    assert.equal(refused.statusCode, 429);
    assert.ok(refused.body.includes("Too many wrong codes. Wait a minute, then try again."));
    assert.ok(Number(refused.headers["retry-after"]) > 0);
    // And from this address, in another browser session.
    await createUser(s.store, "bob@example.com", "correct horse battery");
    const bob = await requestToken(s.app, { username: "bob@example.com", password: "correct horse battery" });
    const opened = await s.app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(bob.json().access_token),
    });
    const bobCookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    assert.equal((await enterCode(s.app, bobCookie, started.user_code)).statusCode, 429);
    // Another browser at another address is not held up.
    assert.equal((await enterCode(s.app, bobCookie, started.user_code, "192.0.2.8")).statusCode, 200);
  });
});

/** Two instances on one store (an SQLite file, or one PostgreSQL schema) and one set of counters. */
async function twoInstances(t: import("node:test").TestContext) {
  const clock = new TestClock();
  let stores: [UserStore, UserStore];
  if (process.env.TEST_BACKEND === "postgres") {
    const first = await openPostgresSchema(t, "device", clock.read);
    const url = new URL(process.env.POSTGRES_URL as string);
    const { openPostgresStore } = await import("../../src/store/postgres.ts");
    const second = await openPostgresStore({
      url: url.href,
      schema: first.schema,
      poolSize: 2,
      timeoutMs: 10_000,
      clock: clock.read,
    });
    t.after(() => second.close());
    stores = [first.store, second];
  } else {
    const path = join(scratchDir(t), "shared.sqlite");
    stores = [openSqliteStore(path, clock.read), openSqliteStore(path, clock.read)];
    t.after(async () => {
      await stores[0].close();
      await stores[1].close();
    });
  }
  const redisUrl = process.env.REDIS_URL;
  const counters = redisUrl
    ? new RedisCounterStore({ url: redisUrl, timeoutMs: 1000, prefix: `device-test-${process.pid}-${Date.now()}:` })
    : new MemoryCounterStore(clock.read);
  const config = testConfig({ oidcSigningKeys: [OIDC_KEY] });
  const apps: FastifyInstance[] = [];
  for (const store of stores) {
    const app = await buildApp({ config, store, clock: clock.read, counters });
    apps.push(app);
    t.after(() => app.close());
  }
  if (redisUrl) t.after(() => counters.close());
  return { apps: apps as [FastifyInstance, FastifyInstance], stores, clock };
}

describe("device grant across instances", () => {
  test("approved on one instance, redeemed on the other, once; wrong codes counted across both", async (t) => {
    const { apps, stores, clock } = await twoInstances(t);
    const [one, two] = apps;
    const devices = await registerDeviceClients(stores[0]);
    await createUser(stores[0], "ada@example.com", "correct horse battery");
    const login = await requestToken(one, { username: "ada@example.com", password: "correct horse battery" });
    const opened = await one.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(login.json().access_token),
    });
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;

    const started = await authorizeDevice(two, devices.tv.id);
    assert.equal((await poll(one, started.device_code, devices.tv)).json().error, "authorization_pending");
    // slow_down seen by the other instance: the device's pace is in the counters both share (Redis in CI).
    assert.equal((await poll(two, started.device_code, devices.tv)).json().error, "slow_down");
    assert.equal((await decide(one, cookie, started.user_code, "approve")).statusCode, 200);
    clock.advanceSeconds(10);
    const redeemed = await poll(two, started.device_code, devices.tv);
    assert.equal(redeemed.statusCode, 200, redeemed.body);
    assert.equal(typeof redeemed.json().id_token, "string");
    assert.deepEqual((await poll(one, started.device_code, devices.tv)).json(), invalidGrant);

    // Three wrong codes on one, two on the other: the sixth is refused on either.
    const next = await authorizeDevice(one, devices.tv.id);
    for (let i = 0; i < 3; i++) assert.equal((await enterCode(one, cookie, "BBBB-BBBB")).statusCode, 400);
    for (let i = 0; i < 2; i++) assert.equal((await enterCode(two, cookie, "BBBB-BBBB")).statusCode, 400);
    assert.equal((await enterCode(one, cookie, next.user_code)).statusCode, 429);
  });
});
