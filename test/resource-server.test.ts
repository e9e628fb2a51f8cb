// The resource-server example (examples/resource-server/server.ts) against the
// real service, both as child processes talking HTTP, under HS256 (shared
// secret), EdDSA and ES256 (keys from the JWK Set): a token from the service
// is accepted there; forged, altered, expired or wrongly addressed ones are
// not; after a key rotation the old tokens keep working and new ones verify
// too, without restarting the resource server when keys are published.
// Forged and expired tokens are signed by this test with jose.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK, importPKCS8, SignJWT } from "jose";
import { type AsymmetricAlgorithm, generatePrivateKeyPem, type SigningAlgorithm } from "../src/auth/keys.ts";
import { freePort, type RunningService, scratchDir, startService } from "./process.ts";

const EXAMPLE = resolve(import.meta.dirname, "../examples/resource-server/server.ts");
const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

/** One key: an HS256 secret, or an EdDSA / ES256 private key in a file (owner-only). */
interface Key {
  /** What the service's setting names: the secret itself, or the key file. */
  setting: string;
  /** What jose signs with. */
  signingKey: () => Promise<Parameters<SignJWT["sign"]>[0]>;
  kid: () => Promise<string>;
}

function makeKey(algorithm: SigningAlgorithm, dir: string, name: string): Key {
  if (algorithm === "HS256") {
    const secret = randomBytes(32).toString("base64url");
    // The service's documented kid for a secret is opaque; forged tokens below borrow the real one.
    return { setting: secret, signingKey: async () => new TextEncoder().encode(secret), kid: async () => "" };
  }
  const file = join(dir, `${name}.pem`);
  const pem = generatePrivateKeyPem(algorithm as AsymmetricAlgorithm);
  writeFileSync(file, pem, { mode: 0o600 });
  const privateKey = () => importPKCS8(pem, algorithm, { extractable: true });
  return {
    setting: file,
    signingKey: privateKey,
    kid: async () => {
      const { d: _private, ...publicJwk } = await exportJWK(await privateKey());
      return calculateJwkThumbprint(publicJwk);
    },
  };
}

function serviceEnv(algorithm: SigningAlgorithm, keys: Key[], port: number): Record<string, string> {
  const material = keys.map((key) => key.setting).join(",");
  return {
    PORT: String(port),
    DATABASE_URL: "sqlite:users.db",
    ...(algorithm === "HS256"
      ? { SIGNING_SECRET: material }
      : { SIGNING_ALGORITHM: algorithm, SIGNING_KEY_FILE: material }),
  };
}

async function login(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: EMAIL, password: PASSWORD }),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { access_token: string }).access_token;
}

async function hello(resourceServer: RunningService, token: string): Promise<number> {
  const response = await fetch(`${resourceServer.baseUrl}/hello`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await response.json()) as { sub?: string };
  if (response.status === 200) assert.equal(body.sub, EMAIL);
  else assert.equal(response.headers.get("www-authenticate"), 'Bearer error="invalid_token"');
  return response.status;
}

/**
 * The access tokens' keys in the JWK Set. Since issue 35 OpenID Connect is on with SQLite without any
 * setting, so the set also lists the ID tokens' RSA key (RS256, never an access token's algorithm):
 * exactly one, set apart here.
 */
async function kidsPublished(baseUrl: string): Promise<string[]> {
  const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string; alg?: string; kty: string }[];
  };
  const idTokenKeys = jwks.keys.filter((key) => key.alg === "RS256");
  assert.equal(idTokenKeys.length, 1, "the ID tokens' one RSA key");
  assert.equal(idTokenKeys[0]?.kty, "RSA");
  return jwks.keys.filter((key) => key.alg !== "RS256").map((key) => key.kid);
}

