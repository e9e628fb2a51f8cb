// Opt-in asymmetric signing (EdDSA, ES256): tokens name their key by an RFC
// 7638 kid that matches the published JWK, rotation keeps old keys accepted
// and published, the algorithm is pinned (no HS256 forged with the public key,
// no other curve), iss and aud are set and checked, and the JWK Set never
// carries a private part or the HS256 secret, with caching headers.
import assert from "node:assert/strict";
import { createPublicKey } from "node:crypto";
import { describe, type TestContext, test } from "node:test";
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, importPKCS8, jwtVerify, SignJWT } from "jose";
import { buildApp } from "../src/app.ts";
import { generatePrivateKeyPem } from "../src/auth/keys.ts";
import type { Config } from "../src/config.ts";
import {
  base64url,
  bearer,
  buildTestApp,
  createUser,
  loginToken,
  mintToken,
  TEST_AUDIENCE,
  TEST_ISSUER,
  TEST_SECRET,
  testConfig,
} from "./helpers.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

async function appWith(t: TestContext, config: Partial<Config>) {
  const testApp = await buildTestApp(t, config);
  const { credentialStamp: stamp } = await createUser(testApp.store, EMAIL, PASSWORD);
  const me = (token: string) => testApp.app.inject({ method: "GET", url: "/me", headers: bearer(token) });
  const jwks = async () => (await testApp.app.inject({ method: "GET", url: "/.well-known/jwks.json" })).json();
  return { ...testApp, me, jwks, stamp, login: () => loginToken(testApp.app, EMAIL, PASSWORD) };
}

for (const algorithm of ["EdDSA", "ES256"] as const) {
  describe(`signing with ${algorithm}`, () => {
    test("signs with the private key, names it by its RFC 7638 thumbprint, and publishes only its public half", async (t) => {
      const pem = generatePrivateKeyPem(algorithm);
      const { me, jwks, login } = await appWith(t, {
        signingAlgorithm: algorithm,
        signingSecrets: [],
        signingKeys: [pem],
      });
      const token = await login();
      const header = decodeProtectedHeader(token);
      assert.deepEqual(header, { alg: algorithm, typ: "at+jwt", kid: header.kid });
      const set = await jwks();
      assert.equal(set.keys.length, 1);
      const [jwk] = set.keys;
      assert.equal(jwk.kid, header.kid);
      assert.equal(jwk.kid, await calculateJwkThumbprint(jwk));
      assert.equal(jwk.alg, algorithm);
      assert.equal(jwk.use, "sig");
      assert.equal(jwk.d, undefined, "never the private part");
      assert.doesNotMatch(JSON.stringify(set), /PRIVATE|"d"/);
      // An independent library verifies the token with the published key alone.
      const { payload } = await jwtVerify(token, await importJWK(jwk, algorithm), {
        issuer: TEST_ISSUER,
        audience: TEST_AUDIENCE,
        typ: "at+jwt",
      });
      assert.equal(payload.sub, EMAIL);
      assert.equal((await me(token)).statusCode, 200);
    });

    test("rotation: the new key signs; tokens of the old key keep working while it is listed, and stop after", async (t) => {
      const [oldPem, newPem] = [generatePrivateKeyPem(algorithm), generatePrivateKeyPem(algorithm)];
      // One database and one clock; three deployments of the service in turn: before, during and after rotation.
      const { store, clock } = await buildTestApp(t);
      await createUser(store, EMAIL, PASSWORD);
      const deploy = async (signingKeys: string[]) => {
        const config = testConfig({ signingAlgorithm: algorithm, signingSecrets: [], signingKeys });
        const app = await buildApp({ config, store, clock: clock.read });
        t.after(() => app.close());
        return {
          login: () => loginToken(app, EMAIL, PASSWORD),
          me: (token: string) => app.inject({ method: "GET", url: "/me", headers: bearer(token) }),
          kids: async () =>
            (await app.inject({ method: "GET", url: "/.well-known/jwks.json" }))
              .json()
              .keys.map((key: { kid: string }) => key.kid),
        };
      };

      const before = await deploy([oldPem]);
      const oldToken = await before.login();
      const oldKid = decodeProtectedHeader(oldToken).kid;

      const rotated = await deploy([newPem, oldPem]);
      const newToken = await rotated.login();
      const newKid = decodeProtectedHeader(newToken).kid;
      assert.notEqual(newKid, oldKid);
      assert.deepEqual(await rotated.kids(), [newKid, oldKid], "the old key stays published");
      assert.equal((await rotated.me(oldToken)).statusCode, 200, "and accepted");
      assert.equal((await rotated.me(newToken)).statusCode, 200);

      const retired = await deploy([newPem]);
      assert.deepEqual(await retired.kids(), [newKid]);
      assert.equal((await retired.me(oldToken)).statusCode, 401);
      assert.equal((await retired.me(newToken)).statusCode, 200);
    });

    test("refuses tokens forged with the public key as an HMAC secret, unsigned, or signed by another key", async (t) => {
      const pem = generatePrivateKeyPem(algorithm);
      const { me, login, clock, stamp } = await appWith(t, {
        signingAlgorithm: algorithm,
        signingSecrets: [],
        signingKeys: [pem],
      });
      const kid = decodeProtectedHeader(await login()).kid as string;
      const publicPem = createPublicKey(pem).export({ format: "pem", type: "spki" }) as string;
      const claims = { sub: EMAIL, iat: clock.seconds, exp: clock.seconds + 600, stamp };
      const confused = mintToken(claims, { secret: publicPem, header: { kid } });
      const none = `${base64url({ alg: "none", typ: "at+jwt", kid })}.${base64url({ ...claims, iss: TEST_ISSUER, aud: TEST_AUDIENCE })}.`;
      const stranger = await new SignJWT({ ...claims, iss: TEST_ISSUER, aud: TEST_AUDIENCE })
        .setProtectedHeader({ alg: algorithm, typ: "at+jwt", kid })
        .sign(await importPKCS8(generatePrivateKeyPem(algorithm), algorithm));
      const genuine = await new SignJWT({ ...claims, iss: TEST_ISSUER, aud: TEST_AUDIENCE })
        .setProtectedHeader({ alg: algorithm, typ: "at+jwt", kid })
        .sign(await importPKCS8(pem, algorithm));
      assert.equal((await me(genuine)).statusCode, 200, "the test's own minting is sound");
      for (const [name, token] of Object.entries({ confused, none, stranger })) {
        const response = await me(token);
        assert.equal(response.statusCode, 401, name);
        assert.deepEqual(response.json(), { detail: "Could not validate credentials" });
        assert.equal(response.headers["www-authenticate"], "Bearer");
      }
    });
  });
}

