// The device authorization grant (RFC 8628, issue 36) end to end with
// panva's openid-client (v6, certified) against the service listening on a
// real port: initiateDeviceAuthorization, then pollDeviceAuthorizationGrant
// while a person, in Chromium, opens verification_uri_complete, signs in on
// the hosted sign-in page, comes back to /device with the code filled in,
// checks the app's name and the code, and approves: the library gets the
// tokens and validates the ID token. Also a wrong code first, a denial
// (access_denied), an expired code (expired_token), and slow_down (the
// library slows down and still gets the tokens). The /device pages pass
// axe-core and raise no Content Security Policy complaint.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, type TestContext, test } from "node:test";
import { calculateJwkThumbprint, exportJWK } from "jose";
import * as client from "openid-client";
import type { Browser, CDPSession, Page } from "playwright-core";
import { ACR_MULTI_FACTOR } from "../../src/oidc/id-tokens.ts";
import { registerDeviceClients } from "../device/fixture.ts";
import { createUser, requestToken, TestClock } from "../helpers.ts";
import { startOidcService } from "../oidc/fixture.ts";
import { codeAt } from "../totp.ts";
import { launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The service's clock: the real time (the library waits in real time), which a test may move ahead. */
function liveClock(): TestClock {
  const clock = new TestClock();
  let offset = 0;
  Object.defineProperty(clock, "now", {
    get: () => Date.now() + offset,
    set: (value: number) => {
      offset = value - Date.now();
    },
  });
  return clock;
}

describe("device grant with openid-client and the /device page", { skip: skipWithoutChromium("device grant") }, () => {
  let browser: Browser;

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  async function start(t: TestContext) {
    const clock = liveClock();
    const service = await startOidcService(
      t,
      "http://127.0.0.1:9",
      { device: { codeLifetimeSeconds: 600, pollIntervalSeconds: 1 } },
      { clock },
    );
    const devices = await registerDeviceClients(service.store);
    const user = await createUser(service.store, "ada@example.com", PASSWORD);
    const config = await client.discovery(new URL(service.issuer), devices.tv.id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const page = await browser.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    const complaints: string[] = [];
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
    });
    t.after(() => page.close());
    const cdp = await page.context().newCDPSession(page);
    return { service, devices, user, config, page, cdp, complaints, clock };
  }

  async function axe(cdp: CDPSession, what: string): Promise<void> {
    await cdp.send("Runtime.evaluate", { expression: axeSource });
    const { result } = await cdp.send("Runtime.evaluate", {
      expression:
        "axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) })))",
      awaitPromise: true,
      returnByValue: true,
    });
    assert.deepEqual(result.value, [], `axe-core found violations on ${what}`);
  }

  async function signIn(page: Page) {
    await page.waitForURL(/\/sign-in\?/);
    await page.fill("#email", "ada@example.com");
    await page.fill("#password", PASSWORD);
    await page.click("#password-form button");
  }

  test("right code through sign-in: the library gets the tokens, the ID token validated", async (t) => {
    const { service, devices, user, config, page, cdp, complaints } = await start(t);
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid profile email offline_access" });
    assert.match(started.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.equal(started.verification_uri, `${service.issuer}/device`);
    assert.equal(started.interval, 1);
    assert.equal(started.expires_in, 600);
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    await page.goto(started.verification_uri_complete as string);
    await signIn(page);
    await page.waitForURL(/\/device\?user_code=/);
    assert.equal(await page.locator("#user-code").inputValue(), started.user_code);
    await axe(cdp, "the code entry page");
    await page.click("#continue");
    await page.waitForSelector("#approve");
    assert.equal(await page.locator("#client-name").textContent(), "Living-room <TV>");
    assert.equal(await page.locator("#display-code").textContent(), started.user_code);
    assert.equal(await page.locator("#scopes li").count(), 4);
    await axe(cdp, "the confirmation page");
    await page.click("#approve");
    await page.waitForSelector("#status");
    assert.match((await page.locator("#status").textContent()) ?? "", /You may close this window\./);
    await axe(cdp, "the done page");
    const tokens = await polling;
    const claims = tokens.claims();
    assert.ok(claims);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.iss, service.issuer);
    assert.equal(claims.aud, devices.tv.id);
    assert.deepEqual(claims.amr, ["pwd"]);
    assert.equal(typeof claims.auth_time, "number");
    assert.equal(tokens.scope, "openid profile email offline_access");
    assert.equal(typeof tokens.refresh_token, "string");
    const info = await client.fetchUserInfo(config, tokens.access_token, user.id);
    assert.equal(info.email, "ada@example.com");
    assert.deepEqual(complaints, []);
  });

  test("a second factor on the sign-in page: the ID token's amr and acr say so", async (t) => {
    const { service, config, page, clock } = await start(t);
    const own = await requestToken(service.app, { username: "ada@example.com", password: PASSWORD });
    const auth = { authorization: `Bearer ${own.json().access_token}` };
    const { secret } = (await service.app.inject({ method: "POST", url: "/me/totp", headers: auth })).json();
    const confirmed = await service.app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: auth,
      payload: { code: codeAt(secret, clock.now) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    clock.advanceSeconds(90);
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid" });
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    await page.goto(started.verification_uri_complete as string);
    await signIn(page);
    await page.waitForSelector("#otp-form:not([hidden])");
    await page.fill("#otp", codeAt(secret, clock.now));
    await page.click("#otp-form button");
    await page.waitForURL(/\/device\?user_code=/);
    await page.click("#continue");
    await page.click("#approve");
    await page.waitForSelector("#status");
    const claims = (await polling).claims();
    assert.deepEqual(claims?.amr, ["pwd", "otp", "mfa"]);
    assert.equal(claims?.acr, ACR_MULTI_FACTOR);
  });

  test("polled with a DPoP proof: tokens bound to the device's key, the refresh token too; refused as Bearer", async (t) => {
    const { service, user, config, page } = await start(t);
    const keys = await client.randomDPoPKeyPair("ES256");
    const DPoP = client.getDPoPHandle(config, keys);
    const jkt = calculateJwkThumbprint(await exportJWK(keys.publicKey), "sha256");
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid offline_access" });
    const polling = client.pollDeviceAuthorizationGrant(config, started, undefined, { DPoP });
    await page.goto(started.verification_uri_complete as string);
    await signIn(page);
    await page.waitForURL(/\/device\?user_code=/);
    await page.click("#continue");
    await page.click("#approve");
    await page.waitForSelector("#status");
    const tokens = await polling;
    assert.equal(tokens.token_type, "dpop");
    const access = JSON.parse(Buffer.from(tokens.access_token.split(".")[1] as string, "base64url").toString());
    assert.deepEqual(access.cnf, { jkt: await jkt });
    const info = await client.fetchUserInfo(config, tokens.access_token, user.id, { DPoP });
    assert.equal(info.sub, user.id);
    const asBearer = await fetch(`${service.issuer}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(asBearer.status, 401);
    // The public client's refresh token is bound: without a proof it is refused and stays good for its holder.
    await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token as string), (error: Error) => {
      assert.equal((error as client.ResponseBodyError).error, "invalid_dpop_proof");
      return true;
    });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP });
    assert.equal(refreshed.token_type, "dpop");
  });

  test("a wrong code, then the right one; then a denial: access_denied", async (t) => {
    const { config, page, complaints } = await start(t);
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid" });
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    await page.goto(started.verification_uri);
    await signIn(page);
    await page.waitForURL(/\/device$/);
    await page.fill("#user-code", "BBBB-BBBB");
    await page.click("#continue");
    await page.waitForSelector("#problem");
    assert.match((await page.locator("#problem").textContent()) ?? "", /That code is not valid/);
    await page.fill("#user-code", started.user_code.toLowerCase().replace("-", ""));
    await page.click("#continue");
    await page.click("#approve");
    await page.waitForSelector("#status");
    assert.equal(typeof (await polling).access_token, "string");

    const denied = await client.initiateDeviceAuthorization(config, { scope: "openid" });
    const refused = client.pollDeviceAuthorizationGrant(config, denied);
    await page.goto(denied.verification_uri_complete as string);
    await page.click("#continue");
    await page.click("#deny");
    await page.waitForSelector("#status");
    await assert.rejects(refused, (error: Error) => {
      assert.equal((error as { error?: string }).error, "access_denied");
      return true;
    });
    assert.deepEqual(complaints, []);
  });

  test("expired: expired_token", async (t) => {
    const { config, clock } = await start(t);
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid" });
    clock.advanceSeconds(601);
    await assert.rejects(client.pollDeviceAuthorizationGrant(config, started), (error: Error) => {
      assert.equal((error as { error?: string }).error, "expired_token");
      return true;
    });
  });

  test("slow_down: the library waits 5 seconds more and still gets the tokens", async (t) => {
    const { service, devices, config, page } = await start(t);
    const started = await client.initiateDeviceAuthorization(config, { scope: "openid" });
    const pollNow = () =>
      fetch(`${service.issuer}/auth/token`, {
        method: "POST",
        body: new URLSearchParams({
          grant_type: "urn:ietf:params:oauth:grant-type:device_code",
          device_code: started.device_code,
          client_id: devices.tv.id,
        }),
      });
    assert.equal(((await (await pollNow()).json()) as { error: string }).error, "authorization_pending");
    const fast = await pollNow();
    assert.equal(fast.status, 400);
    assert.equal(fast.headers.get("cache-control"), "no-store");
    assert.deepEqual(await fast.json(), {
      error: "slow_down",
      error_description: "Polling too fast: wait 5 seconds more between polls",
      detail: "Polling too fast: wait 5 seconds more between polls",
    });
    // The library's first poll, a second later, is too soon for the raised interval: slow_down again,
    // and it waits 6 seconds; meanwhile the person approves.
    const began = Date.now();
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    // The approval after that poll (an approved code is redeemed whatever the interval).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await page.goto(started.verification_uri_complete as string);
    await signIn(page);
    await page.waitForURL(/\/device\?/);
    await page.click("#continue");
    await page.click("#approve");
    await page.waitForSelector("#status");
    assert.equal(typeof (await polling).access_token, "string");
    assert.ok(Date.now() - began >= 6000, "the library slowed down");
  });
});
