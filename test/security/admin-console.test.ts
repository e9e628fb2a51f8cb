// The admin console's attack surface (issue 35), in process: its client is
// registered once however many instances race to do it; its assets are only
// the files it ships (no path out of the folder); the service's own
// first-party tokens go to the console's client only while the console is on,
// and every other client's code-flow tokens still do not open the account or
// admin API; with the console off there is no /admin at all.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { CONSOLE_CLIENT_ID, ensureConsoleClient } from "../../src/admin/console-client.ts";
import type { Config } from "../../src/config.ts";
import { AUDIT_EVENT_TYPES } from "../../src/store/store.ts";
import { WEBHOOK_EVENT_TYPES } from "../../src/webhooks/events.ts";
import { bearer, buildTestApp, createUser, requestToken } from "../helpers.ts";
import { OIDC_KEY, pkcePair } from "../oidc/fixture.ts";

const PASSWORD = "correct horse battery";
const BASE = "http://127.0.0.1:8000";
const ON: Partial<Config> = { oidcSigningKeys: [OIDC_KEY], adminConsole: { enabled: true, requireMfa: false } };

async function consoleService(t: TestContext, overrides: Partial<Config> = ON) {
  const service = await buildTestApp(t, overrides);
  await ensureConsoleClient(service.store, BASE);
  const admin = await createUser(service.store, "admin@example.com", PASSWORD);
  await service.store.update(admin.id, { isAdmin: true });
  return { ...service, admin };
}

/** A code flow for `clientId` (public, PKCE) in process: the admin's browser session, the code, the tokens. */
async function codeFlow(app: Awaited<ReturnType<typeof consoleService>>["app"], clientId: string, redirectUri: string) {
  const login = await requestToken(app, { username: "admin@example.com", password: PASSWORD });
  const opened = await app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: "openid email",
    state: "s",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  const answer = await app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
  const code = new URL(answer.headers.location as string).searchParams.get("code");
  assert.ok(code, `no code: ${answer.statusCode} ${answer.headers.location}`);
  const tokens = await requestToken(app, {
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    code_verifier: pkce.verifier,
    client_id: clientId,
  });
  assert.equal(tokens.statusCode, 200, tokens.body);
  return tokens.json() as { access_token: string; refresh_token: string };
}

