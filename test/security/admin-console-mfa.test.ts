// ADMIN_CONSOLE_REQUIRE_MFA enforced by the server (issue 35), in process:
// with the setting on, the console's authorization request sends a browser
// session without a second factor to sign in again (once), and the token
// endpoint gives the console's client no token for a sign-in without a second
// factor or a user without one (invalid_grant, words that say how to add one,
// audited); a code or a session from before the setting is refused there too.
// With a second factor the console gets its tokens; with the setting off, and
// for every other client, nothing changes.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { CONSOLE_CLIENT_ID, ensureConsoleClient } from "../../src/admin/console-client.ts";
import { buildApp } from "../../src/app.ts";
import type { Config } from "../../src/config.ts";
import { MFA_OTP_GRANT } from "../../src/core/schemas.ts";
import { INVALID_CLIENT_REFRESH } from "../../src/oidc/code-grant.ts";
import { SECOND_FACTOR_REQUIRED, signedInWithSecondFactor } from "../../src/oidc/second-factor-rule.ts";
import { bearer, buildTestApp, createUser, requestToken, type TestApp, testConfig } from "../helpers.ts";
import { OIDC_KEY, pkcePair } from "../oidc/fixture.ts";
import { codeAt } from "../totp.ts";

const EMAIL = "admin@example.com";
const PASSWORD = "correct horse battery";
const BASE = "http://127.0.0.1:8000";
const CALLBACK = `${BASE}/admin/`;
const consoleConfig = (requireMfa: boolean): Partial<Config> => ({
  oidcSigningKeys: [OIDC_KEY],
  adminConsole: { enabled: true, requireMfa },
});

async function consoleService(t: TestContext, requireMfa: boolean) {
  const service = await buildTestApp(t, consoleConfig(requireMfa));
  await ensureConsoleClient(service.store, BASE);
  const admin = await createUser(service.store, EMAIL, PASSWORD);
  await service.store.update(admin.id, { isAdmin: true });
  return { ...service, admin };
}

/** Turns on an authenticator app for the holder of `token`; the clock moves past the confirming step. */
async function addAuthenticatorApp({ app, clock }: TestApp, token: string): Promise<string> {
  const enrolment = await app.inject({ method: "POST", url: "/me/totp", headers: bearer(token) });
  assert.equal(enrolment.statusCode, 201, enrolment.body);
  const { secret } = enrolment.json();
  const confirmed = await app.inject({
    method: "POST",
    url: "/me/totp/confirm",
    headers: bearer(token),
    payload: { code: codeAt(secret, clock.now) },
  });
  assert.equal(confirmed.statusCode, 200, confirmed.body);
  clock.advanceSeconds(90);
  return secret;
}

/** The password step, and the authenticator app's code when the account asks for it: an access token. */
async function signIn({ app, clock }: TestApp, secret?: string): Promise<string> {
  const first = await requestToken(app, { username: EMAIL, password: PASSWORD });
  if (secret === undefined) {
    assert.equal(first.statusCode, 200, first.body);
    return first.json().access_token;
  }
  assert.equal(first.statusCode, 403, first.body);
  const second = await requestToken(app, {
    grant_type: MFA_OTP_GRANT,
    mfa_token: first.json().mfa_token,
    otp: codeAt(secret, clock.now),
  });
  assert.equal(second.statusCode, 200, second.body);
  return second.json().access_token;
}

async function browserCookie(app: FastifyInstance, token: string): Promise<string> {
  const opened = await app.inject({ method: "POST", url: "/oauth/browser-session", headers: bearer(token) });
  assert.equal(opened.statusCode, 204, opened.body);
  return (opened.headers["set-cookie"] as string).split(";")[0] as string;
}

/**
 * The authorization request (the browser with `cookie`) and the redemption of its code. When the service
 * sends the browser to sign in again, `signInAgain` is that sign-in (its browser session's cookie), and the
 * request is made again with it and the proof the service handed out, as the sign-in page's return does.
 */
