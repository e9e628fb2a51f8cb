// The client_credentials grant (RFC 6749 section 4.4) for registered confidential clients: whole
// answers in-process (both client authentication methods; each refusal per RFC 6749 section 5.2,
// never a 5xx), the RFC 9068 claims of the token, a client's token refused by GET /me, and two
// client libraries over real HTTP: oauth4webapi and Python's authlib, each with client_secret_basic
// and client_secret_post, and each seeing its own error for a wrong secret.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import * as oauth from "oauth4webapi";
import { buildApp } from "../src/app.ts";
import { type ClientMetadataInput, clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import type { UserStore } from "../src/store/store.ts";
import { bearer, buildTestApp, openTestStore, requestToken, TEST_ISSUER, testConfig } from "./helpers.ts";
import { run } from "./process.ts";

const PYTHON = "/usr/bin/python3";
const AUTHLIB_SCRIPT = resolve(import.meta.dirname, "oauth-clients/authlib_client_credentials.py");
const authlibMissing = spawnSync(PYTHON, ["-c", "import authlib, requests"]).status !== 0;
const SKIP_MESSAGE = `authlib or requests is missing for ${PYTHON}: apt-get install -y python3-authlib python3-requests`;
if (authlibMissing && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires them`);

function decodePartsOf(token: string) {
  const [header, payload] = token
    .split(".")
    .slice(0, 2)
    .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
  return { header, payload };
}

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});

/** Registers a client straight through the registry (the /clients routes have their own tests). */
async function register(store: UserStore, metadata: ClientMetadataInput) {
  const registered = await createClientRegistry(store).register(clientMetadata(metadata), {
    userId: null,
    clientAddress: null,
  });
  return { id: registered.client.id, secret: registered.secret as string };
}

const SERVICE = { client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:read invoices:write" };

const INVALID_CLIENT = {
  error: "invalid_client",
  error_description: "Client authentication failed",
  detail: "Client authentication failed",
};

describe("client_credentials", () => {
  test("client_secret_basic: an RFC 9068 token for the client, no refresh token, not cached", async (t) => {
    const { app, store, clock } = await buildTestApp(t);
    const { id, secret } = await register(store, SERVICE);
    const response = await requestToken(app, { grant_type: "client_credentials" }, basic(id, secret));
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["cache-control"], "no-store");
    assert.equal(response.headers.pragma, "no-cache");
    const body = response.json();
    assert.deepEqual(body, {
      access_token: body.access_token,
      token_type: "bearer",
      expires_in: 1800,
      scope: "invoices:read invoices:write",
    });
    const { header, payload } = decodePartsOf(body.access_token);
    assert.deepEqual(header, { alg: "HS256", typ: "at+jwt", kid: header.kid });
    assert.deepEqual(payload, {
      iss: TEST_ISSUER,
      sub: id,
      // No resources registered: the client's own id, never the service's first-party audience.
      aud: id,
      iat: clock.seconds,
      exp: clock.seconds + 1800,
      client_id: id,
      jti: payload.jti,
      scope: "invoices:read invoices:write",
    });
    assert.match(String(payload.jti), /^[A-Za-z0-9_-]{22}$/);

    // The token names no user: GET /me (and every user route) answers as for any token without one.
    const me = await app.inject({ method: "GET", url: "/me", headers: bearer(body.access_token) });
    assert.equal(me.statusCode, 401);
    assert.equal(me.headers["www-authenticate"], "Bearer");
    assert.deepEqual(me.json(), { detail: "Could not validate credentials" });
  });

  test("client_secret_post, and a scope within the registered one", async (t) => {
    const { app, store } = await buildTestApp(t);
    const { id, secret } = await register(store, { ...SERVICE, token_endpoint_auth_method: "client_secret_post" });
    const response = await requestToken(app, {
      grant_type: "client_credentials",
      client_id: id,
      client_secret: secret,
      scope: "invoices:read",
    });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(Object.keys(response.json()), ["access_token", "token_type", "expires_in", "scope"]);
    assert.equal(response.json().scope, "invoices:read");
    assert.equal(decodePartsOf(response.json().access_token).payload.scope, "invoices:read");
  });

  test("refusals per RFC 6749 section 5.2, never a 5xx", async (t) => {
    const { app, store } = await buildTestApp(t);
    const service = await register(store, SERVICE);
    const poster = await register(store, { ...SERVICE, token_endpoint_auth_method: "client_secret_post" });
    const web = await register(store, { client_name: "Web", redirect_uris: ["https://web.example/cb"] });
    const spa = await register(store, {
      client_name: "SPA",
      token_endpoint_auth_method: "none",
      redirect_uris: ["https://spa.example/cb"],
    });
    const grant = { grant_type: "client_credentials" };
    const unknownId = "0190a000-0000-7000-8000-000000000000";
    const cases: [string, Record<string, string>, Record<string, string>, number, object, string][] = [
      [
        "wrong secret (Basic)",
        grant,
        basic(service.id, `${service.secret}x`),
        401,
        INVALID_CLIENT,
        'Basic realm="clients"',
      ],
      ["unknown client (Basic)", grant, basic(unknownId, service.secret), 401, INVALID_CLIENT, 'Basic realm="clients"'],
      [
        "a client_id that is no UUID (Basic)",
        grant,
        basic("grafana", "x"),
        401,
        INVALID_CLIENT,
        'Basic realm="clients"',
      ],
      ["malformed Basic", grant, { authorization: "Basic !!!" }, 401, INVALID_CLIENT, 'Basic realm="clients"'],
      [
        "Basic without a colon",
        grant,
        { authorization: `Basic ${Buffer.from("abc").toString("base64")}` },
        401,
        INVALID_CLIENT,
        'Basic realm="clients"',
      ],
      [
        "wrong secret (post)",
        { ...grant, client_id: poster.id, client_secret: "nope" },
        {},
        401,
        INVALID_CLIENT,
        "Bearer",
      ],
      [
        "unknown client (post)",
        { ...grant, client_id: unknownId, client_secret: "nope" },
        {},
        401,
        INVALID_CLIENT,
        "Bearer",
      ],
      [
        "post for a Basic client",
        { ...grant, client_id: service.id, client_secret: service.secret },
        {},
        401,
        INVALID_CLIENT,
        "Bearer",
      ],
      ["Basic for a post client", grant, basic(poster.id, poster.secret), 401, INVALID_CLIENT, 'Basic realm="clients"'],
      [
        "a confidential client without its secret",
        { ...grant, client_id: service.id },
        {},
        401,
        INVALID_CLIENT,
        "Bearer",
      ],
      [
        "two methods at once",
        { ...grant, client_id: service.id, client_secret: service.secret },
        basic(service.id, service.secret),
        400,
        {
          error: "invalid_request",
          error_description:
            "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form",
          detail:
            "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form",
        },
        "",
      ],
      [
        "a client_id in the form that is not the Basic client",
        { ...grant, client_id: poster.id },
        basic(service.id, service.secret),
        400,
        {
          error: "invalid_request",
          error_description: "client_id in the form is not the client of the HTTP Basic credentials",
          detail: "client_id in the form is not the client of the HTTP Basic credentials",
        },
        "",
      ],
      [
        "a public client asking for client_credentials",
        { ...grant, client_id: spa.id },
        {},
        400,
        {
          error: "unauthorized_client",
          error_description: "This client is not registered for the client_credentials grant",
          detail: "This client is not registered for the client_credentials grant",
        },
        "",
      ],
      [
        "a web client not registered for it",
        grant,
        basic(web.id, web.secret),
        400,
        {
          error: "unauthorized_client",
          error_description: "This client is not registered for the client_credentials grant",
          detail: "This client is not registered for the client_credentials grant",
        },
        "",
      ],
      [
        "a scope outside the registered one",
        { ...grant, scope: "invoices:read admin" },
        basic(service.id, service.secret),
        400,
        {
          error: "invalid_scope",
          error_description: "The requested scope is not within the client's registered scope",
          detail: "The requested scope is not within the client's registered scope",
        },
        "",
      ],
    ];
    for (const [name, fields, headers, status, body, challenge] of cases) {
      const response = await requestToken(app, fields, headers);
      assert.equal(response.statusCode, status, name);
      assert.deepEqual(response.json(), body, name);
      assert.equal(response.headers["www-authenticate"] ?? "", challenge, name);
    }
    // A repeated field names no client yet: the token endpoint's own answer, as for any grant.
    const repeated = await app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { "content-type": "application/x-www-form-urlencoded", ...basic(service.id, service.secret) },
      payload: "grant_type=client_credentials&scope=a&scope=b",
    });
    assert.equal(repeated.statusCode, 400);
    assert.deepEqual(repeated.json(), { detail: "Form field 'scope' is repeated" });
  });

  test("without a registered client the grant answers as before the registry (unsupported_grant_type)", async (t) => {
    const { app } = await buildTestApp(t);
    for (const fields of [
      { grant_type: "client_credentials" },
      { grant_type: "client_credentials", client_id: "first-party-app" },
    ] as Record<string, string>[]) {
      const response = await requestToken(app, fields);
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), {
        detail:
          "Unsupported grant_type: only 'password', 'refresh_token' and the documented second-factor grants are supported",
      });
    }
  });
});

/** The service listening on a free port with one client of each method; its issuer is the listen address. */
async function listeningService(t: TestContext) {
  const store = await openTestStore(t);
  const basicClient = await register(store, SERVICE);
  const postClient = await register(store, { ...SERVICE, token_endpoint_auth_method: "client_secret_post" });
  const app: FastifyInstance = await buildApp({
    config: testConfig({ tokenIssuer: undefined, tokenAudience: undefined }),
    store,
  });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { baseUrl: await app.listen({ host: "127.0.0.1", port: 0 }), basicClient, postClient };
}

describe("client_credentials with client libraries over HTTP", () => {
  test("oauth4webapi: client_secret_basic and client_secret_post, a scope, and its own error for a wrong secret", async (t) => {
    const { baseUrl, basicClient, postClient } = await listeningService(t);
    const insecure = { [oauth.allowInsecureRequests]: true }; // plain http on loopback, in this test only
    const issuer = new URL(baseUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
    );
    /** One client_credentials grant through the library: its request, then its processing of the answer. */
    const grant = async (clientId: string, auth: oauth.ClientAuth, scope?: string) => {
      const client = { client_id: clientId };
      const parameters = new URLSearchParams(scope === undefined ? {} : { scope });
      const response = await oauth.clientCredentialsGrantRequest(as, client, auth, parameters, insecure);
      return oauth.processClientCredentialsResponse(as, client, response);
    };
    /** What a refused grant raised, as a value. */
    const refusal = (attempt: Promise<unknown>) =>
      attempt.then(
        () => assert.fail("must not yield a token"),
        (error: unknown) => error,
      );

    const basicTokens = await grant(basicClient.id, oauth.ClientSecretBasic(basicClient.secret), "invoices:read");
    assert.equal(basicTokens.token_type, "bearer");
    assert.equal(basicTokens.scope, "invoices:read");
    assert.equal(basicTokens.expires_in, 1800);
    assert.equal(basicTokens.refresh_token, undefined);

    const postTokens = await grant(postClient.id, oauth.ClientSecretPost(postClient.secret));
    assert.equal(postTokens.scope, "invoices:read invoices:write");

    // The token opens no user route, over the wire too.
    const me = await fetch(`${baseUrl}/me`, { headers: bearer(postTokens.access_token) });
    assert.equal(me.status, 401);

    // Every 401 of the service carries a challenge (the spec's rule: Bearer, where Basic was not tried), which
    // oauth4webapi reports before the body; the body is RFC 6749's all the same.
    const wrongPost = await refusal(grant(postClient.id, oauth.ClientSecretPost("wrong")));
    assert.ok(wrongPost instanceof oauth.WWWAuthenticateChallengeError);
    assert.equal(wrongPost.cause[0]?.scheme, "bearer");
    assert.deepEqual(await wrongPost.response.json(), INVALID_CLIENT);
    // A wrong secret over Basic: the 401 carries the Basic challenge (RFC 6749 section 5.2).
    const wrongBasic = await refusal(grant(basicClient.id, oauth.ClientSecretBasic("wrong")));
    assert.ok(wrongBasic instanceof oauth.WWWAuthenticateChallengeError);
    assert.equal(wrongBasic.cause[0]?.scheme, "basic");
    assert.equal(wrongBasic.status, 401);
    const badScope = await refusal(grant(basicClient.id, oauth.ClientSecretBasic(basicClient.secret), "payroll"));
    assert.ok(badScope instanceof oauth.ResponseBodyError);
    assert.equal(badScope.error, "invalid_scope");
  });

  test("Python authlib: client_secret_basic and client_secret_post, and OAuthError for a wrong secret", {
    skip: authlibMissing ? SKIP_MESSAGE : false,
  }, async (t) => {
    const { baseUrl, basicClient, postClient } = await listeningService(t);
    const { code, stdout, stderr } = await run(
      [AUTHLIB_SCRIPT, baseUrl, basicClient.id, basicClient.secret, postClient.id, postClient.secret],
      { cwd: import.meta.dirname, command: PYTHON },
    );
    assert.equal(code, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), {
      basic: { token_type: "bearer", expires_in: 1800, scope: "invoices:read", refresh_token: null },
      post: { token_type: "bearer", expires_in: 1800, scope: "invoices:read invoices:write", refresh_token: null },
      me_with_client_token: 401,
      wrong_secret: { raised: "OAuthError", error: "invalid_client" },
      bad_scope: { raised: "OAuthError", error: "invalid_scope" },
    });
  });
});

test("client authentications are counted by method and result (Prometheus)", async (t) => {
  const { createMetrics } = await import("../src/operations/metrics.ts");
  const store = await openTestStore(t);
  const metrics = createMetrics();
  const app = await buildApp({ config: testConfig(), store, metrics });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  const { id, secret } = await register(store, SERVICE);
  await requestToken(app, { grant_type: "client_credentials" }, basic(id, secret));
  await requestToken(app, { grant_type: "client_credentials" }, basic(id, "wrong"));
  await requestToken(app, { grant_type: "client_credentials" }, basic(id, "wrong"));
  const text = await metrics.exposition();
  assert.match(text, /oauth_client_authentications_total\{method="client_secret_basic",result="success"\} 1\n/);
  assert.match(text, /oauth_client_authentications_total\{method="client_secret_basic",result="failure"\} 2\n/);
});
