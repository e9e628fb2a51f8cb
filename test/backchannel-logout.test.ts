// Back-channel logout (OpenID Connect Back-Channel Logout 1.0) end to end:
// the service listens on a real port, relying parties sign in through the
// code flow, and a real HTTP receiver (logout-receiver.ts) verifies every
// logout token with jose against the service's JWKS. Every route that ends
// a session tells the relying parties: RP-initiated logout, the user's
// sign-out, a password change, an admin's deactivation and deletion, an
// admin ending a session, all of them or an app's access (issue 35),
// consent revocation, client deletion, refresh-token reuse. One logout per
// client and sid; none for a client without a backchannel_logout_uri. A
// receiver answering 500 gets a freshly signed token again; after the
// schedule the logout is given up visibly; a slow receiver is a failure.
// SQLite by default, PostgreSQL with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Config } from "../src/config.ts";
import { LOGOUT_RETRY_SCHEDULE_MS } from "../src/oidc/backchannel-logout.ts";
import { createMetrics, type Metrics } from "../src/operations/metrics.ts";
import { bearer, caller, createUser, requestToken, signedInUser } from "./helpers.ts";
import { LogoutReceiver } from "./logout-receiver.ts";
import { type OidcService, pkcePair, startOidcService } from "./oidc/fixture.ts";

const RP = "https://rp.example";
const PASSWORD = "correct horse battery";
const EVENTS = { "http://schemas.openid.net/event/backchannel-logout": {} };
const FAST: Partial<Config> = {
  webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 50 },
};

interface World extends OidcService {
  /** The partner app's receiver (its backchannel_logout_uri). */
  partner: LogoutReceiver;
  /** The first-party Post App's receiver. */
  post: LogoutReceiver;
  user: { id: string };
  metrics: Metrics;
}

async function receiver(t: TestContext, issuer: string, audience: string, now: () => number) {
  const started = new LogoutReceiver(issuer, audience, now);
  await started.start();
  t.after(() => started.stop());
  return started;
}

/** The service, a user, and receivers for the partner app and Post App (the SPA has no URI). */
async function world(t: TestContext, overrides: Partial<Config> = {}): Promise<World> {
  const metrics = createMetrics();
  const service = await startOidcService(t, RP, { ...FAST, ...overrides }, { metrics });
  const now = service.clock.read;
  const partner = await receiver(t, service.issuer, service.clients.partner.id, now);
  const post = await receiver(t, service.issuer, service.clients.post.id, now);
  await service.store.updateClient(service.clients.partner.id, { backchannelLogoutUri: partner.url });
  await service.store.updateClient(service.clients.post.id, { backchannelLogoutUri: post.url });
  const user = await createUser(service.store, "ada@example.com", PASSWORD);
  return { ...service, partner, post, user, metrics };
}

/** Signs in (the password grant) and opens the browser session: its cookie, and the login's tokens. */
async function signIn(app: FastifyInstance) {
  const login = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();
  const opened = await app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.access_token),
  });
  assert.equal(opened.statusCode, 204, opened.body);
  const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
  return { cookie, accessToken: login.access_token as string, refreshToken: login.refresh_token as string };
}

const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1] as string, "base64url").toString("utf8")) as Record<string, unknown>;

/** The code flow for one app in the signed-in browser: its tokens, and the ID token's sid. */
async function codeFlow(w: World, cookie: string, app: "partner" | "post" | "spa") {
  const client = w.clients[app];
  const redirect = { partner: `${RP}/callback`, post: `${RP}/post/callback`, spa: `${RP}/spa/callback` }[app];
  if (app === "partner") await w.store.grantConsent(w.user.id, client.id, "openid email", new Date().toISOString());
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.id,
    redirect_uri: redirect,
    scope: "openid email",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    state: "s",
    nonce: "n",
  });
  const answer = await w.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
  assert.equal(answer.statusCode, 303, answer.body);
  const code = new URL(answer.headers.location as string).searchParams.get("code") as string;
  const form = { grant_type: "authorization_code", code, redirect_uri: redirect, code_verifier: pkce.verifier };
  // The partner app authenticates with client_secret_basic, Post App with client_secret_post, the SPA with none.
  const headers: Record<string, string> =
    app === "partner"
      ? { authorization: `Basic ${Buffer.from(`${client.id}:${w.clients.partner.secret}`).toString("base64")}` }
      : {};
  const credentials: Record<string, string> =
    app === "post"
      ? { client_id: client.id, client_secret: w.clients.post.secret }
      : app === "spa"
        ? { client_id: client.id }
        : {};
  const tokens = (await requestToken(w.app, { ...form, ...credentials }, headers)).json();
  assert.equal(typeof tokens.id_token, "string", JSON.stringify(tokens));
  const sid = claimsOf(tokens.id_token).sid as string;
  const refresh = (refreshToken: string = tokens.refresh_token) =>
    requestToken(w.app, { grant_type: "refresh_token", refresh_token: refreshToken, ...credentials }, headers);
  return { ...tokens, sid, refresh } as {
    id_token: string;
    refresh_token: string;
    sid: string;
    refresh: typeof refresh;
  };
}