describe("the admin console's client and pages", () => {
  test("instances racing to register the console's client make one, with one address each", async (t) => {
    const { store } = await buildTestApp(t, ON);
    const outcomes = await Promise.all([
      ensureConsoleClient(store, BASE),
      ensureConsoleClient(store, BASE),
      ensureConsoleClient(store, BASE),
    ]);
    assert.equal(outcomes.filter((outcome) => outcome === "registered").length, 1, outcomes.join());
    const clients = await store.listClients({ limit: 10 });
    assert.deepEqual(
      clients.map((client) => client.id),
      [CONSOLE_CLIENT_ID],
    );
    const [registered] = clients;
    assert.deepEqual(registered?.redirectUris, [`${BASE}/admin/`]);
    assert.equal(registered?.tokenEndpointAuthMethod, "none");
    assert.equal(registered?.secretHash, null);
    assert.equal(registered?.firstParty, true);
    // Another address (a restart on another port, another host) is added, not swapped; five are kept.
    assert.equal(await ensureConsoleClient(store, "http://127.0.0.1:9999"), "updated");
    assert.equal(await ensureConsoleClient(store, "https://id.example.com"), "updated");
    assert.deepEqual((await store.findClient(CONSOLE_CLIENT_ID))?.redirectUris, [
      "https://id.example.com/admin/",
      "http://127.0.0.1:9999/admin/",
      `${BASE}/admin/`,
    ]);
    for (const port of [1001, 1002, 1003, 1004]) await ensureConsoleClient(store, `http://127.0.0.1:${port}`);
    assert.deepEqual((await store.findClient(CONSOLE_CLIENT_ID))?.redirectUris, [
      "http://127.0.0.1:1004/admin/",
      "http://127.0.0.1:1003/admin/",
      "http://127.0.0.1:1002/admin/",
      "http://127.0.0.1:1001/admin/",
      "https://id.example.com/admin/",
    ]);
    assert.equal(await ensureConsoleClient(store, "https://id.example.com"), "kept");
  });

  test("the console's codes go to its exact callback only, never to another loopback port", async (t) => {
    const { app } = await consoleService(t);
    const login = await requestToken(app, { username: "admin@example.com", password: PASSWORD });
    const opened = await app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(login.json().access_token),
    });
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const pkce = pkcePair();
    for (const redirectUri of ["http://127.0.0.1:4444/admin/", "http://127.0.0.1/admin/", "http://[::1]:8000/admin/"]) {
      const query = new URLSearchParams({
        response_type: "code",
        client_id: CONSOLE_CLIENT_ID,
        redirect_uri: redirectUri,
        scope: "openid",
        state: "s",
        code_challenge: pkce.challenge,
        code_challenge_method: "S256",
      });
      const answer = await app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
      assert.equal(answer.statusCode, 400, redirectUri);
      assert.equal(answer.headers.location, undefined, `${redirectUri}: no redirect, no code`);
    }
  });

  test("the console's code-flow tokens open the admin API; refreshed, still; another public client's never", async (t) => {
    const { app, store } = await consoleService(t);
    const tokens = await codeFlow(app, CONSOLE_CLIENT_ID, `${BASE}/admin/`);
    const me = await app.inject({ url: "/me", headers: bearer(tokens.access_token) });
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json().is_admin, true);
    assert.equal((await app.inject({ url: "/users", headers: bearer(tokens.access_token) })).statusCode, 200);
    const refreshed = await requestToken(app, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: CONSOLE_CLIENT_ID,
    });
    assert.equal(refreshed.statusCode, 200, refreshed.body);
    assert.equal((await app.inject({ url: "/users", headers: bearer(refreshed.json().access_token) })).statusCode, 200);

    // Another first-party public client, registered by an admin: RFC 9068 tokens that the API refuses.
    const other = await store.createClient({
      name: "Look-alike",
      redirectUris: [`${BASE}/admin/`],
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
    const foreign = await codeFlow(app, other.id, `${BASE}/admin/`);
    for (const path of ["/me", "/users"]) {
      const answer = await app.inject({ url: path, headers: bearer(foreign.access_token) });
      assert.equal(answer.statusCode, 401, path);
    }
  });

  test("with the console off, its client's tokens are a relying party's, and there is no /admin", async (t) => {
    const { app } = await consoleService(t, {
      oidcSigningKeys: [OIDC_KEY],
      adminConsole: { enabled: false, requireMfa: false },
    });
    const tokens = await codeFlow(app, CONSOLE_CLIENT_ID, `${BASE}/admin/`);
    assert.equal((await app.inject({ url: "/me", headers: bearer(tokens.access_token) })).statusCode, 401);
    assert.equal((await app.inject({ url: "/admin/" })).statusCode, 404);
    assert.equal((await app.inject({ url: "/admin/assets/console.js" })).statusCode, 404);
  });

  test("the assets are the shipped files only, with the hosted pages' policy on the page", async (t) => {
    const { app } = await consoleService(t);
    const page = await app.inject({ url: "/admin/" });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers["cache-control"], "no-store");
    assert.doesNotMatch(String(page.headers["content-security-policy"]), /unsafe-|\*/);
    assert.match(page.body, new RegExp(`data-client-id="${CONSOLE_CLIENT_ID}"`));
    // The console's type filters are the service's own lists, whatever a capability adds.
    assert.match(page.body, new RegExp(`data-audit-types="${AUDIT_EVENT_TYPES.join(" ")}"`));
    assert.match(page.body, /data-audit-types="[^"]* branding"/);
    assert.match(page.body, new RegExp(`data-webhook-types="${WEBHOOK_EVENT_TYPES.join(" ")}"`));
    assert.doesNotMatch(page.body, /<script>|<style>| on\w+=/, "nothing inline");
    assert.equal((await app.inject({ url: "/admin" })).statusCode, 308);
    const script = await app.inject({ url: "/admin/assets/console.js" });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers["content-type"]), /^text\/javascript/);
    for (const path of [
      "/admin/assets/console-pages.ts",
      "/admin/assets/..%2Fconsole-pages.ts",
      "/admin/assets/..%2F..%2Fserver.ts",
      "/admin/assets/%2e%2e%2finstall.ts",
      `/admin/assets/${"a".repeat(90)}.js`,
    ]) {
      const answer = await app.inject({ url: path });
      assert.equal(answer.statusCode, 404, path);
      assert.deepEqual(answer.json(), { detail: "Not Found" }, path);
    }
    // An address past the service's limit is refused before routing (414), never a 500.
    assert.equal((await app.inject({ url: `/admin/assets/${"a".repeat(200)}.js` })).statusCode, 414);
  });
});