describe("iss and aud", () => {
  test("access tokens carry the configured issuer and audience, and the token check requires both", async (t) => {
    const { me, login, clock, stamp } = await appWith(t, {});
    const payload = JSON.parse(Buffer.from((await login()).split(".")[1] as string, "base64url").toString());
    assert.equal(payload.iss, TEST_ISSUER);
    assert.equal(payload.aud, TEST_AUDIENCE);
    const claims = { sub: EMAIL, iat: clock.seconds, exp: clock.seconds + 600, stamp };
    assert.equal((await me(mintToken(claims))).statusCode, 200);
    assert.equal((await me(mintToken({ ...claims, aud: [TEST_AUDIENCE, "other"] }))).statusCode, 200, "aud array");
    const wrong = {
      "another issuer": { ...claims, iss: "https://elsewhere.example" },
      "no issuer": { ...claims, iss: undefined },
      "another audience": { ...claims, aud: "https://other-api.example" },
      "no audience": { ...claims, aud: undefined },
    };
    for (const [name, payloadOf] of Object.entries(wrong)) {
      const response = await me(mintToken(payloadOf));
      assert.equal(response.statusCode, 401, name);
      assert.equal(response.headers["www-authenticate"], "Bearer");
    }
  });

  test("without settings, the issuer is the listen address and the audience the issuer", async (t) => {
    const { app, login } = await appWith(t, { tokenIssuer: undefined, tokenAudience: undefined });
    const address = await app.listen({ host: "127.0.0.1", port: 0 });
    const payload = JSON.parse(Buffer.from((await login()).split(".")[1] as string, "base64url").toString());
    assert.equal(payload.iss, address);
    assert.equal(payload.aud, address);
  });

  test("without settings, neither is required: a token of another instance or port passes the spec's token check", async (t) => {
    const { app, me, clock, stamp } = await appWith(t, { tokenIssuer: undefined, tokenAudience: undefined });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const claims = { sub: EMAIL, iat: clock.seconds, exp: clock.seconds + 600, stamp };
    for (const [name, payload] of Object.entries({
      "another instance's address": { ...claims, iss: "http://10.0.0.7:8000", aud: "http://10.0.0.7:8000" },
      "the same host on another port": { ...claims, iss: "http://127.0.0.1:1", aud: "http://127.0.0.1:1" },
      "no iss or aud at all (the spec names only sub and exp)": { ...claims, iss: undefined, aud: undefined },
    })) {
      const response = await me(mintToken(payload));
      assert.equal(response.statusCode, 200, name);
    }
    // The rest of the check stands: an expired token is refused whatever it names.
    const expired = await me(mintToken({ ...claims, iat: clock.seconds - 3600, exp: clock.seconds - 1800 }));
    assert.equal(expired.statusCode, 401);
    assert.deepEqual(expired.json(), { detail: "Could not validate credentials" });
  });

  test("an audience declared alone is required, the undeclared issuer is not", async (t) => {
    const { me, clock, stamp } = await appWith(t, { tokenIssuer: undefined, tokenAudience: TEST_AUDIENCE });
    const claims = { sub: EMAIL, iat: clock.seconds, exp: clock.seconds + 600, stamp };
    assert.equal((await me(mintToken({ ...claims, iss: "http://10.0.0.7:8000", aud: TEST_AUDIENCE }))).statusCode, 200);
    assert.equal((await me(mintToken({ ...claims, aud: "https://other-api.example" }))).statusCode, 401);
  });
});

