// The caller's own record: GET /me (the spec's current-user endpoint), and
// self-service: PATCH /me, DELETE /me, PUT /me/password. All behind the
// spec's token check.

import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import type { AccountRecovery } from "../auth/account-recovery.ts";
import type { Guards } from "../auth/guard.ts";
import { COMMON_PASSWORD, type PasswordPolicy } from "../auth/password-policy.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { clientOf } from "../auth/sessions.ts";
import { EMAIL_TAKEN, HttpError, INCORRECT_CURRENT_PASSWORD, LAST_ACTIVE_ADMIN } from "../errors.ts";
import { askedLocale } from "../mail/asked-locale.ts";
import type { Notices } from "../mail/notices.ts";
import { afterCommit } from "../platform/after-commit.ts";
import type { Audit } from "../platform/audit.ts";
import { BEARER_SECURITY, errorResponse, PasswordRouteUnavailable, UnauthorizedResponse } from "../platform/openapi.ts";
import type { UserRecord, UserStore } from "../store/store.ts";
import { normalizeEmailInBody } from "../users/email.ts";
import { toUserOut } from "../users/present.ts";
import { PasswordChange, SelfPatch, UserOut } from "../users/schemas.ts";

export interface MeRouteOptions {
  store: UserStore;
  guards: Guards;
  passwords: PasswordHasher;
  audit: Audit;
  policy: PasswordPolicy;
  recovery: AccountRecovery;
  notices: Notices;
}

const invalidResponse = errorResponse("The body is invalid.", "body.full_name: must NOT have more than 200 characters");
const notJsonResponse = errorResponse("The body is not JSON.", "Unsupported Media Type");

export const meRoutes: FastifyPluginAsyncTypebox<MeRouteOptions> = async (
  app,
  { store, guards, passwords, audit, policy, recovery, notices },
) => {
  const { authenticate } = guards;
  // A user record from the token check's cache is the same object until the user changes (then the
  // cache holds a new one), so its JSON is made once per version of the record, by the route's own
  // response serialiser, not on every call.
  const serialized = new WeakMap<UserRecord, string>();

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
        response: { 200: UserOut, 401: UnauthorizedResponse },
      },
    },
    function readCurrentUser(request, reply): void {
      const user = request.user!;
      let body = serialized.get(user);
      if (body === undefined) {
        body = reply.serialize(toUserOut(user)) as string;
        serialized.set(user, body);
      }
      // Sent as it is (a string with its type set): Fastify does not serialise it again.
      (reply as FastifyReply).type("application/json; charset=utf-8").send(body);
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
          "Only the fields sent change: `email`, `full_name` and `locale` (the language of the hosted pages and " +
          "the mails; null clears it). Roles are not yours to change (unknown fields are " +
          "refused with 422). The token's `sub` is the e-mail, so changing the e-mail ends the tokens issued for " +
          "the old one: log in again with the new e-mail. A new address gets a verification link and the old " +
          "one is told. While `EMAIL_VERIFICATION_REQUIRED` is true, the change waits until the new address " +
          "confirms it through that link: until then the answer and the account keep the old e-mail.",
        security: BEARER_SECURITY,
        body: SelfPatch,
        response: {
          200: UserOut,
          401: UnauthorizedResponse,
          409: errorResponse("The e-mail is taken.", EMAIL_TAKEN),
          415: notJsonResponse,
          422: invalidResponse,
        },
      },
    },
    async function updateCurrentUser(request) {
      const { email, full_name, locale } = request.body;
      const before = request.user!;
      // A confirmation link sent now speaks the language chosen in the same request.
      const reader = locale === undefined ? before : { ...before, locale };
      const emailChanges = await recovery.emailChanges(reader, email, true, askedLocale(request));
      const user = await store.update(before.id, { ...emailChanges, fullName: full_name, locale });
      if (!user) throw new HttpError(409, "The user was deleted meanwhile");
      await afterCommit(request, () => recovery.afterUpdate(before, user, clientOf(request)));
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
          401: UnauthorizedResponse,
          409: errorResponse("You are the last active admin.", LAST_ACTIVE_ADMIN),
        },
      },
    },
    async function deleteCurrentUser(request, reply) {
      await store.remove(request.user!.id, {
        events: [{ type: "deletion", outcome: "by_self", clientAddress: request.ip }],
      });
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
        description:
          "Takes the current password and the new one in the body (never in the URL). 204 on success. Every " +
          "session of the user ends: refresh tokens are revoked and access tokens issued before the change stop " +
          "working, this call's own included; log in again with the new password. The account's address is told " +
          "(security notification `password_changed`).",
        security: BEARER_SECURITY,
        body: PasswordChange,
        response: {
          204: { type: "null", description: "Changed." },
          400: errorResponse("The current password is wrong.", INCORRECT_CURRENT_PASSWORD),
          401: UnauthorizedResponse,
          415: notJsonResponse,
          422: errorResponse(
            "The new password is too short or too long, common or breached, or contains the e-mail.",
            COMMON_PASSWORD,
          ),
          503: PasswordRouteUnavailable,
        },
      },
    },
    async function changePassword(request, reply) {
      const caller = request.user!;
      const { current_password, new_password } = request.body;
      policy.check(new_password, caller.email);
      if (!(await passwords.verify(caller.hashedPassword, current_password))) {
        await audit.record("password_change", caller.id, "failure", request.ip);
        throw new HttpError(400, INCORRECT_CURRENT_PASSWORD);
      }
      // One transaction: the new password, the end of every session and of every access token issued
      // before it, and the audit event. A cut anywhere leaves the old password and sessions intact.
      const notice = notices.about("password_changed", caller, clientOf(request));
      await store.update(
        caller.id,
        { hashedPassword: await passwords.hash(new_password) },
        {
          endSessions: true,
          events: [{ type: "password_change", outcome: "success", clientAddress: request.ip, notice }],
        },
      );
      notices.wake();
      reply.code(204).send(null);
    },
  );
};
