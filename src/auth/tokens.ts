// Access tokens: the only module that touches the JWT library. Issue and
// verify are pinned to HS256 (spec, Authentication); verify never trusts the
// token header's own choice of algorithm (RFC 8725 section 3.1). Time comes
// from an injected clock so tests can move it instead of sleeping.
import { createSigner, createVerifier } from "fast-jwt";

/** Spec, Limits: access tokens live 30 minutes from issuance. */
export const ACCESS_TOKEN_LIFETIME_SECONDS = 30 * 60;
/** Explicit typing (RFC 8725 section 3.11, RFC 9068): an access token says it is one. */
export const ACCESS_TOKEN_TYP = "at+jwt";
/** Longer tokens are refused before any decoding work; ours are about 200 bytes. */
export const MAX_TOKEN_LENGTH = 4096;

export interface AccessClaims {
  sub: string;
  iat: number;
  exp: number;
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
  issueAccessToken(email: string): string;
  /** The token's claims, or throws InvalidToken. */
  verifyAccessToken(token: string): AccessClaims;
}

export function createTokenService(secret: string, clock: Clock = Date.now): TokenService {
  const sign = createSigner({
    algorithm: "HS256",
    key: secret,
    header: { alg: "HS256", typ: ACCESS_TOKEN_TYP },
  });
  // Expiry is checked below against the injected clock, so the library's own
  // clock is switched off; signature, algorithm, typ and crit stay its job.
  const decode = createVerifier({
    algorithms: ["HS256"],
    key: secret,
    checkTyp: ACCESS_TOKEN_TYP,
    ignoreExpiration: true,
    ignoreNotBefore: true,
  });

  return {
    issueAccessToken(email) {
      const iat = Math.floor(clock() / 1000);
      return sign({ sub: email, iat, exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS });
    },

    verifyAccessToken(token) {
      if (token.length > MAX_TOKEN_LENGTH) throw new InvalidToken("token too long");
      let payload: Record<string, unknown>;
      try {
        payload = decode(token);
      } catch (error) {
        throw new InvalidToken((error as { code?: string }).code ?? "undecodable");
      }
      const now = Math.floor(clock() / 1000);
      const { sub, exp, iat, nbf } = payload;
      if (typeof exp !== "number" || !Number.isFinite(exp)) throw new InvalidToken("exp missing");
      if (exp <= now) throw new InvalidToken("expired");
      if (nbf !== undefined && (typeof nbf !== "number" || nbf > now)) throw new InvalidToken("not yet valid");
      if (typeof iat !== "number" || !Number.isFinite(iat)) throw new InvalidToken("iat missing");
      if (iat > now) throw new InvalidToken("issued in the future");
      if (typeof sub !== "string" || sub === "") throw new InvalidToken("sub missing");
      return { sub, exp, iat };
    },
  };
}