describe("GET /.well-known/jwks.json", () => {
  test("is an empty set under HS256: the secret is never published", async (t) => {
    const { app, jwks } = await appWith(t, {});
    assert.deepEqual(await jwks(), { keys: [] });
    const response = await app.inject({ method: "GET", url: "/.well-known/jwks.json" });
    assert.ok(!response.body.includes(TEST_SECRET));
  });

  test("is cacheable for a short while, with an ETag that answers 304", async (t) => {
    const { app } = await appWith(t, {
      signingAlgorithm: "EdDSA",
      signingSecrets: [],
      signingKeys: [generatePrivateKeyPem("EdDSA")],
    });
    const first = await app.inject({ method: "GET", url: "/.well-known/jwks.json" });
    assert.equal(first.statusCode, 200);
    assert.match(first.headers["content-type"] as string, /^application\/json/);
    assert.equal(first.headers["cache-control"], "public, max-age=300");
    const etag = first.headers.etag as string;
    assert.match(etag, /^"[\w-]+"$/);
    const again = await app.inject({
      method: "GET",
      url: "/.well-known/jwks.json",
      headers: { "if-none-match": etag },
    });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, "");
  });
});

describe("GET /.well-known/oauth-authorization-server", () => {
  test("describes what is served without OpenID Connect: every grant, the auth methods and the algorithm (RFC 8414)", async (t) => {
    const { app } = await appWith(t, {
      publicUrl: "https://auth.example.com",
      tokenIssuer: "https://auth.example.com",
    });
    const response = await app.inject({ method: "GET", url: "/.well-known/oauth-authorization-server" });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), {
      issuer: "https://auth.example.com",
      token_endpoint: "https://auth.example.com/auth/token",
      revocation_endpoint: "https://auth.example.com/auth/revoke",
      introspection_endpoint: "https://auth.example.com/auth/introspect",
      jwks_uri: "https://auth.example.com/.well-known/jwks.json",
      grant_types_supported: [
        "password",
        "refresh_token",
        "urn:user-token-service:grant-type:mfa-otp",
        "urn:user-token-service:grant-type:mfa-recovery-code",
        "urn:user-token-service:grant-type:mfa-webauthn",
        "urn:user-token-service:grant-type:webauthn",
        "client_credentials",
      ],
      response_types_supported: [],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      access_token_signing_alg_values_supported: ["HS256"],
      dpop_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"],
      service_documentation: "https://auth.example.com/docs",
    });
    assert.match(response.headers["cache-control"] as string, /^public, max-age=\d+$/);
  });
});
