// Dynamic client registration (RFC 7591) at POST /auth/register: off by default (no route at all);
// on with DYNAMIC_CLIENT_REGISTRATION, behind the initial access token of REGISTRATION_ACCESS_TOKEN
// (RFC 6750 answers without it); RFC 7591's answers and errors; never a first-party client. Here the
// operator has widened what registrants may ask for (DYNAMIC_CLIENT_GRANT_TYPES, DYNAMIC_CLIENT_SCOPES),
// so that every kind of client can be registered; the defaults and their refusals are
// test/security/registrant-privileges.test.ts's.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";
import { buildTestApp, requestToken } from "./helpers.ts";
import { OIDC_KEY } from "./oidc/fixture.ts";

const TOKEN = "an-initial-access-token-of-32-bytes-or-more";
const WIDENED = {
  grantTypes: ["authorization_code", "refresh_token", "client_credentials"] as const,
  scopes: ["openid", "profile", "email", "orders:read"],
};

async function registration(t: import("node:test").TestContext) {
  const testApp = await buildTestApp(t, { dynamicRegistration: { initialAccessToken: TOKEN, ...WIDENED } });
  const register = (payload: object, authorization: string | null = `Bearer ${TOKEN}`) =>
    testApp.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: authorization === null ? {} : { authorization },
      payload,
    });
  return { ...testApp, register };
}

describe("POST /auth/register", () => {
  test("is not there unless DYNAMIC_CLIENT_REGISTRATION is on", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({ method: "POST", url: "/auth/register", payload: { client_name: "x" } });
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { detail: "Not Found" });
  });

  test("registers a client with the initial access token: 201, RFC 7591 fields, the secret once, never first-party", async (t) => {
    const { app, register, clock } = await registration(t);
    const response = await register({
      client_name: "Partner",
      grant_types: ["client_credentials"],
      scope: "orders:read",
      first_party: true,
      logo_uri: "https://partner.example/logo.png",
    });
    assert.equal(response.statusCode, 201);
    const body = response.json();
    assert.equal(response.headers.location, `/clients/${body.client_id}`);
    assert.deepEqual(body, {
      client_id: body.client_id,
      client_name: "Partner",
      redirect_uris: [],
      post_logout_redirect_uris: [],
      grant_types: ["client_credentials"],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      scope: "orders:read",
      backchannel_logout_uri: null,
      first_party: false,
      resources: [],
      resource_server: false,
      require_pushed_authorization_requests: false,
      dpop_bound_access_tokens: false,
      client_id_issued_at: clock.seconds,
      client_secret_expires_at: 0,
      previous_secret_expires_at: null,
      registered_by: "dynamic",
      client_secret: body.client_secret,
    });
    const basic = `Basic ${Buffer.from(`${body.client_id}:${body.client_secret}`).toString("base64")}`;
    const token = await requestToken(app, { grant_type: "client_credentials" }, { authorization: basic });
    assert.equal(token.statusCode, 200);

    const unnamed = await register({ token_endpoint_auth_method: "none", redirect_uris: ["http://127.0.0.1/cb"] });
    assert.equal(unnamed.statusCode, 201);
    assert.equal(unnamed.json().client_name, "Unnamed client");
    assert.equal(unnamed.json().client_secret, undefined);
  });

  test("refusals: RFC 6750 for the token, RFC 7591 section 3.2.2 for the metadata", async (t) => {
    const { register } = await registration(t);
    const missing = await register({ client_name: "x" }, null);
    assert.equal(missing.statusCode, 401, missing.body);
    assert.equal(missing.headers["www-authenticate"], "Bearer");
    const refused = {
      error: "invalid_token",
      error_description: "Registration needs the initial access token",
      detail: "Registration needs the initial access token",
    };
    assert.deepEqual(missing.json(), refused);
    const wrong = await register({ client_name: "x" }, `Bearer ${TOKEN}x`);
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers["www-authenticate"], 'Bearer error="invalid_token"');
    assert.deepEqual(wrong.json(), refused);

    const cases: [object, string, string][] = [
      [
        { redirect_uris: ["https://a.example/cb#x"] },
        "invalid_redirect_uri",
        "redirect_uris: must not have a fragment",
      ],
      [{ redirect_uris: "https://a.example/cb" }, "invalid_client_metadata", "body.redirect_uris: must be array"],
      [
        { grant_types: ["client_credentials"], token_endpoint_auth_method: "none" },
        "invalid_client_metadata",
        "grant_types: client_credentials needs a confidential client (a secret), not 'none'",
      ],
    ];
    for (const [payload, error, detail] of cases) {
      const response = await register(payload);
      assert.equal(response.statusCode, 400, JSON.stringify(payload));
      assert.deepEqual(response.json(), { error, error_description: detail, detail });
    }
  });

  test("settings: on needs REGISTRATION_ACCESS_TOKEN of at least 32 bytes; off by default", (t) => {
    const cwd = mkdtempSync(join(tmpdir(), "registration-config-"));
    t.after(() => rmSync(cwd, { recursive: true, force: true }));
    const base = { SIGNING_SECRET: "s".repeat(32) };
    assert.equal(loadConfig(base, cwd).config.dynamicRegistration, undefined);
    assert.deepEqual(
      loadConfig({ ...base, DYNAMIC_CLIENT_REGISTRATION: "on", REGISTRATION_ACCESS_TOKEN: TOKEN }, cwd).config
        .dynamicRegistration,
      {
        initialAccessToken: TOKEN,
        grantTypes: ["authorization_code", "refresh_token"],
        scopes: ["openid", "profile", "email", "offline_access"],
      },
    );
    for (const [env, message] of [
      [
        { DYNAMIC_CLIENT_REGISTRATION: "on" },
        "REGISTRATION_ACCESS_TOKEN: is required when DYNAMIC_CLIENT_REGISTRATION is on",
      ],
      [
        { DYNAMIC_CLIENT_REGISTRATION: "on", REGISTRATION_ACCESS_TOKEN: "short" },
        "REGISTRATION_ACCESS_TOKEN: must be at least 32 bytes",
      ],
      [{ DYNAMIC_CLIENT_REGISTRATION: "maybe" }, 'DYNAMIC_CLIENT_REGISTRATION: must be true or false, got "maybe"'],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...base, ...env }, cwd),
        (error: unknown) => error instanceof ConfigError && error.message === message,
      );
    }
  });
});

