// Pushed authorization requests (RFC 9126, issue 36) end to end with panva's
// openid-client (v6, certified) against the service on a real port: the
// client pushes with buildAuthorizationUrlWithPAR (its own client
// authentication, discovery's pushed_authorization_request_endpoint), the
// user signs in and consents in Chromium through the real pages (the pushed
// request carried through the sign-in), and the code becomes tokens; a public
// client pushes with its client_id alone; a client registered to require
// pushed requests is refused a plain one, at its redirect URI; a
// request_uri brought back a second time is an error page.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as client from "openid-client";
import type { Browser, Page } from "playwright-core";
import { createUser } from "../helpers.ts";
import { type OidcService, type RelyingPartyServer, startOidcService, startRelyingParty } from "../oidc/fixture.ts";
import { launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";

describe("pushed authorization requests with openid-client", { skip: skipWithoutChromium("PAR") }, () => {
  let browser: Browser;

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  async function partnerConfig(service: OidcService) {
    const { id, secret } = service.clients.partner;
    return client.discovery(new URL(service.issuer), id, undefined, client.ClientSecretBasic(secret), {
      execute: [client.allowInsecureRequests],
    });
  }

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    return page;
  }

  test("pushed, signed in, consented, redeemed; the request_uri spent; a public client pushes too", async (t) => {
    const rp: RelyingPartyServer = await startRelyingParty(t);
    const service = await startOidcService(t, rp.origin);
    const user = await createUser(service.store, "ada@example.com", PASSWORD);
    // Only pushed requests for this client: the way back from the sign-in page must still be let through.
    await service.store.updateClient(service.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const config = await partnerConfig(service);
    const metadata = config.serverMetadata();
    assert.equal(metadata.pushed_authorization_request_endpoint, `${service.issuer}/oauth/par`);
    assert.equal(metadata.require_pushed_authorization_requests, false);
    const page = await newPage();

    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const state = client.randomState();
    const url = await client.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: `${rp.origin}/callback`,
      scope: "openid profile email",
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      nonce,
      state,
      login_hint: "ada@example.com",
    });
    // The browser carries the client and the reference, nothing of the request.
    assert.deepEqual([...url.searchParams.keys()].sort(), ["client_id", "request_uri"]);
    assert.match(url.searchParams.get("request_uri") ?? "", /^urn:ietf:params:oauth:request_uri:[\w-]{43}$/);
    const back = rp.next();
    await page.goto(url.href);
    await page.waitForURL(/\/sign-in\?/);
    assert.equal(await page.locator("#email").inputValue(), "ada@example.com", "the pushed login_hint");
    await page.fill("#password", PASSWORD);
    await page.click("#password-form button");
    await page.waitForSelector("#allow");
    assert.equal(await page.locator("#client-name").textContent(), "Partner <App>");
    assert.equal(await page.locator("#scopes li").count(), 3);
    await page.click("#allow");
    const callback = await back;
    assert.equal(callback.searchParams.get("state"), state);
    assert.equal(callback.searchParams.get("iss"), service.issuer);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    assert.equal(tokens.claims()?.sub, user.id);
    assert.equal(tokens.claims()?.nonce, nonce);
    assert.equal(tokens.scope, "openid profile email");
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, user.id)).email, "ada@example.com");

    // The request_uri again (the back button): an error page, never a second code.
    const again = await page.goto(url.href);
    assert.equal(again?.status(), 400);
    assert.match((await page.locator(".error").textContent()) ?? "", /unknown, expired or already used/);

    // A public client (the SPA) pushes with its client_id alone; the browser session answers at once.
    const spa = await client.discovery(new URL(service.issuer), service.clients.spa.id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const spaVerifier = client.randomPKCECodeVerifier();
    const spaUrl = await client.buildAuthorizationUrlWithPAR(spa, {
      redirect_uri: `${rp.origin}/spa/callback`,
      scope: "openid email",
      code_challenge: await client.calculatePKCECodeChallenge(spaVerifier),
      code_challenge_method: "S256",
      state: "spa-state",
    });
    const spaBack = rp.next();
    await page.goto(spaUrl.href);
    const spaCallback = await spaBack;
    const spaTokens = await client.authorizationCodeGrant(spa, spaCallback, {
      pkceCodeVerifier: spaVerifier,
      expectedState: "spa-state",
    });
    assert.equal(spaTokens.scope, "openid email");
    await page.close();
  });

  test("a client that requires pushed requests is refused a plain one; the library hears invalid_request", async (t) => {
    const rp: RelyingPartyServer = await startRelyingParty(t);
    const service = await startOidcService(t, rp.origin);
    await service.store.updateClient(service.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const config = await partnerConfig(service);
    const page = await newPage();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: `${rp.origin}/callback`,
      scope: "openid",
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: "S256",
      state: "plain",
    });
    const back = rp.next();
    await page.goto(url.href);
    const callback = await back;
    assert.equal(callback.searchParams.get("error"), "invalid_request");
    assert.equal(callback.searchParams.get("state"), "plain");
    await assert.rejects(
      client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: client.randomPKCECodeVerifier(),
        expectedState: "plain",
      }),
      (error: Error & { error?: string; error_description?: string }) => {
        assert.equal(error.error, "invalid_request");
        assert.match(error.error_description ?? "", /must push its authorization requests first/);
        return true;
      },
    );
    await page.close();
  });
});
