// Signing key material: HS256 secrets (the spec's default) or, opt-in,
// Ed25519 (EdDSA) and P-256 (ES256) private keys. Each key has a kid that
// names it without revealing it: for secrets a hash, for public keys the
// RFC 7638 thumbprint, which any verifier can recompute from the published
// JWK. The first key signs; every key verifies, and the public halves of
// asymmetric keys are what GET /.well-known/jwks.json publishes (a private
// part or a secret never leaves this module as JSON).
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";

export const SIGNING_ALGORITHMS = ["HS256", "EdDSA", "ES256"] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
/** RS256 signs ID tokens only (OpenID Connect Discovery requires it); access tokens never use it. */
export type AsymmetricAlgorithm = Exclude<SigningAlgorithm, "HS256"> | "RS256";

/** A public key as published in a JWK Set (RFC 7517), with the fields verifiers look for. */
export interface PublicJwk {
  kty: string;
  crv?: string;
  x?: string;
  y?: string;
  /** RSA keys (RS256): modulus and exponent. */
  n?: string;
  e?: string;
  kid: string;
  alg: AsymmetricAlgorithm;
  use: "sig";
}

export interface SigningKey {
  kid: string;
  /** What fast-jwt signs with: the secret, or the private key as PEM. */
  signingKey: string;
  /** What fast-jwt verifies with: the secret, or the public key as PEM. */
  verifyingKey: string;
  /** Published in the JWK Set; absent for secrets, which are never published. */
  publicJwk?: PublicJwk;
}

export interface KeySet {
  algorithm: SigningAlgorithm | "RS256";
  /** The first signs; all verify. Never empty. */
  keys: readonly SigningKey[];
}

/** A kid that names a secret without revealing anything usable about it. */
export function secretKeyId(secret: string): string {
  return createHash("sha256").update(`kid:${secret}`).digest("base64url").slice(0, 16);
}

export function keySetFromSecrets(secrets: readonly string[]): KeySet {
  if (secrets.length === 0) throw new Error("at least one signing secret is required");
  return {
    algorithm: "HS256",
    keys: secrets.map((secret) => ({ kid: secretKeyId(secret), signingKey: secret, verifyingKey: secret })),
  };
}

/** The curve each algorithm signs with; a key of another type is refused at start-up. */
const KEY_TYPE: Record<AsymmetricAlgorithm, { type: string; curve?: string; label: string }> = {
  EdDSA: { type: "ed25519", label: "an Ed25519 private key" },
  ES256: { type: "ec", curve: "prime256v1", label: "a P-256 (prime256v1) EC private key" },
  RS256: { type: "rsa", label: "an RSA private key of at least 2048 bits" },
};

/** RFC 7518 section 3.3: an RS256 key is at least 2048 bits. */
const MIN_RSA_BITS = 2048;

/** A new private key for the algorithm, as PKCS#8 PEM (what the generated key file holds). */
export function generatePrivateKeyPem(algorithm: AsymmetricAlgorithm): string {
  const { privateKey } =
    algorithm === "EdDSA"
      ? generateKeyPairSync("ed25519")
      : algorithm === "RS256"
        ? generateKeyPairSync("rsa", { modulusLength: MIN_RSA_BITS })
        : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return privateKey.export({ format: "pem", type: "pkcs8" }) as string;
}

/**
 * Reads one PEM private key and checks that it fits the algorithm. Throws an Error whose message
 * names the problem but never contains key material.
 */
export function parsePrivateKey(algorithm: AsymmetricAlgorithm, pem: string): SigningKey {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new Error("is not a PEM private key (PKCS#8 or SEC1)");
  }
  const expected = KEY_TYPE[algorithm];
  if (
    key.asymmetricKeyType !== expected.type ||
    (expected.curve && key.asymmetricKeyDetails?.namedCurve !== expected.curve) ||
    (expected.type === "rsa" && (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS)
  )
    throw new Error(`must be ${expected.label} for ${algorithm}`);
  const publicKey = createPublicKey(key);
  const jwk = publicKey.export({ format: "jwk" }) as ThumbprintMembers;
  const kid = jwkThumbprint(jwk);
  const publicJwk: PublicJwk = {
    kty: jwk.kty,
    ...(jwk.kty === "RSA" ? { n: jwk.n, e: jwk.e } : { crv: jwk.crv, x: jwk.x }),
    ...(jwk.y === undefined ? {} : { y: jwk.y }),
    kid,
    alg: algorithm,
    use: "sig",
  };
  return {
    kid,
    signingKey: key.export({ format: "pem", type: "pkcs8" }) as string,
    verifyingKey: publicKey.export({ format: "pem", type: "spki" }) as string,
    publicJwk,
  };
}

export function keySetFromPrivateKeys(algorithm: AsymmetricAlgorithm, pems: readonly string[]): KeySet {
  if (pems.length === 0) throw new Error("at least one signing key is required");
  return { algorithm, keys: pems.map((pem) => parsePrivateKey(algorithm, pem)) };
}

type ThumbprintMembers = { kty: string; crv?: string; x?: string; y?: string; n?: string; e?: string };

/** RFC 7638: SHA-256 over the required members in lexicographic order, base64url. */
export function jwkThumbprint(jwk: ThumbprintMembers): string {
  const members =
    jwk.kty === "RSA"
      ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
      : jwk.kty === "EC"
        ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return createHash("sha256").update(JSON.stringify(members)).digest("base64url");
}

/** The JWK Set to publish: public keys only; empty under HS256, whose secret is never published. */
export function publicJwkSet(...keySets: KeySet[]): { keys: PublicJwk[] } {
  return { keys: keySets.flatMap((keySet) => keySet.keys.flatMap((key) => (key.publicJwk ? [key.publicJwk] : []))) };
}
