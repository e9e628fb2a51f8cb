// Sign-in with an upstream provider (issue 25), in process against a real
// HTTP provider whose token answer the test spoils: each failure (bad
// signature, wrong issuer or audience, another nonce, expired, an error
// answer, slow, down, replayed state, no pending sign-in, another browser)
// answers a 4xx page and creates nothing, worded "could not be reached" when
// the discovery, token or JWKS endpoint answers 5xx, late or not at all, and
// as a refusal for a 4xx (issue 32); the good answer creates one
// account, a second sign-in lands in it, amr says "fed"; linking an existing
// account only after its password (or automatically when allowed), the
// domain allow-list, closed sign-up, unlinking never the last way, and the
// admin's view. Both backends (TEST_BACKEND=postgres).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../src/app.ts";
import type { Config } from "../src/config.ts";
import { PROVIDER_REFUSED, PROVIDER_UNREACHABLE } from "../src/upstream/relying-party.ts";
import type { UpstreamConfig, UpstreamOidcProvider } from "../src/upstream/settings.ts";
import { DOMAIN_NOT_ALLOWED, NO_PENDING_SIGN_IN, SIGNUP_CLOSED } from "../src/upstream/sign-in.ts";
import { freePort } from "./browser/chromium.ts";
import { bearer, createUser, loginToken, openTestStore, requestToken, TestClock, testConfig } from "./helpers.ts";
import {
  addTestPasskey,
  type EndpointFault,
  type ProviderEndpoint,
  type ProviderOutage,
  type SpoiledAnswer,
  startSpoilableOidc,
  UPSTREAM_CLIENT,
} from "./upstream/fixture.ts";

const BASE = "http://localhost:8999";
const GRANT = "urn:user-token-service:grant-type:upstream";

function provider(issuer: string, extra: Partial<UpstreamOidcProvider> = {}): UpstreamOidcProvider {
  return {
    kind: "oidc",
    name: "corp",
    label: "Corp",
    issuer,
    clientId: UPSTREAM_CLIENT.id,
    clientSecret: UPSTREAM_CLIENT.secret,
    scopes: "openid email",
    allowedDomains: [],
    ...extra,
  };
}

/** The service with one upstream provider, "corp", at `issuer`. */
async function buildUpstreamApp(t: TestContext, issuer: string, options: SetUpOptions = {}) {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  const app = await buildApp({
    config: testConfig({
      publicUrl: BASE,
      upstream: {
        providers: [provider(issuer, options.provider)],
        autoLink: false,
        keepTokens: false,
        timeoutMs: 1000,
        ...options.upstream,
      },
      ...options.config,
    }),
    store,
    clock: clock.read,
  });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { app, store, clock };
}

interface SetUpOptions {
  upstream?: Partial<UpstreamConfig>;
  provider?: Partial<UpstreamOidcProvider>;
  config?: Partial<Config>;
}

async function setUp(t: TestContext, options: SetUpOptions = {}) {
  let mode: SpoiledAnswer = "good";
  let outage: ProviderOutage | undefined;
  const spoilable = await startSpoilableOidc(
    t,
    () => mode,
    () => outage,
  );
  const { app, store, clock } = await buildUpstreamApp(t, spoilable.issuer, options);

  /** The redirect to the provider: its state, and the browser's cookie. */
  async function start() {
    const response = await app.inject({ method: "GET", url: "/auth/upstream/corp/start" });
    assert.equal(response.statusCode, 303, response.body);
    const location = new URL(response.headers.location as string);
    const setCookie = String(response.headers["set-cookie"]);
    assert.match(setCookie, /^uts_upstream=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600$/);
    spoilable.state.nonce = location.searchParams.get("nonce") ?? "";
    return { state: location.searchParams.get("state") ?? "", cookie: setCookie.split(";")[0] as string, location };
  }
  const callback = (state: string, cookie: string | undefined, extra = "code=abc") =>
    app.inject({
      method: "GET",
      url: `/auth/upstream/corp/callback?${extra}&state=${encodeURIComponent(state)}`,
      headers: cookie === undefined ? {} : { cookie },
    });
  async function signIn() {
    const { state, cookie } = await start();
    const back = await callback(state, cookie);
    assert.equal(back.statusCode, 303, back.body);
    const ticket = /^\/sign-in#upstream=([\w-]+)$/.exec(back.headers.location as string)?.[1];
    assert.ok(ticket, back.headers.location);
    return { ticket, cookie };
  }
  const users = async () => (await store.list({ limit: 100 })).length;
  return {
    app,
    store,
    clock,
    spoilable,
    setMode: (next: SpoiledAnswer) => (mode = next),
    setOutage: (next: ProviderOutage | undefined) => (outage = next),
    start,
    callback,
    signIn,
    users,
  };
}

