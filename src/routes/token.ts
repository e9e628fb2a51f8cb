// POST /auth/token: the OAuth 2.0 password grant exactly as the spec lays it
// out. Form-encoded only; JSON here is a 415. The Basic header and empty
// scope that Swagger UI's Authorize dialog sends are ignored.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { PasswordHasher } from "../auth/passwords.ts";
import { type RateLimits, TOO_MANY_LOGIN_ATTEMPTS } from "../auth/rate-limits.ts";
import type { TokenService } from "../auth/tokens.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS } from "../auth/tokens.ts";
import { HttpError, INCORRECT_EMAIL_OR_PASSWORD, UNSUPPORTED_GRANT_TYPE, unauthorized } from "../errors.ts";
import { acceptFormBodies } from "../forms.ts";
import { errorResponse, TokenForm, TokenOut } from "../schemas.ts";
import type { UserStore } from "../store/store.ts";

export interface TokenRouteOptions {
  store: UserStore;
  tokens: TokenService;
  passwords: PasswordHasher;
  limits: RateLimits;
}

export const tokenRoutes: FastifyPluginAsyncTypebox<TokenRouteOptions> = async (
  app,
  { store, tokens, passwords, limits },
) => {
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  app.post(
    "/auth/token",
    {
      schema: {
        operationId: "issueToken",
        tags: ["auth"],
        summary: "Exchange e-mail and password for an access token",
        description:
          "OAuth 2.0 password grant, form-encoded. `username` carries the e-mail. Meant for first-party clients only: " +
          "RFC 9700 advises against the password grant for third-party clients. The same 401 answers an unknown " +
          "e-mail and a wrong password, so a caller cannot tell them apart. Repeated failures for one account or " +
          "from one address are refused with 429 for a while.",
        consumes: ["application/x-www-form-urlencoded"],
        body: TokenForm,
        response: {
          200: TokenOut,
          400: errorResponse("A grant type other than `password`, or a repeated form field.", UNSUPPORTED_GRANT_TYPE),
          401: errorResponse("Unknown e-mail or wrong password.", INCORRECT_EMAIL_OR_PASSWORD),
          415: errorResponse("The body is not form-encoded.", "Unsupported Media Type: application/json"),
          422: errorResponse(
            "A required form field is missing or empty, or too long.",
            "body.username: field required",
          ),
          429: errorResponse(
            "Too many failed attempts for this account or from this address; `Retry-After` says when to try again.",
            TOO_MANY_LOGIN_ATTEMPTS,
          ),
        },
      },
    },
    async function issueToken(request, reply) {
      const { grant_type, username, password } = request.body;
      if (grant_type !== undefined && grant_type !== "password") throw new HttpError(400, UNSUPPORTED_GRANT_TYPE);

      await limits.checkLogin(username, request.ip);

      const user = await store.findByEmail(username);
      // An unknown e-mail still pays for one hash verify, so timing does not reveal which accounts exist.
      const verified = user
        ? await passwords.verify(user.hashedPassword, password)
        : await passwords.verifyDummy(password);
      // An inactive account answers exactly like a wrong password: nothing tells "disabled" from "unknown".
      if (!user || !verified || !user.isActive) {
        await limits.recordLoginFailure(username, request.ip);
        throw unauthorized(INCORRECT_EMAIL_OR_PASSWORD);
      }
      await limits.recordLoginSuccess(username, request.ip);
      // Hashes made with older parameters or imported from another system are upgraded now,
      // the only moment the plain password is at hand.
      if (passwords.needsRehash(user.hashedPassword)) {
        await store.update(user.id, { hashedPassword: await passwords.hash(password) });
      }

      // RFC 6749 section 5.1: responses that carry tokens must not be cached.
      reply.header("cache-control", "no-store").header("pragma", "no-cache");
      return {
        access_token: tokens.issueAccessToken(user.email),
        token_type: "bearer" as const,
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
      };
    },
  );
};
