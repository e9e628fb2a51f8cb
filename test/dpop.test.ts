// DPoP (RFC 9449, issue 36) with openid-client (v6, a certified client
// library) against the service listening on a real port: discovery names the
// proof algorithms; the password grant with a proof answers a DPoP-bound
// token after the nonce challenge, which the library retries by itself; GET
// /me takes it with `Authorization: DPoP` and a proof (and a new handle
// without the nonce is challenged with 401 and retried); the same token as a
// bearer token is refused; the refresh token is bound to the key (refused
// without a proof, and with another key's); the code flow of a public client
// gives a bound token that userinfo takes with its proof and refuses as
// Bearer; introspection names the key; client_credentials with a proof, and a
// client registered with dpop_bound_access_tokens refused without one.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { calculateJwkThumbprint, exportJWK } from "jose";
import * as client from "openid-client";
import { DPOP_PROOF_REQUIRED } from "../src/core/token-routes.ts";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { bearer, createUser, passwords, requestToken } from "./helpers.ts";
import { type OidcService, pkcePair, startOidcService } from "./oidc/fixture.ts";

const PASSWORD = "correct horse battery";
const RP = "https://rp.example";

/** RFC 7638: the thumbprint a DPoP-bound token names (cnf.jkt). */
async function thumbprint(keys: { publicKey: client.CryptoKey }): Promise<string> {
  return calculateJwkThumbprint(await exportJWK(keys.publicKey), "sha256");
}

/** The requests a configuration sends, by method and path, with their status. */
function recordRequests(config: client.Configuration): string[] {
  const seen: string[] = [];
  config[client.customFetch] = async (url, options) => {
    const response = await fetch(url, options as RequestInit);
    seen.push(`${options.method} ${new URL(url).pathname} ${response.status}`);
    return response;
  };
  return seen;
}

