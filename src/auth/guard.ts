// The spec's token check for protected routes, in its order, as one named
// preHandler. A route opts in explicitly with { preHandler: [authenticate] };
// nothing is exempted by matching URLs. On success request.user is the caller.
import type { FastifyReply, FastifyRequest } from "fastify";
import { COULD_NOT_VALIDATE_CREDENTIALS, NOT_AUTHENTICATED, unauthorized } from "../errors.ts";
import type { UserRecord, UserStore } from "../store/store.ts";
import { InvalidToken, type TokenService } from "./tokens.ts";

declare module "fastify" {
  interface FastifyRequest {
    user: UserRecord | null;
  }
}

export type Authenticate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/** `Bearer <token>`; the scheme name is case-insensitive (RFC 9110 section 11.1). */
const BEARER = /^bearer +([^ ]+) *$/i;

export function createAuthenticate(tokens: TokenService, store: UserStore): Authenticate {
  return async function authenticate(request) {
    // 1. Read the token from the Authorization header (never from the query string).
    const match = BEARER.exec(request.headers.authorization ?? "");
    if (match === null) throw unauthorized(NOT_AUTHENTICATED);
    // 2-4. Decode with the signing secret, HS256 only; exp and a string sub are required.
    let email: string;
    try {
      email = tokens.verifyAccessToken(match[1] as string).sub;
    } catch (error) {
      if (!(error instanceof InvalidToken)) throw error;
      request.log.debug({ reason: error.message }, "access token refused");
      throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    }
    // 5. The user whose e-mail equals sub must exist.
    const user = await store.findByEmail(email);
    if (user === undefined) throw unauthorized(COULD_NOT_VALIDATE_CREDENTIALS);
    // 6. The found user is the caller.
    request.user = user;
  };
}