/** The error page: status, its policy headers and the one sentence it shows. */
function assertPage(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  detail: string,
) {
  assert.equal(response.statusCode, status);
  assert.equal(response.headers["content-type"], "text/html; charset=utf-8");
  assert.equal(response.headers["cache-control"], "no-store");
  const shown = /<p class="error" role="alert" id="upstream-error">([^<]*)<\/p>/.exec(response.body)?.[1];
  assert.equal(shown, detail.replace(/'/g, "&#39;"));
}

function claimsOf(token: string) {
  return JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString());
}

describe("sign-in with an upstream OpenID Connect provider", () => {
  test("first sign-in creates a verified account, the second lands in it; amr fed; the ticket works once", async (t) => {
    const s = await setUp(t);
    const first = await s.signIn();
    const tokens = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: first.ticket },
      { cookie: first.cookie },
    );
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.deepEqual(Object.keys(tokens.json()).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
    const claims = claimsOf(tokens.json().access_token);
    assert.equal(claims.sub, "spoil@example.com");
    assert.deepEqual(claims.amr, ["fed"]);
    const user = await s.store.findByEmail("spoil@example.com");
    assert.ok(user?.emailVerifiedAt);
    assert.equal(user.hashedPassword, "");
    // The ticket is spent.
    const again = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: first.ticket },
      { cookie: first.cookie },
    );
    assert.equal(again.statusCode, 400);
    assert.deepEqual(again.json(), { detail: "The sign-in has expired or was already used: start again" });

    const second = await s.signIn();
    // A ticket from another browser (without its cookie) is refused, and spent.
    const stolen = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: second.ticket },
      { cookie: "uts_upstream=other" },
    );
    assert.equal(stolen.statusCode, 400);
    const third = await s.signIn();
    const back = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: third.ticket },
      { cookie: third.cookie },
    );
    assert.equal(back.statusCode, 200);
    assert.equal(claimsOf(back.json().access_token).sub, "spoil@example.com");
    assert.equal(await s.users(), 1);
    const identities = await s.app.inject({
      method: "GET",
      url: "/me/identities",
      headers: bearer(back.json().access_token),
    });
    assert.equal(identities.statusCode, 200);
    const [identity] = identities.json().items;
    assert.deepEqual(
      { ...identity, id: "", created_at: "", last_used_at: "" },
      {
        id: "",
        provider: "corp",
        issuer: s.spoilable.issuer,
        subject: "spoil-1",
        email: "spoil@example.com",
        created_at: "",
        last_used_at: "",
      },
    );
    // The last way to sign in of an account without a password cannot be unlinked.
    const unlink = await s.app.inject({
      method: "DELETE",
      url: `/me/identities/${identity.id}`,
      headers: bearer(back.json().access_token),
    });
    assert.equal(unlink.statusCode, 409);
    assert.deepEqual(unlink.json(), {
      detail:
        "This is the account's last way to sign in: set a password (through a password reset) or link another first",
    });
  });

  for (const [mode, detail] of [
    ["bad-signature", PROVIDER_REFUSED],
    ["wrong-issuer", PROVIDER_REFUSED],
    ["wrong-audience", PROVIDER_REFUSED],
    ["other-nonce", PROVIDER_REFUSED],
    ["expired", PROVIDER_REFUSED],
    ["error", PROVIDER_REFUSED],
    ["slow", PROVIDER_UNREACHABLE],
  ] as const) {
    test(`a token answer that is ${mode}: a 400 page, nothing created`, async (t) => {
      const s = await setUp(t);
      s.setMode(mode);
      const { state, cookie } = await s.start();
      const began = Date.now();
      const back = await s.callback(state, cookie);
      assertPage(back, 400, detail);
      assert.ok(Date.now() - began < 4000, "the timeout ends a slow provider's call");
      assert.doesNotMatch(back.body, /secret upstream words/);
      assert.equal(await s.users(), 0);
    });
  }

  // Issue 32, defect 14: the provider failing is an outage ("could not be reached") at every endpoint the
  // service calls when it answers 5xx, late or not at all; any other answer is a refusal.
  for (const [at, how, detail] of [
    ["discovery", "500", PROVIDER_UNREACHABLE],
    ["discovery", "503-html", PROVIDER_UNREACHABLE],
    ["discovery", "slow", PROVIDER_UNREACHABLE],
    ["discovery", "reset", PROVIDER_UNREACHABLE],
    ["discovery", "404", PROVIDER_REFUSED],
    ["token", "500", PROVIDER_UNREACHABLE],
    ["token", "503-html", PROVIDER_UNREACHABLE],
    ["token", "slow", PROVIDER_UNREACHABLE],
    ["token", "reset", PROVIDER_UNREACHABLE],
    ["token", "404", PROVIDER_REFUSED],
    ["jwks", "500", PROVIDER_UNREACHABLE],
    ["jwks", "503-html", PROVIDER_UNREACHABLE],
    ["jwks", "slow", PROVIDER_UNREACHABLE],
    ["jwks", "reset", PROVIDER_UNREACHABLE],
    ["jwks", "404", PROVIDER_REFUSED],
  ] as [ProviderEndpoint, EndpointFault, string][]) {
    test(`the provider's ${at} endpoint answering ${how}: "${detail === PROVIDER_UNREACHABLE ? "could not be reached" : "did not confirm"}", nothing created; then it works again`, async (t) => {
      const s = await setUp(t);
      s.setOutage({ at, how });
      const began = Date.now();
      let page: Awaited<ReturnType<typeof s.callback>>;
      if (at === "discovery") {
        // Discovery comes first, when the sign-in starts.
        page = await s.app.inject({ method: "GET", url: "/auth/upstream/corp/start" });
      } else {
        const { state, cookie } = await s.start();
        page = await s.callback(state, cookie);
      }
      assertPage(page, 400, detail);
      assert.ok(Date.now() - began < 4000, "the timeout ends a slow provider's call");
      assert.doesNotMatch(page.body, /secret upstream words/);
      assert.equal(await s.users(), 0);
      // The provider back: a sign-in goes through (nothing of the failure was kept, a failed discovery
      // included).
      s.setOutage(undefined);
      await s.signIn();
      assert.equal(await s.users(), 1);
    });
  }

  test("replayed state, no pending sign-in, another browser, the provider's error: 400 pages, nothing created", async (t) => {
    const s = await setUp(t);
    const { state, cookie } = await s.start();
    assertPage(await s.callback(state, "uts_upstream=someone-else"), 400, NO_PENDING_SIGN_IN);
    // That attempt spent the state: the real browser cannot use it either.
    assertPage(await s.callback(state, cookie), 400, NO_PENDING_SIGN_IN);
    const next = await s.start();
    assertPage(await s.callback(next.state, undefined), 400, NO_PENDING_SIGN_IN);
    assertPage(await s.callback("never-issued", next.cookie), 400, NO_PENDING_SIGN_IN);
    const denied = await s.start();
    assertPage(
      await s.callback(denied.state, denied.cookie, "error=access_denied"),
      400,
      "The sign-in was cancelled or refused at the provider.",
    );
    const good = await s.start();
    assert.equal((await s.callback(good.state, good.cookie)).statusCode, 303);
    assertPage(await s.callback(good.state, good.cookie), 400, NO_PENDING_SIGN_IN);
    // An expired pending sign-in.
    const late = await s.start();
    s.clock.advanceSeconds(601);
    assertPage(await s.callback(late.state, late.cookie), 400, NO_PENDING_SIGN_IN);
    assert.equal(await s.users(), 1);
    // Housekeeping deletes pending sign-ins and tickets an hour past their expiry.
    s.clock.advanceSeconds(3600);
    assert.ok((await s.store.purgeUpstreamPending(new Date(s.clock.now - 3_600_000).toISOString(), 1000)) >= 5);
    assert.equal(await s.store.purgeUpstreamPending(new Date(s.clock.now).toISOString(), 1000), 0);
  });

  test("the provider down: the start answers a 400 page", async (t) => {
    const port = await freePort();
    const { app } = await buildUpstreamApp(t, `http://localhost:${port}`);
    assertPage(await app.inject({ method: "GET", url: "/auth/upstream/corp/start" }), 400, PROVIDER_UNREACHABLE);
    assertPage(
      await app.inject({ method: "GET", url: "/auth/upstream/nobody/start" }),
      404,
      "There is no such sign-in provider.",
    );
  });

  test("the domain allow-list and closed sign-up refuse with a 403 page, nothing created", async (t) => {
    const s = await setUp(t, { provider: { allowedDomains: ["corp.example"] } });
    const { state, cookie } = await s.start();
    assertPage(await s.callback(state, cookie), 403, DOMAIN_NOT_ALLOWED);
    s.spoilable.state.email = "ada@corp.example";
    const ok = await s.start();
    assert.equal((await s.callback(ok.state, ok.cookie)).statusCode, 303);
    assert.equal(await s.users(), 1);

    const closed = await setUp(t, { config: { signupOpen: false } });
    const begun = await closed.start();
    assertPage(await closed.callback(begun.state, begun.cookie), 403, SIGNUP_CLOSED);
    assert.equal(await closed.users(), 0);
  });

  test("an existing account is linked only after its password; then unlinking works while a password remains", async (t) => {
    const s = await setUp(t);
    const owner = await createUser(s.store, "spoil@example.com", "correct horse battery");
    const { state, cookie } = await s.start();
    const back = await s.callback(state, cookie);
    const ticket = /^\/sign-in#link=([\w-]+)$/.exec(back.headers.location as string)?.[1];
    assert.ok(ticket, back.headers.location);
    assert.deepEqual(await s.store.listIdentities(owner.id), []);
    const token = await loginToken(s.app, "spoil@example.com", "correct horse battery");
    const link = (withCookie: string) =>
      s.app.inject({
        method: "POST",
        url: "/auth/upstream/link",
        headers: { ...bearer(token), cookie: withCookie },
        payload: { ticket },
      });
    const linked = await link(cookie);
    assert.equal(linked.statusCode, 204, linked.body);
    const replay = await link(cookie);
    assert.equal(replay.statusCode, 400);
    assert.deepEqual(replay.json(), {
      detail: "The link has expired or was already used: sign in with the provider again",
    });
    const [identity] = await s.store.listIdentities(owner.id);
    assert.equal(identity?.subject, "spoil-1");
    // Now the upstream sign-in lands in that account.
    const again = await s.signIn();
    const tokens = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: again.ticket },
      { cookie: again.cookie },
    );
    assert.equal(claimsOf(tokens.json().access_token).sub, "spoil@example.com");
    assert.equal(await s.users(), 1);
    // An admin sees the identity; then the owner, who has a password, unlinks it.
    await createUser(s.store, "admin@example.com", "correct horse battery");
    const admin = await s.store.findByEmail("admin@example.com");
    await s.store.update(admin!.id, { isAdmin: true });
    const adminToken = await loginToken(s.app, "admin@example.com", "correct horse battery");
    const seen = await s.app.inject({
      method: "GET",
      url: `/users/${owner.id}/identities`,
      headers: bearer(adminToken),
    });
    assert.equal(seen.statusCode, 200);
    assert.deepEqual(
      seen.json().items.map((each: { subject: string }) => each.subject),
      ["spoil-1"],
    );
    const notAdmin = await s.app.inject({
      method: "GET",
      url: `/users/${owner.id}/identities`,
      headers: bearer(token),
    });
    assert.equal(notAdmin.statusCode, 403);
    const unlink = await s.app.inject({
      method: "DELETE",
      url: `/me/identities/${identity!.id}`,
      headers: bearer(token),
    });
    assert.equal(unlink.statusCode, 204);
    assert.deepEqual(await s.store.listIdentities(owner.id), []);
    const events = await s.store.listEvents({ userId: owner.id, limit: 50, type: "upstream" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["linked:corp", "unlinked:corp"],
    );
  });

  test("automatic linking, when allowed, links a verified address without the password; never an unverified one", async (t) => {
    const s = await setUp(t, { upstream: { autoLink: true } });
    const owner = await createUser(s.store, "spoil@example.com", "correct horse battery");
    // The account's own address is verified too (an account never verified is never linked automatically:
    // test/security/account-linking.test.ts).
    await s.store.update(owner.id, { emailVerifiedAt: new Date(s.clock.now).toISOString() });
    s.setMode("no-verified-email");
    const unverified = await s.start();
    assert.match(
      (await s.callback(unverified.state, unverified.cookie)).headers.location as string,
      /^\/sign-in#link=/,
    );
    s.setMode("good");
    const { ticket, cookie } = await s.signIn();
    const tokens = await requestToken(s.app, { grant_type: GRANT, upstream_ticket: ticket }, { cookie });
    assert.equal(tokens.statusCode, 200);
    assert.equal(claimsOf(tokens.json().access_token).sub, "spoil@example.com");
    assert.equal((await s.store.listIdentities(owner.id)).length, 1);
  });

  test("an account with a second factor is asked for it after the upstream sign-in", async (t) => {
    const s = await setUp(t);
    const first = await s.signIn();
    await requestToken(s.app, { grant_type: GRANT, upstream_ticket: first.ticket }, { cookie: first.cookie });
    const user = await s.store.findByEmail("spoil@example.com");
    await addTestPasskey(s.store, user!.id);
    const { ticket, cookie } = await s.signIn();
    const answer = await requestToken(s.app, { grant_type: GRANT, upstream_ticket: ticket }, { cookie });
    assert.equal(answer.statusCode, 403, answer.body);
    assert.equal(answer.json().error, "mfa_required");
    assert.deepEqual(answer.json().mfa_factors, ["webauthn"]);
    // The challenge remembers the first factor: the session's amr will say "fed", not "pwd".
    const challenge = await s.store.findMfaChallenge(
      createHash("sha256").update(answer.json().mfa_token).digest("base64url"),
    );
    assert.equal(challenge?.firstFactor, "fed");
  });
});