async function firstParty(service: OidcService) {
  const config = await client.discovery(new URL(service.issuer), "first-party-app", undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  return config;
}

async function passwordTokens(config: client.Configuration, DPoP?: client.DPoPHandle) {
  return client.genericGrantRequest(
    config,
    "password",
    { username: "ada@example.com", password: PASSWORD },
    DPoP ? { DPoP } : undefined,
  );
}

async function setUp(t: TestContext) {
  const service = await startOidcService(t, RP);
  const user = await createUser(service.store, "ada@example.com", PASSWORD);
  return { service, user };
}

describe("DPoP with openid-client", () => {
  test("discovery names the proof algorithms in both documents", async (t) => {
    const { service } = await setUp(t);
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      const body = (await (await fetch(`${service.issuer}${path}`)).json()) as Record<string, unknown>;
      assert.deepEqual(body.dpop_signing_alg_values_supported, [
        "ES256",
        "ES384",
        "EdDSA",
        "Ed25519",
        "RS256",
        "PS256",
      ]);
    }
  });

  test("password grant with a proof, the nonce retried; GET /me with DPoP; refused as Bearer; refresh bound to the key", async (t) => {
    const { service } = await setUp(t);
    const config = await firstParty(service);
    const seen = recordRequests(config);
    const keys = await client.randomDPoPKeyPair("ES256");
    const DPoP = client.getDPoPHandle(config, keys);

    const tokens = await passwordTokens(config, DPoP);
    assert.deepEqual(seen, ["POST /auth/token 400", "POST /auth/token 200"], "the nonce challenge, then the retry");
    assert.equal(tokens.token_type, "dpop");
    const jkt = await thumbprint(keys);
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1] as string, "base64url").toString());
    assert.deepEqual(claims.cnf, { jkt });

    const me = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${service.issuer}/me`),
      "GET",
      null,
      undefined,
      { DPoP },
    );
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { email: string }).email, "ada@example.com");
    assert.equal(seen.at(-1), "GET /me 200", "the nonce from the token endpoint was good at /me");

    // The same token as a bearer token (RFC 9449 section 7.2).
    const asBearer = await fetch(`${service.issuer}/me`, { headers: bearer(tokens.access_token) });
    assert.equal(asBearer.status, 401);
    assert.deepEqual(await asBearer.json(), { detail: "Could not validate credentials" });
    assert.match(asBearer.headers.get("www-authenticate") ?? "", /^Bearer, DPoP error="invalid_token"/);

    // A new handle of the same key knows no nonce: /me challenges it, and the library retries.
    const fresh = client.getDPoPHandle(config, keys);
    const retried = await client.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${service.issuer}/me`),
      "GET",
      null,
      undefined,
      { DPoP: fresh },
    );
    assert.equal(retried.status, 200);
    assert.deepEqual(seen.slice(-2), ["GET /me 401", "GET /me 200"]);

    // The refresh token is bound to the key: refused without a proof, and with another key's.
    const withoutProof = await requestToken(service.app, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
    });
    assert.equal(withoutProof.statusCode, 400);
    assert.equal(withoutProof.json().error, "invalid_dpop_proof");
    const other = client.getDPoPHandle(config, await client.randomDPoPKeyPair("ES256"));
    await assert.rejects(
      client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: other }),
      (error: client.ResponseBodyError) => error.error === "invalid_grant",
    );
    // Both refusals left it usable for the holder of the key.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP });
    assert.equal(refreshed.token_type, "dpop");
    const refreshedClaims = JSON.parse(
      Buffer.from(refreshed.access_token.split(".")[1] as string, "base64url").toString(),
    );
    assert.deepEqual(refreshedClaims.cnf, { jkt });
  });

  test("without a proof the password grant answers exactly as before", async (t) => {
    const { service } = await setUp(t);
    const answer = await requestToken(service.app, { username: "ada@example.com", password: PASSWORD });
    assert.equal(answer.statusCode, 200);
    assert.deepEqual(Object.keys(answer.json()), ["access_token", "token_type", "expires_in", "refresh_token"]);
    assert.equal(answer.json().token_type, "bearer");
    assert.equal(answer.headers["dpop-nonce"], undefined);
    const claims = JSON.parse(Buffer.from(answer.json().access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.cnf, undefined);
  });

  test("code flow of a public client with a proof: userinfo with DPoP, refused as Bearer; introspection names the key", async (t) => {
    const { service, user } = await setUp(t);
    const admin = await service.store.create({
      email: "admin@example.com",
      hashedPassword: await passwords.hash(PASSWORD),
      isAdmin: true,
    });
    const login = await requestToken(service.app, { username: "ada@example.com", password: PASSWORD });
    const opened = await service.app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(login.json().access_token),
    });
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const pkce = pkcePair();
    const keys = await client.randomDPoPKeyPair("EdDSA");
    const query = new URLSearchParams({
      response_type: "code",
      client_id: service.clients.spa.id,
      redirect_uri: `${RP}/spa/callback`,
      scope: "openid email",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
      state: "s",
      // RFC 9449 section 10: the code is bound to the key from the start.
      dpop_jkt: await thumbprint(keys),
    });
    const authorized = await service.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
    assert.equal(authorized.statusCode, 303, authorized.body);

    const config = await client.discovery(new URL(service.issuer), service.clients.spa.id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const DPoP = client.getDPoPHandle(config, keys);
    const tokens = await client.authorizationCodeGrant(
      config,
      new URL(authorized.headers.location as string),
      { pkceCodeVerifier: pkce.verifier, expectedState: "s" },
      undefined,
      { DPoP },
    );
    assert.equal(tokens.token_type, "dpop");
    const info = await client.fetchUserInfo(config, tokens.access_token, user.id, { DPoP });
    assert.deepEqual(info, { sub: user.id, email: "ada@example.com", email_verified: false });

    const asBearer = await fetch(`${service.issuer}/oauth/userinfo`, { headers: bearer(tokens.access_token) });
    assert.equal(asBearer.status, 401);
    assert.deepEqual(await asBearer.json(), { detail: "Could not validate credentials" });
    assert.match(asBearer.headers.get("www-authenticate") ?? "", /DPoP error="invalid_token"/);

    const adminToken = (await requestToken(service.app, { username: admin.email, password: PASSWORD })).json()
      .access_token as string;
    const introspected = await service.app.inject({
      method: "POST",
      url: "/auth/introspect",
      headers: { ...bearer(adminToken), "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token: tokens.access_token }).toString(),
    });
    assert.equal(introspected.statusCode, 200);
    const jkt = await thumbprint(keys);
    assert.equal(introspected.json().token_type, "DPoP");
    assert.deepEqual(introspected.json().cnf, { jkt });

    // The public client's refresh token is bound to the key too.
    const other = client.getDPoPHandle(config, await client.randomDPoPKeyPair("EdDSA"));
    await assert.rejects(
      client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: other }),
      (error: client.ResponseBodyError) => error.error === "invalid_grant",
    );
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP });
    assert.equal(refreshed.token_type, "dpop");
  });

  test("client_credentials with a proof; a client registered with dpop_bound_access_tokens refused without one", async (t) => {
    const { service } = await setUp(t);
    const registry = createClientRegistry(service.store);
    const by = { userId: null, clientAddress: null };
    const { client: registered, secret } = await registry.register(
      clientMetadata({
        client_name: "Strict service",
        grant_types: ["client_credentials"],
        token_endpoint_auth_method: "client_secret_basic",
        scope: "invoices:read",
        dpop_bound_access_tokens: true,
      }),
      by,
    );
    const config = await client.discovery(
      new URL(service.issuer),
      registered.id,
      undefined,
      client.ClientSecretBasic(secret as string),
      { execute: [client.allowInsecureRequests] },
    );
    await assert.rejects(
      client.clientCredentialsGrant(config),
      (error: client.ResponseBodyError) =>
        error.error === "invalid_dpop_proof" && error.error_description === DPOP_PROOF_REQUIRED,
    );
    const keys = await client.randomDPoPKeyPair("RS256");
    const tokens = await client.clientCredentialsGrant(config, undefined, { DPoP: client.getDPoPHandle(config, keys) });
    assert.equal(tokens.token_type, "dpop");
    const claims = JSON.parse(Buffer.from(tokens.access_token.split(".")[1] as string, "base64url").toString());
    assert.deepEqual(claims.cnf, { jkt: await thumbprint(keys) });
  });
});
