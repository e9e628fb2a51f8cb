// The spec's token check for protected routes, in its order, as named
// preHandlers. A route opts in explicitly with { preHandler: [authenticate] }
// (and requireAdmin after it); nothing is exempted by matching URLs. On
// success request.user is the caller.
// A DPoP-bound token (RFC 9449, issue 36: its claims name a key, `jkt`) is
// taken only as `Authorization: DPoP <token>` with a proof by that key for
// this request (dpop/dpop.ts), and refused as a bearer token; a bearer
// token without a key pays one property check for all of this.
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import { type Dpop, DpopRefusal } from "../dpop/dpop.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS, forbidden, NOT_AUTHENTICATED, unauthorized } from "../errors.ts";
import type { UserRecord } from "../store/store.ts";
import { type AccessClaims, InvalidToken, type TokenService } from "./tokens.ts";
import type { UserLookup } from "./user-cache.ts";

declare module "fastify" {
  interface FastifyRequest {
    user: UserRecord | null;
    /** The session the caller's access token was issued in, if any. */
    sessionId: string | null;
  }
}

/**
 * A preHandler. Called by Fastify with `done`, it calls it at once when it can decide without waiting
 * (a bad token, or the user answered from memory) and otherwise returns a promise; called by a route
 * without `done`, its result can be awaited either way.
 */
export type Hook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done?: (error?: Error) => void,
) => void | Promise<void>;

export interface Guards {
  /** The token check; 401 without a valid token for an existing, active user. */
  authenticate: Hook;
  /** As authenticate when an Authorization header is sent; an anonymous caller passes with request.user null. */
  authenticateIfPresent: Hook;
  /** After authenticate: 403 unless the caller is an admin. */
  requireAdmin: Hook;
  /**
   * The same check on a token given as it is (introspection, so that both always agree): the user it
   * opens protected routes for and its claims, or undefined wherever authenticate would answer 401.
   */
  callerOf(token: string, log: FastifyBaseLogger): Promise<{ user: UserRecord; claims: AccessClaims } | undefined>;
}

/** The token of `Bearer <token>`; the scheme name is case-insensitive (RFC 9110 section 11.1). */
function bearerToken(header: string | undefined): string | undefined {
  return schemeToken(header, "bearer");
}

/** The token of `DPoP <token>` (RFC 9449 section 7.1). */
export function dpopToken(header: string | undefined): string | undefined {
  return schemeToken(header, "dpop");
}

function schemeToken(header: string | undefined, scheme: string): string | undefined {
  const length = scheme.length;
  if (header === undefined || header.length < length + 2 || header.slice(0, length).toLowerCase() !== scheme)
    return undefined;
  let start = length;
  while (header.charCodeAt(start) === 32) start += 1;
  if (start === length) return undefined;
  let end = header.length;
  while (end > start && header.charCodeAt(end - 1) === 32) end -= 1;
  const token = header.slice(start, end);
  return token.length > 0 && !token.includes(" ") ? token : undefined;
}

