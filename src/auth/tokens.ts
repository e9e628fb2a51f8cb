// Access tokens: the only module that touches the JWT library. Issue and
// verify are pinned to HS256 (spec, Authentication); verify never trusts the
// token header's own choice of algorithm (RFC 8725 section 3.1). Tokens carry
// typ "at+jwt" (RFC 8725 section 3.11) and the kid of the secret that signed
// them, so secrets can rotate: the first signs, all of them verify. Time
// comes from an injected clock so tests can move it instead of sleeping.
// Every token carries its user's credential stamp (store/ids.ts), which the
// token check compares with the stored one: a credential change ends every
// token issued before it, exactly, whatever the clocks and however close.
import { createHash } from "node:crypto";
import { createSigner, createVerifier } from "fast-jwt";

/** Spec, Limits: access tokens live 30 minutes from issuance. */
export const ACCESS_TOKEN_LIFETIME_SECONDS = 30 * 60;
export const ACCESS_TOKEN_TYP = "at+jwt";
/** Longer tokens are refused before any decoding work; ours are about 250 bytes. */
export const MAX_TOKEN_LENGTH = 4096;

export interface AccessClaims {
  sub: string;
  iat: number;
  exp: number;
  /** The user's credential stamp when the token was issued. */
  stamp: string;
  /** The session the token was issued in, when there is one. */
  sid?: string;
}

/** Whom a token is issued to: the spec's subject, and the stamp the token check compares. */
export interface TokenSubject {
  email: string;
  credentialStamp: string;
}

export type Clock = () => number;

/** Why a token was refused: logged at debug level, never sent to the client. */
export class InvalidToken extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "InvalidToken";
  }
}

export interface TokenService {
  issueAccessToken(subject: TokenSubject, sessionId?: string): string;
  /** The token's claims, or throws InvalidToken. */
  verifyAccessToken(token: string): AccessClaims;
}

export interface TokenOptions {
  /** The first signs; every one verifies. Each at least 32 bytes (checked by config). */
  secrets: readonly string[];
  clock?: Clock;
  leewaySeconds?: number;
}

/** A key id that names a secret without revealing anything usable about it. */
export function keyId(secret: string): string {
  return createHash("sha256").update(`kid:${secret}`).digest("base64url").slice(0, 16);
}

export function createTokenService({ secrets, clock = Date.now, leewaySeconds = 0 }: TokenOptions): TokenService {
  const [signingSecret] = secrets;
  if (signingSecret === undefined) throw new Error("at least one signing secret is required");
  const sign = createSigner({
    algorithm: "HS256",
    key: signingSecret,
    header: { alg: "HS256", typ: ACCESS_TOKEN_TYP, kid: keyId(signingSecret) },
  });
  // One verifier per secret, chosen by kid. Expiry is checked below against the
  // injected clock; signature, algorithm, typ and crit stay the library's job.
  // (Verified tokens are remembered one level up, in verified-tokens.ts.)
  const verifiers = new Map(
    secrets.map((secret) => [
      keyId(secret),
      createVerifier({
        algorithms: ["HS256"],
        key: secret,
        checkTyp: ACCESS_TOKEN_TYP,
        ignoreExpiration: true,
        ignoreNotBefore: true,
      }),
    ]),
  );

  return {
    issueAccessToken(subject, sessionId) {
      const iat = Math.floor(clock() / 1000);
      return sign({
        sub: subject.email,
        iat,
        exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS,
        stamp: subject.credentialStamp,
        ...(sessionId ? { sid: sessionId } : {}),
      });
    },

    verifyAccessToken(token) {
      if (token.length > MAX_TOKEN_LENGTH) throw new InvalidToken("token too long");
      const decode = verifiers.get(readKeyId(token));
      if (decode === undefined) throw new InvalidToken("unknown kid");
      let payload: Record<string, unknown>;
      try {
        payload = decode(token);
      } catch (error) {
        throw new InvalidToken((error as { code?: string }).code ?? "undecodable");
      }
      const now = Math.floor(clock() / 1000);
      const { sub, exp, iat, nbf, stamp } = payload;
      if (typeof exp !== "number" || !Number.isFinite(exp)) throw new InvalidToken("exp missing");
      if (exp + leewaySeconds <= now) throw new InvalidToken("expired");
      if (nbf !== undefined && (typeof nbf !== "number" || nbf > now + leewaySeconds))
        throw new InvalidToken("not yet valid");
      if (typeof iat !== "number" || !Number.isFinite(iat)) throw new InvalidToken("iat missing");
      if (iat > now + leewaySeconds) throw new InvalidToken("issued in the future");
      if (typeof sub !== "string" || sub === "") throw new InvalidToken("sub missing");
      if (typeof stamp !== "string") throw new InvalidToken("credential stamp missing");
      return typeof payload.sid === "string" ? { sub, exp, iat, stamp, sid: payload.sid } : { sub, exp, iat, stamp };
    },
  };
}

/** The kid of the protected header, or "" when there is none or the header is not JSON. */
function readKeyId(token: string): string {
  const end = token.indexOf(".");
  if (end <= 0) return "";
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, end), "base64url").toString("utf8"));
    const kid = (header as { kid?: unknown } | null)?.kid;
    return typeof kid === "string" ? kid : "";
  } catch {
    return "";
  }
}
