// The check of one DPoP proof (RFC 9449 section 4.3), wherever a proof is
// taken: the token endpoint (core/token-routes.ts) and the resource
// endpoints (auth/guard.ts for the API, oidc/provider-routes.ts for
// userinfo). A proof is a JWT with `typ: dpop+jwt`, signed by one of the
// algorithms allowed below with the private key of the public JWK in its own
// header; it names the request's method (`htm`) and URL (`htu`, compared
// without query and fragment), was made just now (`iat` within the window),
// is used once (`jti`, the replay cache), carries the server's current
// nonce when nonces are on, and at a resource the hash of the access token
// it goes with (`ath`). The key's thumbprint (RFC 7638) is what tokens are
// bound to (`cnf.jkt`). Every refusal is a DpopRefusal with the RFC's error
// code and a short reason for the metrics and the audit; nothing here
// throws anything else for a malformed proof.
import { createHash } from "node:crypto";
import { calculateJwkThumbprint, errors, importJWK, type JWK, jwtVerify } from "jose";
import { jsonSegment } from "../auth/tokens.ts";
import type { DpopNonces } from "./nonces.ts";
import type { ReplayCache } from "./replay.ts";
import type { DpopSettings } from "./settings.ts";

/** RFC 9449 section 5.1's metadata: what the service takes (RFC 7518 names), asymmetric only. */
export const DPOP_SIGNING_ALGORITHMS = ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"] as const;

/** Longer proofs are refused before any work: an RSA-4096 key's proof is under 2 KB. */
const MAX_PROOF_LENGTH = 8192;
/** A jti longer than this is not a random identifier; the replay cache keys by its hash anyway. */
const MAX_JTI_LENGTH = 256;
/** Keys imported once: a client signs every proof with the same key, and importing it was most of a check. */
const MAX_KNOWN_KEYS = 1000;
/** The private members of a JWK (RFC 7518 section 6): a proof that carries one is refused. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/** RFC 9449's errors; invalid_token for a token at a resource that is not a DPoP-bound one. */
export type DpopErrorCode = "invalid_dpop_proof" | "use_dpop_nonce" | "invalid_token";

/** Why a proof was refused: `code` is the RFC's error, `reason` a short label (metrics, audit). */
export class DpopRefusal extends Error {
  readonly code: DpopErrorCode;
  readonly reason: string;
  constructor(code: DpopErrorCode, reason: string, description: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(description);
    Error.stackTraceLimit = limit;
    this.name = "DpopRefusal";
    this.code = code;
    this.reason = reason;
  }
}

const invalid = (reason: string, description: string) => new DpopRefusal("invalid_dpop_proof", reason, description);

/** What a proof is checked against. */
export interface ProofExpectation {
  /** The request's method. */
  method: string;
  /** The endpoint's own absolute URL (the service's public URL and the path), without query. */
  url: string;
  /** At a resource endpoint: the access token the proof goes with (`ath`). */
  accessToken?: string;
}

export interface VerifiedProof {
  /** The JWK SHA-256 thumbprint of the proof's key (RFC 7638), base64url. */
  jkt: string;
}

export interface ProofVerifier {
  /**
   * The proof of a request's DPoP header(s), checked; throws DpopRefusal. `header` is the header as
   * Node gives it: two DPoP headers arrive joined by a comma, or as an array, and are refused.
   */
  verify(header: string | string[] | undefined, expected: ProofExpectation): Promise<VerifiedProof>;
  /** The nonce to hand out now (the `DPoP-Nonce` header), or undefined while nonces are off. */
  currentNonce(): string | undefined;
}