/** The claims a logout token for this client and browser session must carry, at the clock's second. */
function expectedClaims(w: World, clientId: string, sid: string, jti: unknown) {
  const iat = w.clock.seconds;
  return { iss: w.issuer, aud: clientId, iat, exp: iat + 120, jti, sub: w.user.id, sid, events: EVENTS };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The next verified logout at `at`: checked whole against the ID token's sid. */
async function nextLogout(w: World, at: LogoutReceiver, clientId: string, sid: string, count: number) {
  await at.waitFor(() => at.accepted.length >= count);
  const delivery = at.accepted[count - 1];
  assert.ok(delivery);
  assert.match(String(delivery.claims?.jti), UUID);
  assert.deepEqual(delivery.claims, expectedClaims(w, clientId, sid, delivery.claims?.jti));
  assert.equal(delivery.headers["content-type"], "application/x-www-form-urlencoded");
  assert.deepEqual([...new URLSearchParams(delivery.body).keys()], ["logout_token"]);
  return delivery;
}

/**
 * Resolves when the failed attempt `attempts` of the logout for `sid` is written down (due later than
 * now), so that moving the clock comes after the worker read it.
 */
async function recorded(w: World, sid: string, attempts: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await w.store.listBackchannelLogouts({ limit: 20 });
    const row = rows.find((logout) => logout.sid === sid);
    if (row && row.attempts === attempts && row.nextAttemptAt > new Date(w.clock.now).toISOString()) return;
    if (Date.now() > deadline) throw new Error(`attempt ${attempts} not recorded: ${JSON.stringify(rows)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A little longer than the worker needs to deliver anything more that was queued. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 400));

/** Ends the session by revoking its refresh token, then waits (5 s at most) for its logout's first failed attempt. */
async function revokeAndAwaitFirstFailure(w: World, refreshToken: string) {
  await w.app.inject({
    method: "POST",
    url: "/auth/revoke",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({ token: refreshToken }).toString(),
  });
  let pending: Awaited<ReturnType<typeof w.store.listBackchannelLogouts>> = [];
  const deadline = Date.now() + 5000;
  while (pending[0]?.lastError == null && Date.now() < deadline) {
    pending = await w.store.listBackchannelLogouts({ limit: 5 });
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return pending;
}

describe("back-channel logout", () => {
  test("discovery says so: backchannel_logout_supported and backchannel_logout_session_supported", async (t) => {
    const w = await world(t);
    const answer = await w.app.inject({ url: "/.well-known/openid-configuration" });
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.json().backchannel_logout_supported, true);
    assert.equal(answer.json().backchannel_logout_session_supported, true);
  });

  test("RP-initiated logout: one verified token per client and sid; the apps' sessions end; none for a client without a URI", async (t) => {
    const w = await world(t);
    const { cookie } = await signIn(w.app);
    const first = await codeFlow(w, cookie, "partner");
    // A second sign-in of the same app in the same browser session: still one logout for the pair.
    const second = await codeFlow(w, cookie, "partner");
    const post = await codeFlow(w, cookie, "post");
    const spa = await codeFlow(w, cookie, "spa");
    assert.equal(first.sid, second.sid);
    assert.equal(first.sid, post.sid);
    const ended = await w.app.inject({
      url: `/oauth/logout?${new URLSearchParams({ id_token_hint: first.id_token })}`,
      headers: { cookie },
    });
    assert.equal(ended.statusCode, 200, ended.body);
    await nextLogout(w, w.partner, w.clients.partner.id, first.sid, 1);
    await nextLogout(w, w.post, w.clients.post.id, first.sid, 1);
    await settle();
    assert.equal(w.partner.deliveries.length, 1);
    assert.equal(w.post.deliveries.length, 1);
    const queued = await w.store.listBackchannelLogouts({ limit: 10 });
    assert.deepEqual(
      queued.map((row) => [row.clientId, row.sid, row.status, row.attempts]).sort(),
      [
        [w.clients.partner.id, first.sid, "sent", 1],
        [w.clients.post.id, first.sid, "sent", 1],
      ].sort(),
    );
    // Every app's session ended with the browser session, the SPA's too (it has no URI, and gets nothing).
    for (const tokens of [first, second, post, spa]) {
      const refresh = await tokens.refresh();
      assert.equal(refresh.statusCode, 400, refresh.body);
    }
    // Each ended app session has its audit event (and so its webhook session.ended).
    const events = await w.store.listEvents({ userId: w.user.id, limit: 100, type: "session_revocation" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["revoked", "browser_session_ended", "browser_session_ended", "browser_session_ended", "browser_session_ended"],
    );
  });

  test("every route that ends a session tells the relying party", async (t) => {
    const w = await world(t);
    const call = caller(w.app);
    const admin = await signedInUser(w.app, w.store, "admin@example.com", PASSWORD, true);
    let told = 0;
    /** A fresh sign-in of the partner app; `end` ends it by some route; the partner is told. */
    async function endsWithLogout(
      route: string,
      end: (signedIn: Awaited<ReturnType<typeof signIn>>, app: Awaited<ReturnType<typeof codeFlow>>) => Promise<void>,
    ) {
      const signedIn = await signIn(w.app);
      const app = await codeFlow(w, signedIn.cookie, "partner");
      await end(signedIn, app);
      told += 1;
      await nextLogout(w, w.partner, w.clients.partner.id, app.sid, told).catch((error) => {
        throw new Error(`${route}: ${error.message}`);
      });
    }

    await endsWithLogout("sign-out (RFC 7009 revocation of the login's refresh token)", async ({ refreshToken }) => {
      const revoked = await w.app.inject({
        method: "POST",
        url: "/auth/revoke",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ token: refreshToken }).toString(),
      });
      assert.equal(revoked.statusCode, 200);
    });
    await endsWithLogout("the user ends the browser session from the account", async ({ accessToken, cookie }) => {
      const sessions = (await call("GET", "/me/sessions", accessToken)).json().items as { id: string }[];
      const sid = cookie.split("=")[1]?.split(".")[0] as string;
      assert.ok(sessions.some((session) => session.id === sid));
      const other = await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
      assert.equal((await call("DELETE", `/me/sessions/${sid}`, other.json().access_token)).statusCode, 204);
    });
    await endsWithLogout("refresh-token reuse", async (_signedIn, app) => {
      assert.equal((await app.refresh()).statusCode, 200);
      w.clock.advanceSeconds(120);
      assert.equal((await app.refresh()).statusCode, 400);
    });
    await endsWithLogout("consent revocation", async ({ accessToken }) => {
      const removed = await call("DELETE", `/me/apps/${w.clients.partner.id}`, accessToken);
      assert.equal(removed.statusCode, 204);
    });
    await endsWithLogout("password change", async ({ accessToken }) => {
      const changed = await call("PUT", "/me/password", accessToken, {
        current_password: PASSWORD,
        new_password: PASSWORD,
      });
      assert.equal(changed.statusCode, 204, changed.body);
    });
    await endsWithLogout("an admin's deactivation", async () => {
      const patched = await call("PATCH", `/users/${w.user.id}`, admin.token, { is_active: false });
      assert.equal(patched.statusCode, 200, patched.body);
      await w.store.update(w.user.id, { isActive: true });
    });
    // Issue 35's admin users routes end sessions by the same verbs as the user's own routes.
    await endsWithLogout("an admin ends the browser session", async ({ cookie }) => {
      const sid = cookie.split("=")[1]?.split(".")[0] as string;
      const ended = await call("DELETE", `/users/${w.user.id}/sessions/${sid}`, admin.token);
      assert.equal(ended.statusCode, 204, ended.body);
    });
    await endsWithLogout("an admin ends all the user's sessions", async () => {
      assert.equal((await call("DELETE", `/users/${w.user.id}/sessions`, admin.token)).statusCode, 204);
    });
    await endsWithLogout("an admin revokes the app", async () => {
      const revoked = await call("DELETE", `/users/${w.user.id}/apps/${w.clients.partner.id}`, admin.token);
      assert.equal(revoked.statusCode, 204, revoked.body);
    });
    await endsWithLogout("an admin's deletion", async () => {
      assert.equal((await call("DELETE", `/users/${w.user.id}`, admin.token)).statusCode, 204);
    });
    await settle();
    assert.equal(w.partner.deliveries.length, told);
    assert.equal(w.post.deliveries.length, 0);
  });

  test("deleting a client forgets its consents, ends its sessions and tells it", async (t) => {
    const w = await world(t);
    const admin = await signedInUser(w.app, w.store, "admin@example.com", PASSWORD, true);
    const { cookie } = await signIn(w.app);
    const partner = await codeFlow(w, cookie, "partner");
    const post = await codeFlow(w, cookie, "post");
    const removed = await caller(w.app)("DELETE", `/clients/${w.clients.partner.id}`, admin.token);
    assert.equal(removed.statusCode, 204);
    await nextLogout(w, w.partner, w.clients.partner.id, partner.sid, 1);
    assert.equal(await w.store.findConsent(w.user.id, w.clients.partner.id), undefined);
    const events = await w.store.listEvents({ userId: w.user.id, limit: 100, type: "session_revocation" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["client_deleted"],
    );
    // The other app and the browser session live on.
    const refreshed = await post.refresh();
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    await settle();
    assert.equal(w.post.deliveries.length, 0);
  });

  test("a receiver answering 500 gets a freshly signed token again; after the schedule the logout is given up, visibly", async (t) => {
    const w = await world(t);
    const { cookie, refreshToken } = await signIn(w.app);
    const app = await codeFlow(w, cookie, "partner");
    w.partner.forceStatus = 500;
    const revoke = (token: string) =>
      w.app.inject({
        method: "POST",
        url: "/auth/revoke",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ token }).toString(),
      });
    await revoke(refreshToken);
    await w.partner.waitFor(() => w.partner.deliveries.length === 1);
    await recorded(w, app.sid, 1);
    const [pending] = await w.store.listBackchannelLogouts({ limit: 1 });
    assert.equal(pending?.status, "pending");
    assert.equal(pending?.lastError, "answered 500");
    // The admin overview (issue 35) counts it as retrying.
    assert.deepEqual((await w.store.overviewCounts(w.clock.now)).backchannelLogouts, { failed: 0, retrying: 1 });
    // Five seconds later it goes again, signed anew (another jti, the new time), and is accepted.
    w.partner.forceStatus = undefined;
    w.clock.advanceSeconds((LOGOUT_RETRY_SCHEDULE_MS[0] as number) / 1000);
    const retried = await nextLogout(w, w.partner, w.clients.partner.id, app.sid, 1);
    assert.notEqual(retried.claims?.jti, w.partner.deliveries[0]?.claims?.jti);

    // Another sign-in, a receiver that stays broken: six attempts within the hour, then given up.
    const again = await signIn(w.app);
    const second = await codeFlow(w, again.cookie, "partner");
    w.partner.forceStatus = 500;
    await revoke(again.refreshToken);
    const before = w.partner.deliveries.length;
    await w.partner.waitFor(() => w.partner.deliveries.length === before + 1);
    await recorded(w, second.sid, 1);
    for (const [index, delay] of LOGOUT_RETRY_SCHEDULE_MS.entries()) {
      w.clock.advanceSeconds(delay / 1000);
      await w.partner.waitFor(() => w.partner.deliveries.length === before + index + 2);
      if (index < LOGOUT_RETRY_SCHEDULE_MS.length - 1) await recorded(w, second.sid, index + 2);
    }
    assert.equal(LOGOUT_RETRY_SCHEDULE_MS.reduce((sum, delay) => sum + delay, 0) <= 3_600_000, true);
    const last = w.partner.deliveries.at(-1);
    assert.equal(last?.claims?.sid, second.sid);
    let failed: Awaited<ReturnType<typeof w.store.listBackchannelLogouts>> = [];
    const deadline = Date.now() + 5000;
    while (failed.length === 0 && Date.now() < deadline) {
      failed = await w.store.listBackchannelLogouts({ status: "failed", limit: 5 });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.deepEqual(
      failed.map((row) => [row.clientId, row.sid, row.attempts, row.lastError]),
      [[w.clients.partner.id, second.sid, 6, "answered 500"]],
    );
    assert.deepEqual((await w.store.overviewCounts(w.clock.now)).backchannelLogouts, { failed: 1, retrying: 0 });
    const events = await w.store.listEvents({ userId: w.user.id, limit: 100, type: "oidc" });
    assert.deepEqual(
      events.filter((event) => event.outcome === "backchannel_logout_failed").map((event) => event.clientAddress),
      [null],
    );
    const exposition = await w.metrics.exposition();
    assert.match(exposition, /^backchannel_logouts_total\{result="failed"\} 1$/m);
    assert.match(exposition, /^backchannel_logouts_total\{result="sent"\} 1$/m);
    assert.match(exposition, /^backchannel_logouts_total\{result="retry"\} 6$/m);
    await settle();
    assert.equal(w.partner.deliveries.length, before + 6);
  });

  test("a logout still pending covers the next ending of the same client and sid", async (t) => {
    const w = await world(t);
    const call = caller(w.app);
    const { cookie, accessToken } = await signIn(w.app);
    w.partner.forceStatus = 500;
    const first = await codeFlow(w, cookie, "partner");
    assert.equal((await call("DELETE", `/me/apps/${w.clients.partner.id}`, accessToken)).statusCode, 204);
    await w.partner.waitFor(() => w.partner.deliveries.length === 1);
    await recorded(w, first.sid, 1);
    const second = await codeFlow(w, cookie, "partner");
    assert.equal(second.sid, first.sid);
    assert.equal((await call("DELETE", `/me/apps/${w.clients.partner.id}`, accessToken)).statusCode, 204);
    const rows = await w.store.listBackchannelLogouts({ limit: 10 });
    assert.deepEqual(
      rows.map((row) => [row.clientId, row.sid, row.status, row.attempts]),
      [[w.clients.partner.id, first.sid, "pending", 1]],
    );
    const events = await w.store.listEvents({ userId: w.user.id, limit: 100, type: "session_revocation" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["consent_revoked", "consent_revoked"],
    );
  });

  test("a receiver slower than WEBHOOK_TIMEOUT_MS is a failure, tried again later", async (t) => {
    const w = await world(t, {
      webhooks: { refusePrivateAddresses: false, timeoutMs: 300, secretGraceSeconds: 3600, pollIntervalMs: 50 },
    });
    const { cookie, refreshToken } = await signIn(w.app);
    const app = await codeFlow(w, cookie, "partner");
    w.partner.hang = true;
    const pending = await revokeAndAwaitFirstFailure(w, refreshToken);
    assert.deepEqual(
      pending.map((row) => [row.status, row.attempts, row.lastError]),
      [["pending", 1, "no answer within 300 ms"]],
    );
    w.partner.hang = false;
    w.clock.advanceSeconds(5);
    await nextLogout(w, w.partner, w.clients.partner.id, app.sid, 1);
  });

  test("private addresses are refused under WEBHOOK_REFUSE_PRIVATE_ADDRESSES", async (t) => {
    const w = await world(t, {
      webhooks: { refusePrivateAddresses: true, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 50 },
    });
    const { cookie, refreshToken } = await signIn(w.app);
    await codeFlow(w, cookie, "partner");
    const pending = await revokeAndAwaitFirstFailure(w, refreshToken);
    assert.deepEqual(
      pending.map((row) => [row.status, row.attempts, row.lastError]),
      [["pending", 1, "the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES)"]],
    );
    assert.equal(w.partner.deliveries.length, 0);
  });
});
