// The spec's token check for protected routes, in its order, as named
// preHandlers. A route opts in explicitly with { preHandler: [authenticate] }
// (and requireAdmin after it); nothing is exempted by matching URLs. On
// success request.user is the caller.
import type { FastifyReply, FastifyRequest } from "fastify";
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

export type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export interface Guards {
  /** The token check; 401 without a valid token for an existing, active user. */
  authenticate: Hook;
  /** As authenticate when an Authorization header is sent; an anonymous caller passes with request.user null. */
  authenticateIfPresent: Hook;
  /** After authenticate: 403 unless the caller is an admin. */
  requireAdmin: Hook;
}

/** `Bearer <token>`; the scheme name is case-insensitive (RFC 9110 section 11.1). */
const BEARER = /^bearer +([^ ]+) *$/i;

export function createGuards(tokens: TokenService, users: UserLookup): Guards {
  async function authenticate(request: FastifyRequest): Promise<void> {
    // 1. Read the token from the Authorization header (never from the query string).
    const match = BEARER.exec(request.headers.authorization ?? "");
    if (match === null) throw unauthorized(NOT_AUTHENTICATED);
    // 2-4. Decode with the signing secret, HS256 only; exp and a string sub are required.
    let claims: AccessClaims;
    try {
      claims = tokens.verifyAccessToken(match[1] as string);
    } catch (error) {
      if (!(error instanceof InvalidToken)) throw error;
      request.log.debug({ reason: error.message }, "access token refused");
      throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    }
    // 5. The user whose e-mail equals sub must exist. An inactive user's tokens stop
    //    working at once, with the same answer, so nothing tells "disabled" from "gone".
    //    The token's credential stamp must be the user's current one (an addition to the
    //    spec's check; see the README): a token issued before a password change, a
    //    deactivation or an e-mail change, or to an earlier holder of the e-mail (deleted,
    //    or renamed away), never matches, even within the same second.
    //    The lookup may be answered from memory (user-cache.ts), never with a stale user.
    const user = await users.findByEmail(claims.sub);
    if (user === undefined || !user.isActive || claims.stamp !== user.credentialStamp) {
      throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    }
    // 6. The found user is the caller.
    request.user = user;
    request.sessionId = claims.sid ?? null;
  }

  async function authenticateIfPresent(request: FastifyRequest): Promise<void> {
    if (request.headers.authorization !== undefined) await authenticate(request);
  }

  async function requireAdmin(request: FastifyRequest): Promise<void> {
    if (!request.user?.isAdmin) throw forbidden();
  }

  return { authenticate, authenticateIfPresent, requireAdmin };
}
