// OpenID Connect end to end with panva's openid-client (v6, a certified
// relying-party library) against the service listening on a real port, the
// user signing in through the real sign-in page in Chromium: discovery, code
// with PKCE, state and nonce, ID token validation (signature from the JWK
// Set, iss, aud, nonce, at_hash), userinfo, refresh with rotation (the spent
// refresh token then refused), a second authorization answered from the
// browser session without a sign-in, consent for a third-party client, an ID
// token checked against another nonce (refused by the library), and
// RP-initiated logout ending the browser session and the client's session;
// the client hears of each ended session (the reuse, the logout) through
// back-channel logout, a token its receiver verifies with jose.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as client from "openid-client";
import type { Browser, Page } from "playwright-core";
import { ACR_MULTI_FACTOR } from "../../src/oidc/id-tokens.ts";
import { createUser, requestToken } from "../helpers.ts";
import { LogoutReceiver } from "../logout-receiver.ts";
import { type OidcService, type RelyingPartyServer, startOidcService, startRelyingParty } from "../oidc/fixture.ts";
import { codeAt } from "../totp.ts";
import { launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";

describe("OpenID Connect with openid-client through the sign-in page", { skip: skipWithoutChromium("OIDC") }, () => {
  let browser: Browser;

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  async function signIn(page: Page, email: string) {
    await page.waitForURL(/\/sign-in\?/);
    assert.equal(await page.locator("#email").inputValue(), email, "login_hint fills the e-mail");
    await page.fill("#password", PASSWORD);
    await page.click("#password-form button");
  }

  async function discover(service: OidcService) {
    const { id, secret } = service.clients.partner;
    return client.discovery(new URL(service.issuer), id, undefined, client.ClientSecretBasic(secret), {
      execute: [client.allowInsecureRequests],
    });
  }

  test("code with PKCE and nonce, ID token, userinfo, refresh, consent, logout", async (t) => {
    const rp: RelyingPartyServer = await startRelyingParty(t);
    const service = await startOidcService(t, rp.origin);
    const user = await createUser(service.store, "ada@example.com", PASSWORD);
    await service.store.update(user.id, { fullName: "Ada Lovelace" });
    const receiver = new LogoutReceiver(service.issuer, service.clients.partner.id, service.clock.read);
    await receiver.start();
    t.after(() => receiver.stop());
    await service.store.updateClient(service.clients.partner.id, { backchannelLogoutUri: receiver.url });
    const config = await discover(service);
    assert.equal(config.serverMetadata().backchannel_logout_supported, true);
    assert.equal(config.serverMetadata().backchannel_logout_session_supported, true);
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);

    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: `${rp.origin}/callback`,
      scope: "openid profile email",
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce,
      state,
      login_hint: "ada@example.com",
    });
    const back = rp.next();
    await page.goto(url.href);
    await signIn(page, "ada@example.com");
    // A third-party client: the consent page names it (escaped) and the scopes.
    await page.waitForSelector("#allow");
    assert.equal(await page.locator("#client-name").textContent(), "Partner <App>");
    assert.equal(await page.locator("#scopes li").count(), 3);
    await page.click("#allow");
    const callback = await back;
    assert.equal(callback.searchParams.get("iss"), service.issuer);
    assert.equal(callback.searchParams.get("state"), state);

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    assert.ok(claims);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.iss, service.issuer);
    assert.equal(claims.aud, service.clients.partner.id);
    assert.equal(claims.nonce, nonce);
    assert.deepEqual(claims.amr, ["pwd"]);
    assert.equal(claims.acr, "0");
    assert.equal(typeof claims.auth_time, "number");
    assert.equal(typeof claims.sid, "string");
    assert.equal(claims.email, "ada@example.com");
    assert.equal(tokens.scope, "openid profile email");
    assert.equal(tokens.token_type, "bearer");

    const info = await client.fetchUserInfo(config, tokens.access_token, user.id);
    assert.deepEqual(
      { ...info },
      {
        sub: user.id,
        name: "Ada Lovelace",
        updated_at: info.updated_at,
        email: "ada@example.com",
        email_verified: false,
      },
    );
    // The client's token does not open the account's own API.
    const me = await fetch(`${service.issuer}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(me.status, 401);

    // Refresh with rotation: the new pair works, the spent refresh token is refused (and ends the session).
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    assert.equal(refreshed.scope, "openid profile email");
    assert.equal((await client.fetchUserInfo(config, refreshed.access_token, user.id)).sub, user.id);
    service.clock.advanceSeconds(60);
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token as string), (error: Error) => {
      assert.equal((error as { error?: string }).error, "invalid_grant");
      return true;
    });
    // Ending the client's session, the reuse told the client's back-channel logout URI: one logout
    // token for the ID token's sub and sid, verified against the JWK Set.
    await receiver.waitFor(() => receiver.accepted.length === 1);
    const logout = receiver.accepted[0]?.claims;
    assert.equal(logout?.sub, user.id);
    assert.equal(logout?.sid, claims.sid);
    assert.equal(logout?.aud, service.clients.partner.id);

    // A second authorization: the browser session answers at once, consent remembered; the library
    // refuses the ID token when it expected another nonce.
    const verifier2 = client.randomPKCECodeVerifier();
    const again = client.buildAuthorizationUrl(config, {
      redirect_uri: `${rp.origin}/callback`,
      scope: "openid email",
      code_challenge: await client.calculatePKCECodeChallenge(verifier2),
      code_challenge_method: "S256",
      nonce: client.randomNonce(),
      state,
    });
    const back2 = rp.next();
    await page.goto(again.href);
    const callback2 = await back2;
    await assert.rejects(
      client.authorizationCodeGrant(config, callback2, {
        pkceCodeVerifier: verifier2,
        expectedNonce: nonce,
        expectedState: state,
      }),
      (error: Error) => {
        assert.match((error.cause as Error).message, /unexpected ID Token "nonce" claim value/);
        return true;
      },
    );

    // RP-initiated logout with the ID token: back to the registered address with state; the browser
    // session and the client's session have ended.
    const loggedOut = rp.next();
    await page.goto(
      client.buildEndSessionUrl(config, {
        id_token_hint: tokens.id_token as string,
        post_logout_redirect_uri: `${rp.origin}/signed-out`,
        state: "bye",
      }).href,
    );
    const signedOut = await loggedOut;
    assert.equal(signedOut.pathname, "/signed-out");
    assert.equal(signedOut.searchParams.get("state"), "bye");
    await assert.rejects(client.fetchUserInfo(config, refreshed.access_token, user.id));
    await assert.rejects(client.refreshTokenGrant(config, refreshed.refresh_token as string));
    // The client's back-channel logout URI is told again: the new session of the same sid ended.
    await receiver.waitFor(() => receiver.accepted.length === 2);
    assert.equal(receiver.accepted[1]?.claims?.sid, tokens.claims()?.sid);
    // prompt=none now: login_required, back at the client.
    const none = client.buildAuthorizationUrl(config, {
      redirect_uri: `${rp.origin}/callback`,
      scope: "openid",
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: "S256",
      prompt: "none",
      state: "s3",
    });
    const back3 = rp.next();
    await page.goto(none.href);
    const refused = await back3;
    assert.equal(refused.searchParams.get("error"), "login_required");
    assert.equal(refused.searchParams.get("state"), "s3");
    assert.equal(refused.searchParams.get("iss"), service.issuer);
    await page.close();
  });
  test("forced re-authentication: prompt=login, max_age=0 and a second factor sign in again, once; prompt=consent survives the sign-in", async (t) => {
    const rp: RelyingPartyServer = await startRelyingParty(t);
    const service = await startOidcService(t, rp.origin);
    const user = await createUser(service.store, "ada@example.com", PASSWORD);
    await service.store.grantConsent(
      user.id,
      service.clients.partner.id,
      "openid profile email",
      new Date(service.clock.now).toISOString(),
    );
    const config = await discover(service);
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    // Every page the browser shows at the service, in order (a 303 shows none): the sign-in page must
    // show once per step, the consent page (at the authorization endpoint) only when asked for.
    const shown: string[] = [];
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame() && frame.url().startsWith(service.issuer))
        shown.push(new URL(frame.url()).pathname);
    });

    /** One authorization through the browser: the pages shown on the way, and the ID token's claims. */
    async function authorize(extra: Record<string, string>, signIn: (() => Promise<void>) | null) {
      shown.length = 0;
      const verifier = client.randomPKCECodeVerifier();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: `${rp.origin}/callback`,
        scope: "openid email",
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        nonce,
        state: "st",
        login_hint: "ada@example.com",
        ...extra,
      });
      const back = rp.next();
      await page.goto(url.href);
      if (signIn) await signIn();
      const callback = await back;
      // The RP has the request; let the browser finish showing its page before the next step.
      await page.waitForURL((url) => url.origin === rp.origin && url.pathname === "/callback");
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedNonce: nonce,
        expectedState: "st",
        idTokenExpected: true,
      });
      return { pages: [...shown], claims: tokens.claims() };
    }
    const withPassword = async () => {
      await page.waitForURL(/\/sign-in\?/);
      await page.fill("#password", PASSWORD);
      await page.click("#password-form button");
    };

    const first = await authorize({}, withPassword);
    assert.deepEqual(first.pages, ["/sign-in"]);
    // The session answers at once without a demand.
    service.clock.advanceSeconds(5);
    assert.deepEqual((await authorize({}, null)).pages, []);

    // prompt=login, then max_age=0: the sign-in page once each, and a newer auth_time each time.
    let last = first.claims?.auth_time as number;
    for (const extra of [{ prompt: "login" }, { max_age: "0" }] as Record<string, string>[]) {
      service.clock.advanceSeconds(5);
      const again = await authorize(extra, withPassword);
      assert.deepEqual(again.pages, ["/sign-in"], JSON.stringify(extra));
      assert.ok((again.claims?.auth_time as number) > last, JSON.stringify(extra));
      last = again.claims?.auth_time as number;
    }

    // prompt=login consent: the sign-in, then the consent page, although the consent exists.
    service.clock.advanceSeconds(5);
    const consented = await authorize({ prompt: "login consent" }, async () => {
      await withPassword();
      await page.waitForSelector("#allow");
      assert.equal(await page.locator("#client-name").textContent(), "Partner <App>");
      await page.click("#allow");
    });
    assert.deepEqual(consented.pages, ["/sign-in", "/oauth/authorize"]);

    // A second factor, asked with acr_values of a single-factor session: the sign-in with the code from
    // the authenticator app, once; the ID token says so.
    const own = await requestToken(service.app, { username: "ada@example.com", password: PASSWORD });
    const auth = { authorization: `Bearer ${own.json().access_token}` };
    const { secret } = (await service.app.inject({ method: "POST", url: "/me/totp", headers: auth })).json();
    const confirmed = await service.app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: auth,
      payload: { code: codeAt(secret, service.clock.now) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    service.clock.advanceSeconds(90);
    const stepUp = await authorize({ acr_values: ACR_MULTI_FACTOR }, async () => {
      await withPassword();
      await page.waitForSelector("#otp-form:not([hidden])");
      await page.fill("#otp", codeAt(secret, service.clock.now));
      await page.click("#otp-form button");
    });
    assert.deepEqual(stepUp.pages, ["/sign-in"]);
    assert.equal(stepUp.claims?.acr, ACR_MULTI_FACTOR);
    assert.deepEqual(stepUp.claims?.amr, ["pwd", "otp", "mfa"]);
    await page.close();
  });
});