for (const algorithm of ["HS256", "EdDSA", "ES256"] as const) {
  describe(`resource-server example with ${algorithm}`, () => {
    test("accepts the service's tokens, refuses forged, altered, expired and misaddressed ones, and survives a rotation", async (t) => {
      const cwd = scratchDir(t);
      const port = await freePort();
      const issuer = `http://127.0.0.1:${port}`;
      const [oldKey, newKey, strangerKey] = ["old", "new", "stranger"].map((name) => makeKey(algorithm, cwd, name)) as [
        Key,
        Key,
        Key,
      ];

      let service = await startService(cwd, serviceEnv(algorithm, [oldKey], port));
      t.after(() => service.stop());
      // The resource server knows the issuer; under HS256 it also holds the shared secret(s).
      const resourceEnv = (keys: Key[]) => ({
        ISSUER: issuer,
        JWKS_COOLDOWN_MS: "0",
        ...(algorithm === "HS256" ? { SHARED_SECRET: keys.map((key) => key.setting).join(",") } : {}),
      });
      let resourceServer = await startService(cwd, resourceEnv([oldKey]), [EXAMPLE]);
      t.after(() => resourceServer.stop());

      const signUp = await fetch(`${issuer}/users`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
      });
      assert.equal(signUp.status, 201);
      const oldToken = await login(issuer);
      const header = decodeProtectedHeader(oldToken);
      assert.equal(header.alg, algorithm);
      assert.equal(header.typ, "at+jwt");
      if (algorithm !== "HS256") {
        assert.equal(header.kid, await oldKey.kid());
        assert.deepEqual(await kidsPublished(issuer), [header.kid]);
      } else {
        assert.deepEqual(await kidsPublished(issuer), [], "an HS256 secret is never published");
      }
      assert.equal(await hello(resourceServer, oldToken), 200, "a token from the service is accepted");

      // Tokens this test signs itself: right claims, and the real kid, so only the key or the claims differ.
      const now = Math.floor(Date.now() / 1000);
      const mint = async (key: Key, claims: Record<string, unknown>, alg: string = algorithm) =>
        new SignJWT({ sub: EMAIL, ...claims })
          .setProtectedHeader({ alg, typ: "at+jwt", kid: header.kid as string })
          .sign(await key.signingKey());
      const valid = { iss: issuer, aud: issuer, iat: now, exp: now + 600 };
      assert.equal(await hello(resourceServer, await mint(oldKey, valid)), 200, "the test's minting is sound");
      assert.equal(await hello(resourceServer, await mint(strangerKey, valid)), 401, "signed by another key");
      assert.equal(
        await hello(resourceServer, await mint(oldKey, { ...valid, iat: now - 3600, exp: now - 1800 })),
        401,
        "expired",
      );
      assert.equal(await hello(resourceServer, await mint(oldKey, { ...valid, aud: "someone-else" })), 401, "aud");
      assert.equal(await hello(resourceServer, await mint(oldKey, { ...valid, iss: "http://evil.test" })), 401, "iss");
      const [head, , signature] = oldToken.split(".") as [string, string, string];
      const altered = Buffer.from(JSON.stringify({ ...valid, sub: "mallory@example.com" })).toString("base64url");
      assert.equal(await hello(resourceServer, `${head}.${altered}.${signature}`), 401, "altered payload");
      const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url")}.${altered}.`;
      assert.equal(await hello(resourceServer, unsigned), 401, "alg none");

      // Rotation: the new key signs, the old one is still accepted (and published) while its tokens live.
      assert.equal(await service.stop(), 0);
      service = await startService(cwd, serviceEnv(algorithm, [newKey, oldKey], port));
      if (algorithm === "HS256") {
        // A shared secret cannot be fetched: the resource server is given the new one too.
        assert.equal(await resourceServer.stop(), 0);
        resourceServer = await startService(cwd, resourceEnv([newKey, oldKey]), [EXAMPLE]);
      } else {
        assert.deepEqual(await kidsPublished(issuer), [await newKey.kid(), await oldKey.kid()]);
      }
      const newToken = await login(issuer);
      assert.notEqual(decodeProtectedHeader(newToken).kid, header.kid, "the new key signs");
      assert.equal(await hello(resourceServer, oldToken), 200, "the old token still works after the rotation");
      assert.equal(await hello(resourceServer, newToken), 200, "the new token verifies, without a restart under JWKS");
      const me = await fetch(`${issuer}/me`, { headers: { authorization: `Bearer ${oldToken}` } });
      assert.equal(me.status, 200, "the service itself still accepts the old token");

      // Once the old key's last token has expired, the operator drops it: no longer published or accepted.
      assert.equal(await service.stop(), 0);
      service = await startService(cwd, serviceEnv(algorithm, [newKey], port));
      if (algorithm !== "HS256") assert.deepEqual(await kidsPublished(issuer), [await newKey.kid()]);
      const gone = await fetch(`${issuer}/me`, { headers: { authorization: `Bearer ${oldToken}` } });
      assert.equal(gone.status, 401);
      assert.equal(await hello(resourceServer, newToken), 200);
    });
  });
}

describe("resource-server example without its key set", () => {
  test("answers 503 with Retry-After, not 401, while the JWK Set cannot be fetched", async (t) => {
    const cwd = scratchDir(t);
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const resourceServer = await startService(cwd, { ISSUER: nowhere, JWKS_COOLDOWN_MS: "0" }, [EXAMPLE]);
    t.after(() => resourceServer.stop());
    const key = makeKey("EdDSA", cwd, "any");
    const token = await new SignJWT({ sub: EMAIL, iss: nowhere, aud: nowhere })
      .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: await key.kid() })
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(await key.signingKey());
    const response = await fetch(`${resourceServer.baseUrl}/hello`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
  });
});