describe("POST /auth/register and the device grant (issue 36)", () => {
  const DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code";

  test("refused by default; once the operator lists it, a public device client registers and starts a device authorization", async (t) => {
    const closed = await buildTestApp(t, { dynamicRegistration: { initialAccessToken: TOKEN, ...WIDENED } });
    const refusedAnswer = await closed.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { client_name: "TV", grant_types: [DEVICE_CODE], token_endpoint_auth_method: "none" },
    });
    assert.equal(refusedAnswer.statusCode, 400);
    const detail =
      `grant_types: '${DEVICE_CODE}' is not available to dynamically registered clients ` +
      "(authorization_code, refresh_token, client_credentials)";
    assert.deepEqual(refusedAnswer.json(), { error: "invalid_client_metadata", error_description: detail, detail });

    // The device authorization endpoint belongs to OpenID Connect: it needs the provider's signing key.
    const { app } = await buildTestApp(t, {
      oidcSigningKeys: [OIDC_KEY],
      dynamicRegistration: {
        initialAccessToken: TOKEN,
        grantTypes: [DEVICE_CODE, "refresh_token"],
        scopes: WIDENED.scopes,
      },
    });
    const registered = await app.inject({
      method: "POST",
      url: "/auth/register",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { client_name: "TV", grant_types: [DEVICE_CODE, "refresh_token"], token_endpoint_auth_method: "none" },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    const client = registered.json();
    assert.deepEqual(client.grant_types, [DEVICE_CODE, "refresh_token"]);
    assert.equal(client.scope, "openid profile email", "a client that signs users in gets the default user scope");
    assert.equal(client.first_party, false);
    assert.equal(client.client_secret, undefined);
    const started = await app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      payload: new URLSearchParams({ client_id: client.client_id, scope: "openid profile" }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(started.statusCode, 200, started.body);
    assert.deepEqual(Object.keys(started.json()).sort(), [
      "device_code",
      "expires_in",
      "interval",
      "user_code",
      "verification_uri",
      "verification_uri_complete",
    ]);
  });
});