async function codeFlow(
  { app, clock }: TestApp,
  cookie: string,
  options: { clientId?: string; signInAgain?: () => Promise<string> } = {},
) {
  const clientId = options.clientId ?? CONSOLE_CLIENT_ID;
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: CALLBACK,
    scope: "openid email",
    state: "s",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  let answer = await app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
  assert.equal(answer.statusCode, 303, answer.body);
  let location = new URL(answer.headers.location as string, BASE);
  const sentToSignIn = location.pathname === "/sign-in";
  if (sentToSignIn) {
    assert.ok(options.signInAgain, "sent to sign in again");
    const proof = ([] as string[])
      .concat(answer.headers["set-cookie"] ?? [])
      .find((set) => set.startsWith("uts_reauth="))
      ?.split(";")[0];
    assert.ok(proof, "a proof cookie, so the request does not loop");
    clock.advanceSeconds(5);
    const fresh = await options.signInAgain();
    answer = await app.inject({
      url: location.searchParams.get("continue") as string,
      headers: { cookie: `${fresh}; ${proof}` },
    });
    assert.equal(answer.statusCode, 303, answer.body);
    location = new URL(answer.headers.location as string, BASE);
  }
  const code = location.searchParams.get("code");
  assert.ok(code, `no code: ${answer.statusCode} ${answer.headers.location}`);
  return { sentToSignIn, redeem: (at: FastifyInstance = app) => redeem(at, clientId, code, pkce.verifier) };
}

function redeem(app: FastifyInstance, clientId: string, code: string, verifier: string) {
  return requestToken(app, {
    grant_type: "authorization_code",
    code,
    redirect_uri: CALLBACK,
    code_verifier: verifier,
    client_id: clientId,
  });
}

function assertSecondFactorRequired(answer: Awaited<ReturnType<typeof requestToken>>) {
  assert.equal(answer.statusCode, 400, answer.body);
  assert.equal(answer.headers["cache-control"], "no-store");
  assert.deepEqual(answer.json(), {
    detail: SECOND_FACTOR_REQUIRED,
    error: "invalid_grant",
    error_description: SECOND_FACTOR_REQUIRED,
  });
}

async function auditOutcomes(testApp: TestApp, userId: string): Promise<string[]> {
  const events = await testApp.store.listEvents({ userId, limit: 100 });
  return events.map((event) => event.outcome);
}

