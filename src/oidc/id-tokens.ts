// ID tokens (OpenID Connect Core 2) and logout tokens (Back-Channel Logout
// 2.4), signed RS256 with the OIDC keys (OIDC_SIGNING_KEY_FILE, or the
// generated key), whatever algorithm signs the access tokens: OpenID Connect
// Discovery requires RS256 of every provider. The first key signs; every key
// verifies an id_token_hint. Beside tokens.ts, the only other module that
// touches the JWT library, because these are other kinds of token with
// another key and algorithm.
import { createHash, randomUUID } from "node:crypto";
import { createSigner, createVerifier } from "fast-jwt";
import type { KeySet } from "../auth/keys.ts";
import type { Clock } from "../auth/tokens.ts";

/** How long an ID token is good for: the RP reads it at once; its session is the RP's own. */
export const ID_TOKEN_LIFETIME_SECONDS = 10 * 60;

/** acr for a session with a second factor (the OpenID PAPE multi-factor policy), and without. */
export const ACR_MULTI_FACTOR = "http://schemas.openid.net/pape/policies/2007/06/multi-factor";
export const ACR_SINGLE_FACTOR = "0";
/** The ID token's typ: the plain "JWT" that relying parties' libraries expect of an ID token. */
export const ID_TOKEN_TYP = "JWT";
/** Back-Channel Logout 2.4's explicit type, so a logout token is never taken for an ID token. */
export const LOGOUT_TOKEN_TYP = "logout+jwt";

export function acrOf(amr: readonly string[]): string {
  return amr.includes("mfa") ? ACR_MULTI_FACTOR : ACR_SINGLE_FACTOR;
}

export interface IdTokenClaims {
  sub: string;
  aud: string;
  authTime: number;
  nonce: string | null;
  amr: readonly string[];
  /** The browser session (the sid of Front- and Back-Channel Logout). */
  sid: string;
  accessToken: string;
  /** Profile and e-mail claims the scopes grant. */
  extra: Record<string, unknown>;
}

export interface IdTokens {
  issue(claims: IdTokenClaims): string;
  /**
   * The client and session an id_token_hint names, when it is an ID token we signed (an expired one
   * counts too); a logout token or any other token is not a hint.
   */
  readHint(token: string): { aud: string; sid: string | undefined; sub: string } | undefined;
  /** A logout token (Back-Channel Logout 2.4) for one client and session. */
  logoutToken(clientId: string, sub: string, sid: string): string;
}

/** OIDC Core 3.1.3.6: the left half of the SHA-256 of the access token, base64url. */
export function atHash(accessToken: string): string {
  return createHash("sha256").update(accessToken).digest().subarray(0, 16).toString("base64url");
}

export function createIdTokens(keys: KeySet, issuer: () => string, clock: Clock): IdTokens {
  const [current] = keys.keys;
  if (current === undefined) throw new Error("at least one ID token key is required");
  const sign = createSigner({
    algorithm: "RS256",
    key: current.signingKey,
    header: { alg: "RS256", kid: current.kid, typ: ID_TOKEN_TYP },
  });
  const signLogout = createSigner({
    algorithm: "RS256",
    key: current.signingKey,
    header: { alg: "RS256", kid: current.kid, typ: LOGOUT_TOKEN_TYP },
  });
  const verifiers = new Map(
    keys.keys.map((key) => [
      key.kid,
      createVerifier({ algorithms: ["RS256"], key: key.verifyingKey, ignoreExpiration: true, ignoreNotBefore: true }),
    ]),
  );
  const now = () => Math.floor(clock() / 1000);

  return {
    issue({ sub, aud, authTime, nonce, amr, sid, accessToken, extra }) {
      const iat = now();
      return sign({
        ...extra,
        iss: issuer(),
        sub,
        aud,
        iat,
        exp: iat + ID_TOKEN_LIFETIME_SECONDS,
        auth_time: authTime,
        ...(nonce === null ? {} : { nonce }),
        amr: [...amr],
        acr: acrOf(amr),
        at_hash: atHash(accessToken),
        sid,
        // OIDC Core 2: with one audience, azp may be left out; said anyway, several libraries look for it.
        azp: aud,
      });
    },

    readHint(token) {
      if (token.length > 8192) return undefined;
      try {
        const header = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8")) as {
          kid?: unknown;
          typ?: unknown;
        };
        // An ID token, as issue() types it: a logout token (logout+jwt), signed with the same key and
        // naming the same sub, or any other kind of token is no hint (RFC 8725 section 3.11).
        if (header.typ !== ID_TOKEN_TYP) return undefined;
        const verify = typeof header.kid === "string" ? verifiers.get(header.kid) : undefined;
        if (verify === undefined) return undefined;
        const payload = verify(token) as Record<string, unknown>;
        if (payload.iss !== issuer() || typeof payload.aud !== "string" || typeof payload.sub !== "string")
          return undefined;
        if (payload.events !== undefined) return undefined;
        return { aud: payload.aud, sub: payload.sub, sid: typeof payload.sid === "string" ? payload.sid : undefined };
      } catch {
        return undefined;
      }
    },

    logoutToken(clientId, sub, sid) {
      const iat = now();
      return signLogout({
        iss: issuer(),
        aud: clientId,
        iat,
        exp: iat + 120,
        jti: randomUUID(),
        sub,
        sid,
        events: { "http://schemas.openid.net/event/backchannel-logout": {} },
      });
    },
  };
}