export function createGuards(tokens: TokenService, users: UserLookup, dpop?: Dpop): Guards {
  /** Steps 2-4: the claims of a valid token, or undefined (the reason logged at debug). */
  function verifiedClaims(token: string, log: FastifyBaseLogger): AccessClaims | undefined {
    // 2-4. Decode with the signing key, the configured algorithm only; exp and a string sub are required.
    // Only the first-party kind: a relying party's or a client's token (RFC 9068) never opens the API.
    try {
      return tokens.verifyAccessToken(token);
    } catch (error) {
      if (!(error instanceof InvalidToken)) throw error;
      log.debug({ reason: error.message }, "access token refused");
      return undefined;
    }
  }

  /**
   * Step 5 with the user found for the token's subject: the user whose e-mail equals sub must exist.
   * An inactive user's tokens stop working at once, with the same answer, so nothing tells "disabled"
   * from "gone". The token's credential stamp must be the user's current one (an addition to the
   * spec's check; see docs/accounts/users-and-sessions.md): a token issued before a password change, a deactivation or an
   * e-mail change, or to an earlier holder of the e-mail (deleted, or renamed away), never matches,
   * even within the same second.
   */
  function admits(claims: AccessClaims, user: UserRecord | undefined): user is UserRecord {
    return user?.isActive === true && claims.stamp === user.credentialStamp;
  }

  function accept(request: FastifyRequest, claims: AccessClaims, user: UserRecord | undefined): void {
    if (!admits(claims, user)) throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    // 6. The found user is the caller.
    request.user = user;
    request.sessionId = claims.sid ?? null;
  }

  function boundAsBearer() {
    return dpop === undefined
      ? unauthorized(COULD_NOT_VALIDATE_CREDENTIALS)
      : dpop.boundTokenAsBearer(COULD_NOT_VALIDATE_CREDENTIALS);
  }

  /** A token presented with `Authorization: DPoP`: its proof checked, then the user as for a bearer token. */
  function authenticateWithProof(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = dpopToken(request.headers.authorization);
    if (token === undefined || dpop === undefined) throw unauthorized(NOT_AUTHENTICATED);
    const claims = verifiedClaims(token, request.log);
    if (claims === undefined || claims.jkt === undefined) {
      // An unbound token is not a DPoP token (RFC 9449 section 7.1): refused as any invalid one.
      if (claims !== undefined) request.log.debug({ reason: "not DPoP-bound" }, "access token refused");
      throw dpop.resourceRefusal(
        new DpopRefusal("invalid_token", "invalid_token", "The access token is invalid or not DPoP-bound"),
        reply,
        COULD_NOT_VALIDATE_CREDENTIALS,
      );
    }
    const jkt = claims.jkt;
    return dpop.checkResourceProof(request, reply, token, jkt).then(
      async () => accept(request, claims, users.cached(claims.sub) ?? (await users.findByEmail(claims.sub))),
      (error: unknown) => {
        if (error instanceof DpopRefusal) throw dpop.resourceRefusal(error, reply, COULD_NOT_VALIDATE_CREDENTIALS);
        throw error;
      },
    );
  }

  function authenticate(request: FastifyRequest, reply: FastifyReply, done?: (error?: Error) => void) {
    // 1. Read the token from the Authorization header (never from the query string); no bearer token:
    // a DPoP one, or none (401 "Not authenticated").
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return authenticateWithProof(request, reply);
    // Steps 2-4.
    const claims = verifiedClaims(token, request.log);
    if (claims === undefined) throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    // RFC 9449 section 7.2: a DPoP-bound token presented as a bearer token is refused. The one check
    // DPoP adds for a bearer token.
    if (claims.jkt !== undefined) throw boundAsBearer();
    // The lookup is answered from memory when the cache holds the user (user-cache.ts), never with a
    // stale user; then the check ends here, in this tick.
    const known = users.cached(claims.sub);
    if (known !== undefined) {
      accept(request, claims, known);
      done?.();
      return;
    }
    return users.findByEmail(claims.sub).then((user) => accept(request, claims, user));
  }

  async function callerOf(token: string, log: FastifyBaseLogger) {
    const claims = verifiedClaims(token, log);
    if (claims === undefined) return undefined;
    const user = users.cached(claims.sub) ?? (await users.findByEmail(claims.sub));
    return admits(claims, user) ? { user, claims } : undefined;
  }

  function authenticateIfPresent(request: FastifyRequest, reply: FastifyReply, done?: (error?: Error) => void) {
    if (request.headers.authorization !== undefined) return authenticate(request, reply, done);
    done?.();
  }

  function requireAdmin(request: FastifyRequest, _reply: FastifyReply, done?: (error?: Error) => void): void {
    if (!request.user?.isAdmin) throw forbidden();
    done?.();
  }

  return { authenticate, authenticateIfPresent, requireAdmin, callerOf };
}