describe("ADMIN_CONSOLE_REQUIRE_MFA on the server", () => {
  test("a second factor, by the session's amr: a password and a factor, or a passkey that verified the user", () => {
    for (const amr of [
      ["pwd", "otp", "mfa"],
      ["pwd", "mfa"],
      ["pwd", "hwk", "mfa"],
      ["hwk", "user"],
    ])
      assert.equal(signedInWithSecondFactor(amr), true, amr.join());
    for (const amr of [["pwd"], ["hwk"], ["user"], [], ["pwd", "otp"]])
      assert.equal(signedInWithSecondFactor(amr), false, amr.join());
  });

  test("on: an admin without a second factor signs in again, then gets no console token; audited", async (t) => {
    const service = await consoleService(t, true);
    const cookie = await browserCookie(service.app, await signIn(service));
    const flow = await codeFlow(service, cookie, {
      signInAgain: async () => browserCookie(service.app, await signIn(service)),
    });
    assert.equal(flow.sentToSignIn, true);
    assertSecondFactorRequired(await flow.redeem());
    const outcomes = await auditOutcomes(service, service.admin.id);
    assert.ok(outcomes.includes("second_factor_required"), outcomes.join());
    // No session was started for the console's client.
    assert.ok(!outcomes.includes("code_redeemed"), outcomes.join());
  });

  test("on: a browser signed in before the admin added a second factor signs in again, with it: tokens", async (t) => {
    const service = await consoleService(t, true);
    const token = await signIn(service);
    const cookie = await browserCookie(service.app, token);
    const secret = await addAuthenticatorApp(service, token);
    const flow = await codeFlow(service, cookie, {
      signInAgain: async () => browserCookie(service.app, await signIn(service, secret)),
    });
    assert.equal(flow.sentToSignIn, true);
    const granted = await flow.redeem();
    assert.equal(granted.statusCode, 200, granted.body);
  });

  test("on: an admin signed in with a second factor gets the console's tokens at once, refreshed too", async (t) => {
    const service = await consoleService(t, true);
    const secret = await addAuthenticatorApp(service, await signIn(service));
    const cookie = await browserCookie(service.app, await signIn(service, secret));
    const flow = await codeFlow(service, cookie);
    assert.equal(flow.sentToSignIn, false);
    const granted = await flow.redeem();
    assert.equal(granted.statusCode, 200, granted.body);
    const tokens = granted.json();
    assert.equal((await service.app.inject({ url: "/users", headers: bearer(tokens.access_token) })).statusCode, 200);
    const refreshed = await requestToken(service.app, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: CONSOLE_CLIENT_ID,
    });
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    const users = await service.app.inject({ url: "/users", headers: bearer(refreshed.json().access_token) });
    assert.equal(users.statusCode, 200);
  });

  test("on: a code and a console session from before the setting are refused at the token endpoint", async (t) => {
    const before = await consoleService(t, false);
    const cookie = await browserCookie(before.app, await signIn(before));
    const granted = await (await codeFlow(before, cookie)).redeem();
    assert.equal(granted.statusCode, 200, granted.body);
    const pending = await codeFlow(before, cookie);
    // The same store, restarted with the setting on.
    const app = await buildApp({
      config: testConfig(consoleConfig(true)),
      store: before.store,
      clock: before.clock.read,
    });
    t.after(() => app.close());
    assertSecondFactorRequired(await pending.redeem(app));
    const refresh = (refreshToken: string) =>
      requestToken(app, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: CONSOLE_CLIENT_ID });
    assertSecondFactorRequired(await refresh(granted.json().refresh_token));
    // The session is ended (its access token lives out its few minutes, as every access token does).
    const again = await refresh(granted.json().refresh_token);
    assert.equal(again.statusCode, 400, again.body);
    assert.equal(again.json().error, "invalid_grant");
    assert.equal(again.json().detail, INVALID_CLIENT_REFRESH);
  });

  test("on: another client's code flow is unchanged for the same admin without a second factor", async (t) => {
    const service = await consoleService(t, true);
    const other = await service.store.createClient({
      name: "Partner",
      redirectUris: [CALLBACK],
      postLogoutRedirectUris: [],
      grantTypes: ["authorization_code", "refresh_token"],
      responseTypes: ["code"],
      tokenEndpointAuthMethod: "none",
      scope: "openid profile email",
      backchannelLogoutUri: null,
      firstParty: true,
      resources: [],
      resourceServer: false,
      requirePushedAuthorizationRequests: false,
      dpopBoundAccessTokens: false,
      registeredBy: "admin",
      secretHash: null,
    });
    const cookie = await browserCookie(service.app, await signIn(service));
    const flow = await codeFlow(service, cookie, { clientId: other.id });
    assert.equal(flow.sentToSignIn, false);
    const granted = await flow.redeem();
    assert.equal(granted.statusCode, 200, granted.body);
  });

  test("off: an admin without a second factor gets the console's tokens as before", async (t) => {
    const service = await consoleService(t, false);
    const cookie = await browserCookie(service.app, await signIn(service));
    const flow = await codeFlow(service, cookie);
    assert.equal(flow.sentToSignIn, false);
    const granted = await flow.redeem();
    assert.equal(granted.statusCode, 200, granted.body);
    assert.equal(
      (await service.app.inject({ url: "/me", headers: bearer(granted.json().access_token) })).statusCode,
      200,
    );
  });
});