/** The `ath` of an access token: base64url(SHA-256(token)) (RFC 9449 section 4.2). */
export function accessTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/** The URL as RFC 9449 section 4.3 compares it: scheme, host, port and path; no query, no fragment. */
export function comparableUrl(text: string): string | undefined {
  if (!URL.canParse(text)) return undefined;
  const url = new URL(text);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

export function createProofVerifier({
  settings,
  nonces,
  replays,
  clock,
}: {
  settings: DpopSettings;
  nonces: DpopNonces | undefined;
  replays: ReplayCache;
  clock: () => number;
}): ProofVerifier {
  const algorithms = [...DPOP_SIGNING_ALGORITHMS];
  const knownKeys = new Map<string, { key: Awaited<ReturnType<typeof importJWK>>; jkt: string }>();

  /** The public key of a proof's jwk for its alg, and its thumbprint; imported once per key and alg. */
  async function publicKeyOf(jwk: Record<string, unknown>, alg: string) {
    const id = `${alg} ${JSON.stringify(jwk)}`;
    const known = knownKeys.get(id);
    if (known !== undefined) return known;
    // As jose's EmbeddedJWK: a key for signatures, of this algorithm when it says, public.
    if (jwk.use !== undefined && jwk.use !== "sig")
      throw invalid("no_key", "The DPoP proof's jwk is not for signatures");
    if (jwk.alg !== undefined && jwk.alg !== alg) throw invalid("algorithm", "The DPoP proof's jwk is for another alg");
    let key: Awaited<ReturnType<typeof importJWK>>;
    try {
      key = await importJWK({ ...(jwk as JWK), ext: true }, alg);
    } catch {
      // A JWK the library or WebCrypto cannot import (an EC key without its curve, say): a bad proof.
      throw invalid("malformed", "The DPoP proof's jwk is not a usable public key");
    }
    if (key instanceof Uint8Array || key.type !== "public")
      throw invalid("private_key", "The DPoP proof's jwk must be a public key");
    const entry = { key, jkt: await calculateJwkThumbprint(jwk as JWK, "sha256") };
    if (knownKeys.size >= MAX_KNOWN_KEYS) knownKeys.delete(knownKeys.keys().next().value as string);
    knownKeys.set(id, entry);
    return entry;
  }
  // A jti is remembered while a proof with it could still be accepted.
  const replayWindowMs = (settings.proofMaxAgeSeconds + settings.proofFutureSeconds + 1) * 1000;

  async function verify(header: string | string[] | undefined, expected: ProofExpectation): Promise<VerifiedProof> {
    if (header === undefined) throw invalid("missing", "A DPoP proof is required");
    if (Array.isArray(header) || header.includes(",")) throw invalid("several", "Send exactly one DPoP header");
    const proof = header.trim();
    if (proof.length === 0 || proof.length > MAX_PROOF_LENGTH)
      throw invalid("malformed", "The DPoP proof is malformed");
    // The header is read before any key work, to refuse what the library would take: a private key.
    const end = proof.indexOf(".");
    const protectedHeader = end > 0 ? jsonSegment(proof.slice(0, end)) : undefined;
    if (protectedHeader === undefined) throw invalid("malformed", "The DPoP proof is malformed");
    const jwk = protectedHeader.jwk;
    if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk))
      throw invalid("no_key", "The DPoP proof carries no public key (jwk)");
    if (PRIVATE_MEMBERS.some((member) => member in jwk))
      throw invalid("private_key", "The DPoP proof's jwk must be a public key");
    if (typeof protectedHeader.alg !== "string" || !algorithms.includes(protectedHeader.alg as never))
      throw invalid("algorithm", `The DPoP proof's alg must be one of ${algorithms.join(", ")}`);

    const { key, jkt } = await publicKeyOf(jwk as Record<string, unknown>, protectedHeader.alg);
    let payload: Record<string, unknown>;
    try {
      // The service's clock, as for its own tokens, should a proof carry exp or nbf.
      ({ payload } = await jwtVerify(proof, key, { typ: "dpop+jwt", algorithms, currentDate: new Date(clock()) }));
    } catch (error) {
      // Everything here is the client's input: whatever the library or WebCrypto refuses is a bad proof.
      if (error instanceof errors.JWSSignatureVerificationFailed)
        throw invalid("signature", "The DPoP proof's signature does not verify");
      throw invalid("malformed", "The DPoP proof is malformed, or not of type dpop+jwt, or its jwk is unusable");
    }

    const { htm, htu, iat, jti, ath, nonce } = payload;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
      throw invalid("jti", "The DPoP proof needs a jti");
    if (htm !== expected.method) throw invalid("htm", "The DPoP proof is for another HTTP method");
    if (typeof htu !== "string" || comparableUrl(htu) !== comparableUrl(expected.url))
      throw invalid("htu", "The DPoP proof is for another URL");
    const now = Math.floor(clock() / 1000);
    if (typeof iat !== "number" || !Number.isFinite(iat)) throw invalid("iat", "The DPoP proof needs an iat");
    if (iat < now - settings.proofMaxAgeSeconds) throw invalid("iat", "The DPoP proof is too old");
    if (iat > now + settings.proofFutureSeconds) throw invalid("iat", "The DPoP proof is issued in the future");
    if (expected.accessToken !== undefined && ath !== accessTokenHash(expected.accessToken))
      throw invalid("ath", "The DPoP proof's ath does not match the access token");
    // After every check of the proof itself, so that a nonce is only asked of an otherwise good proof
    // (RFC 9449 section 8: the client retries the same request with it).
    if (nonces !== undefined && (typeof nonce !== "string" || !nonces.accepts(nonce)))
      throw new DpopRefusal(
        "use_dpop_nonce",
        nonce === undefined ? "nonce_missing" : "nonce_stale",
        "A DPoP nonce is required: send the one in the DPoP-Nonce header",
      );
    // Last: a proof refused for anything else has not used up its jti (the client may fix and resend).
    if (!(await replays.claim(`${jkt}:${createHash("sha256").update(jti).digest("base64url")}`, replayWindowMs)))
      throw invalid("replayed", "The DPoP proof was already used");
    return { jkt };
  }

  return { verify, currentNonce: () => nonces?.current() };
}
