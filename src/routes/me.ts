// The caller's own record: GET /me (the spec's current-user endpoint), and
// self-service: PATCH /me, DELETE /me, PUT /me/password. All behind the
// spec's token check.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Guards } from "../auth/guard.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { BEARER_SECURITY } from "../docs.ts";
import {
  COULD_NOT_VALIDATE_CREDENTIALS,
  EMAIL_TAKEN,
  HttpError,
  INCORRECT_CURRENT_PASSWORD,
  LAST_ACTIVE_ADMIN,
} from "../errors.ts";
import { errorResponse, PasswordChange, SelfPatch, UserOut } from "../schemas.ts";
import type { UserStore } from "../store/store.ts";
import { normalizeEmailInBody } from "../users/email.ts";
import { toUserOut } from "../users/present.ts";

export interface MeRouteOptions {
  store: UserStore;
  guards: Guards;
  passwords: PasswordHasher;
}

const unauthorizedResponse = errorResponse("No token, or the token check failed.", COULD_NOT_VALIDATE_CREDENTIALS);
const invalidResponse = errorResponse("The body is invalid.", "body.full_name: must NOT have more than 200 characters");
const notJsonResponse = errorResponse("The body is not JSON.", "Unsupported Media Type: text/plain");

export const meRoutes: FastifyPluginAsyncTypebox<MeRouteOptions> = async (app, { store, guards, passwords }) => {
  const { authenticate } = guards;

  app.get(
    "/me",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "readCurrentUser",
        tags: ["me"],
        summary: "The current user",
        description: "Returns the user that the bearer token was issued to.",
        security: BEARER_SECURITY,
        response: { 200: UserOut, 401: unauthorizedResponse },
      },
    },
    async function readCurrentUser(request) {
      return toUserOut(request.user!);
    },
  );

  app.patch(
    "/me",
    {
      preHandler: [authenticate],
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "updateCurrentUser",
        tags: ["me"],
        summary: "Update some of your own fields",
        description:
          "Only the fields sent change: `email` and `full_name`. Roles are not yours to change (unknown fields are " +
          "refused with 422). The token's `sub` is the e-mail, so changing the e-mail ends the tokens issued for " +
          "the old one: log in again with the new e-mail.",
        security: BEARER_SECURITY,
        body: SelfPatch,
        response: {
          200: UserOut,
          401: unauthorizedResponse,
          409: errorResponse("The e-mail is taken.", EMAIL_TAKEN),
          415: notJsonResponse,
          422: invalidResponse,
        },
      },
    },
    async function updateCurrentUser(request) {
      const { email, full_name } = request.body;
      const user = await store.update(request.user!.id, { email, fullName: full_name });
      if (!user) throw new HttpError(409, "The user was deleted meanwhile");
      return toUserOut(user);
    },
  );

  app.delete(
    "/me",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "deleteCurrentUser",
        tags: ["me"],
        summary: "Delete your own account",
        description: "204 with no body; the account and its tokens are gone. The last active admin cannot (409).",
        security: BEARER_SECURITY,
        response: {
          204: { type: "null", description: "Deleted." },
          401: unauthorizedResponse,
          409: errorResponse("You are the last active admin.", LAST_ACTIVE_ADMIN),
        },
      },
    },
    async function deleteCurrentUser(request, reply) {
      await store.remove(request.user!.id);
      reply.code(204).send(null);
    },
  );

  app.put(
    "/me/password",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "changePassword",
        tags: ["me"],
        summary: "Change your password",
        description: "Takes the current password and the new one in the body (never in the URL). 204 on success.",
        security: BEARER_SECURITY,
        body: PasswordChange,
        response: {
          204: { type: "null", description: "Changed." },
          400: errorResponse("The current password is wrong.", INCORRECT_CURRENT_PASSWORD),
          401: unauthorizedResponse,
          415: notJsonResponse,
          422: errorResponse(
            "The new password is too short or too long.",
            "body.new_password: must NOT have fewer than 8 characters",
          ),
        },
      },
    },
    async function changePassword(request, reply) {
      const caller = request.user!;
      const { current_password, new_password } = request.body;
      if (!(await passwords.verify(caller.hashedPassword, current_password))) {
        throw new HttpError(400, INCORRECT_CURRENT_PASSWORD);
      }
      await store.update(caller.id, { hashedPassword: await passwords.hash(new_password) });
      reply.code(204).send(null);
    },
  );
};
