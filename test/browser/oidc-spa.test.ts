// An SPA on another origin signs in with oidc-client-ts (its browser bundle,
// served by a small test server) in Chromium: the code flow with PKCE for a
// public first-party client through the real sign-in page, the user's
// second factor (an authenticator app code) included; the ID token says so
// (amr, acr); userinfo cross-origin (CORS for the public client's origin);
// renewal with the refresh token (signinSilent); and sign-out
// (signoutRedirect, RP-initiated logout), after which the refresh token is refused.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import type { Browser } from "playwright-core";
import { createUser, requestToken } from "../helpers.ts";
import { startOidcService } from "../oidc/fixture.ts";
import { codeAt } from "../totp.ts";
import { freePort, launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const bundle = readFileSync(
  createRequire(import.meta.url)
    .resolve("oidc-client-ts")
    .replace(/dist\/.*$/, "dist/browser/oidc-client-ts.min.js"),
  "utf8",
);

/** The SPA's page: a UserManager for the service, its callbacks, and functions the test calls. */
function spaPage(authority: string, clientId: string, origin: string): string {
  const settings = JSON.stringify({
    authority,
    client_id: clientId,
    redirect_uri: `${origin}/spa/callback`,
    post_logout_redirect_uri: `${origin}/spa/`,
    scope: "openid profile email",
    loadUserInfo: true,
    filterProtocolClaims: false,
  });
  return `<!doctype html><title>SPA</title><p id="state">loading</p>
<script src="/oidc-client-ts.js"></script>
<script>
window.manager = new oidc.UserManager(${settings});
window.ready = (async () => {
  if (location.pathname === "/spa/callback") {
    await window.manager.signinCallback();
    history.replaceState(null, "", "/spa/");
  }
  const user = await window.manager.getUser();
  document.getElementById("state").textContent = user ? "signed-in" : "signed-out";
})();
</script>`;
}

describe("an SPA with oidc-client-ts", { skip: skipWithoutChromium("OIDC SPA") }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test("sign-in with a second factor, userinfo, renewal, sign-out", async (t) => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    let page = "";
    const spa = createServer((request, response) => {
      if (request.url === "/oidc-client-ts.js")
        return response.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
      response.writeHead(200, { "content-type": "text/html" }).end(page);
    });
    await new Promise<void>((resolve) => spa.listen(port, "127.0.0.1", resolve));
    t.after(() => new Promise<void>((resolve) => spa.close(() => resolve())));
    const service = await startOidcService(t, origin);
    page = spaPage(service.issuer, service.clients.spa.id, origin);

    // Ada has an authenticator app.
    const user = await createUser(service.store, "ada@example.com", PASSWORD);
    const login = await requestToken(service.app, { username: "ada@example.com", password: PASSWORD });
    const auth = { authorization: `Bearer ${login.json().access_token}` };
    const enrolment = await service.app.inject({ method: "POST", url: "/me/totp", headers: auth });
    const { secret } = enrolment.json();
    const confirmed = await service.app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: auth,
      payload: { code: codeAt(secret, service.clock.now) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    service.clock.advanceSeconds(90);

    const tab = await browser.newPage();
    tab.setDefaultTimeout(STEP_TIMEOUT);
    await tab.goto(`${origin}/spa/`);
    await tab.waitForSelector("#state:text('signed-out')");
    await tab.evaluate(() => {
      // Not awaited: the redirect ends this page.
      void (globalThis as unknown as { manager: { signinRedirect(): Promise<void> } }).manager.signinRedirect();
    });
    await tab.waitForURL(/\/sign-in\?/);
    await tab.fill("#password", PASSWORD);
    await tab.fill("#email", "ada@example.com");
    await tab.click("#password-form button");
    await tab.waitForSelector("#otp-form:not([hidden])");
    await tab.fill("#otp", codeAt(secret, service.clock.now));
    await tab.click("#otp-form button");
    await tab.waitForURL(`${origin}/spa/`);
    await tab.waitForSelector("#state:text('signed-in')");

    type Profile = { sub: string; amr: string[]; acr: string; email: string; email_verified: boolean };
    const signedIn = await tab.evaluate(async () => {
      const found = await (
        globalThis as unknown as {
          manager: { getUser(): Promise<{ profile: Profile; refresh_token: string; access_token: string }> };
        }
      ).manager.getUser();
      return { profile: found.profile, refresh: found.refresh_token, access: found.access_token };
    });
    assert.equal(signedIn.profile.sub, user.id);
    assert.deepEqual(signedIn.profile.amr, ["pwd", "otp", "mfa"]);
    assert.equal(signedIn.profile.acr, "http://schemas.openid.net/pape/policies/2007/06/multi-factor");
    // loadUserInfo: the claims came from userinfo, cross-origin.
    assert.equal(signedIn.profile.email, "ada@example.com");
    assert.equal(signedIn.profile.email_verified, false);

    // Renewal: the refresh token is spent for a new pair.
    const renewed = await tab.evaluate(async () => {
      const found = await (
        globalThis as unknown as {
          manager: { signinSilent(): Promise<{ refresh_token: string; access_token: string; profile: Profile }> };
        }
      ).manager.signinSilent();
      return { refresh: found.refresh_token, access: found.access_token, sub: found.profile.sub };
    });
    assert.notEqual(renewed.refresh, signedIn.refresh);
    assert.notEqual(renewed.access, signedIn.access);
    assert.equal(renewed.sub, user.id);

    // Sign-out: back at the SPA (the next page it commits), the session over at the service.
    const back = tab.waitForEvent("framenavigated", (frame) => frame === tab.mainFrame());
    await tab.evaluate(() => {
      void (globalThis as unknown as { manager: { signoutRedirect(): Promise<void> } }).manager.signoutRedirect();
    });
    await back;
    assert.equal(new URL(tab.url()).origin + new URL(tab.url()).pathname, `${origin}/spa/`);
    const refused = await requestToken(service.app, {
      grant_type: "refresh_token",
      refresh_token: renewed.refresh,
      client_id: service.clients.spa.id,
    });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().error, "invalid_grant");
    await tab.close();
  });
});
