// The device authorization grant (RFC 8628, issue 36) in-process: the
// endpoint's whole answers, discovery, the polls' answers (pending,
// slow_down, denied, expired), approval through the /device page and the
// tokens it gives (the code grant's: the relying party's access token, a
// refresh token that refreshes, the ID token with the sign-in's amr and
// auth_time), and the client metadata rules. The refusals an attacker
// would try are in test/security/device-grant.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { hashDeviceCode, USER_CODE_ALPHABET } from "../src/device/codes.ts";
import { clientMetadata } from "../src/oidc/clients.ts";
import {
  authorizeDevice,
  basic,
  DEVICE_GRANT,
  decide,
  enterCode,
  form,
  poll,
  setUpDevice,
  startDevice,
} from "./device/fixture.ts";

const USER_CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`);

describe("device authorization grant", () => {
  test("the device authorization answer, whole, and discovery names the endpoint and the grant", async (t) => {
    const s = await setUpDevice(t);
    const answer = await startDevice(s.app, s.devices.tv.id, "openid profile");
    assert.equal(answer.statusCode, 200, answer.body);
    assert.equal(answer.headers["cache-control"], "no-store");
    const body = answer.json();
    assert.match(body.device_code, /^[\w-]{43}$/);
    assert.match(body.user_code, USER_CODE);
    assert.deepEqual(body, {
      device_code: body.device_code,
      user_code: body.user_code,
      verification_uri: `${body.verification_uri}`,
      verification_uri_complete: `${body.verification_uri}?user_code=${body.user_code}`,
      expires_in: 600,
      interval: 5,
    });
    assert.ok(body.verification_uri.endsWith("/device"), body.verification_uri);
    // Stored hashed: neither code is in the store's row, which the device code's hash finds.
    const row = JSON.stringify(await s.store.findDeviceAuthorization(hashDeviceCode(body.device_code)));
    assert.ok(row.includes(s.devices.tv.id));
    assert.ok(!row.includes(body.device_code) && !row.includes(body.user_code.replace("-", "")));
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const metadata = (await s.app.inject({ url: path })).json();
      assert.ok(metadata.device_authorization_endpoint.endsWith("/oauth/device_authorization"), path);
      assert.ok(metadata.grant_types_supported.includes(DEVICE_GRANT), path);
    }
  });

  test("pending, then approved on the page: the code grant's tokens, once; refresh works", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id, "openid profile email offline_access");
    const pending = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(pending.statusCode, 400);
    assert.deepEqual(pending.json(), {
      error: "authorization_pending",
      error_description: "The person has not approved the request yet; keep polling at the interval",
      detail: "The person has not approved the request yet; keep polling at the interval",
    });
    // The page: the app's name (escaped), the scopes, the code to compare.
    const confirm = await enterCode(s.app, s.cookie, started.user_code.toLowerCase().replace("-", " "));
    assert.equal(confirm.statusCode, 200, confirm.body);
    assert.ok(confirm.body.includes("Living-room &#60;TV&#62;"));
    assert.ok(confirm.body.includes(`<strong id="display-code" class="secret">${started.user_code}</strong>`));
    assert.equal((confirm.body.match(/<li>/g) ?? []).length, 4);
    assert.match(confirm.headers["content-security-policy"] as string, /script-src 'self'/);
    const done = await decide(s.app, s.cookie, started.user_code.replace("-", ""), "approve");
    assert.equal(done.statusCode, 200, done.body);
    assert.ok(done.body.includes("You may close this window."));

    s.clock.advanceSeconds(5);
    const redeemed = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(redeemed.statusCode, 200, redeemed.body);
    assert.equal(redeemed.headers["cache-control"], "no-store");
    const tokens = redeemed.json();
    assert.deepEqual(Object.keys(tokens).sort(), [
      "access_token",
      "expires_in",
      "id_token",
      "refresh_token",
      "scope",
      "token_type",
    ]);
    assert.equal(tokens.token_type, "bearer");
    assert.equal(tokens.scope, "openid profile email offline_access");
    const claims = JSON.parse(Buffer.from(tokens.id_token.split(".")[1], "base64url").toString());
    assert.equal(claims.sub, s.user.id);
    assert.equal(claims.aud, s.devices.tv.id);
    assert.deepEqual(claims.amr, ["pwd"]);
    assert.equal(typeof claims.auth_time, "number");
    assert.equal(claims.email, "ada@example.com");
    // The relying party's token opens userinfo, not the account's own API.
    const info = await s.app.inject({
      url: "/oauth/userinfo",
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    assert.equal(info.statusCode, 200, info.body);
    assert.equal(info.json().sub, s.user.id);
    // One use.
    const again = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(again.statusCode, 400);
    assert.equal(again.json().error, "invalid_grant");
    // The refresh token is the client's: it refreshes.
    const refreshed = await s.app.inject({
      method: "POST",
      url: "/auth/token",
      ...form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: s.devices.tv.id }),
    });
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    assert.equal(refreshed.json().scope, "openid profile email offline_access");
    // The approval is the person's consent: the app is listed, and can be taken back.
    const apps = await s.app.inject({ url: "/me/apps", headers: { authorization: `Bearer ${s.own.access_token}` } });
    assert.ok(apps.json().items.some((app: { client_id: string }) => app.client_id === s.devices.tv.id));
  });

  test("a confidential client by HTTP Basic; no openid, no ID token", async (t) => {
    const s = await setUpDevice(t);
    const { id, secret } = s.devices.cli;
    const started = await s.app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      headers: { ...form({}).headers, ...basic(id, secret) },
      payload: "scope=email",
    });
    assert.equal(started.statusCode, 200, started.body);
    const { device_code, user_code } = started.json();
    assert.equal((await decide(s.app, s.cookie, user_code, "approve")).statusCode, 200);
    const tokens = await poll(s.app, device_code, { headers: basic(id, secret) });
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.equal(tokens.json().scope, "email");
    assert.equal(tokens.json().id_token, undefined);
  });

  test("slow_down raises the interval by 5 seconds, remembered in the store", async (t) => {
    const s = await setUpDevice(t);
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).json().error, "authorization_pending");
    s.clock.advanceSeconds(2);
    const fast = await poll(s.app, started.device_code, s.devices.tv);
    assert.equal(fast.statusCode, 400);
    assert.deepEqual(fast.json(), {
      error: "slow_down",
      error_description: "Polling too fast: wait 5 seconds more between polls",
      detail: "Polling too fast: wait 5 seconds more between polls",
    });
    // Now 10 seconds: 5 is too soon, 10 is in time.
    s.clock.advanceSeconds(5);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).json().error, "slow_down");
    s.clock.advanceSeconds(15);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).json().error, "authorization_pending");
  });

  test("denied: access_denied; expired: expired_token; the page refuses the expired code", async (t) => {
    const s = await setUpDevice(t);
    const denied = await authorizeDevice(s.app, s.devices.tv.id);
    const done = await decide(s.app, s.cookie, denied.user_code, "deny");
    assert.equal(done.statusCode, 200);
    assert.ok(done.body.includes("You denied the request"));
    const answer = await poll(s.app, denied.device_code, s.devices.tv);
    assert.equal(answer.statusCode, 400);
    assert.deepEqual(answer.json(), {
      error: "access_denied",
      error_description: "The person denied the request",
      detail: "The person denied the request",
    });
    const late = await authorizeDevice(s.app, s.devices.tv.id);
    s.clock.advanceSeconds(601);
    const expired = await poll(s.app, late.device_code, s.devices.tv);
    assert.equal(expired.statusCode, 400);
    assert.deepEqual(expired.json(), {
      error: "expired_token",
      error_description: "The device code has expired; start again",
      detail: "The device code has expired; start again",
    });
    const page = await enterCode(s.app, s.cookie, late.user_code);
    assert.equal(page.statusCode, 400);
    assert.ok(page.body.includes("That code is not valid"));
  });

  test("DEVICE_CODE_LIFETIME_SECONDS and DEVICE_POLL_INTERVAL_SECONDS", async (t) => {
    const s = await setUpDevice(t, { device: { codeLifetimeSeconds: 120, pollIntervalSeconds: 2 } });
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    assert.equal(started.expires_in, 120);
    assert.equal(started.interval, 2);
  });

  test("client metadata: a public client with the device grant alone, default scope", () => {
    const metadata = clientMetadata({
      client_name: "TV",
      grant_types: [DEVICE_GRANT],
      token_endpoint_auth_method: "none",
    });
    assert.deepEqual(metadata.grantTypes, [DEVICE_GRANT]);
    assert.deepEqual(metadata.responseTypes, []);
    assert.deepEqual(metadata.redirectUris, []);
    assert.equal(metadata.scope, "openid profile email");
    assert.ok(clientMetadata({ client_name: "TV", grant_types: [DEVICE_GRANT, "refresh_token"] }));
  });
});
