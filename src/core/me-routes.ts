// The caller's own record: GET /me (the spec's current-user endpoint), and
// self-service: PATCH /me, DELETE /me, PUT /me/password. All behind the
// spec's token check.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import type { AccountRecovery } from "../auth/account-recovery.ts";
import type { Guards } from "../auth/guard.ts";
import { COMMON_PASSWORD, type PasswordPolicy } from "../auth/password-policy.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { clientOf, type Sessions } from "../auth/sessions.ts";
import { EMAIL_TAKEN, HttpError, INCORRECT_CURRENT_PASSWORD, LAST_ACTIVE_ADMIN } from "../errors.ts";
import type { Notices } from "../mail/notices.ts";
import { afterCommit } from "../platform/after-commit.ts";
import type { Audit } from "../platform/audit.ts";
import { BEARER_SECURITY, errorResponse, PasswordRouteUnavailable, UnauthorizedResponse } from "../platform/openapi.ts";
import { SessionIdParams, SessionList, SessionListQuery } from "../sessions/schemas.ts";
import type { AuditEntry, UserRecord, UserStore } from "../store/store.ts";
import { normalizeEmailInBody } from "../users/email.ts";
import { toUserOut } from "../users/present.ts";
import { PasswordChange, SelfPatch, USERS_PAGE_DEFAULT, UserOut } from "../users/schemas.ts";

export interface MeRouteOptions {
  store: UserStore;
  guards: Guards;
  passwords: PasswordHasher;
  sessions: Sessions;
  audit: Audit;
  policy: PasswordPolicy;
  recovery: AccountRecovery;
  notices: Notices;
}

const SESSION_NOT_FOUND = "Session not found";
const invalidResponse = errorResponse("The body is invalid.", "body.full_name: must NOT have more than 200 characters");
const notJsonResponse = errorResponse("The body is not JSON.", "Unsupported Media Type");

export const meRoutes: FastifyPluginAsyncTypebox<MeRouteOptions> = async (
  app,
  { store, guards, passwords, sessions, audit, policy, recovery, notices },
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
          "Only the fields sent change: `email` and `full_name`. Roles are not yours to change (unknown fields are " +
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
      const { email, full_name } = request.body;
      const before = request.user!;
      const emailChanges = await recovery.emailChanges(before, email, true);
      const user = await store.update(before.id, { ...emailChanges, fullName: full_name });
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

  app.get(
    "/me/sessions",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "listSessions",
        tags: ["me"],
        summary: "Your signed-in sessions",
        description:
          "Live sessions, newest first, in pages: when each began, when it was last refreshed, from where and " +
          "with what. Follow `next` (or pass `next_cursor` as `cursor`) until it is null. A user holds at most " +
          "`MAX_SESSIONS_PER_USER` live sessions of their own, and as many of each OpenID Connect client (counted " +
          "apart); a new login ends the oldest of its kind beyond that.",
        security: BEARER_SECURITY,
        querystring: SessionListQuery,
        response: {
          200: SessionList,
          401: UnauthorizedResponse,
          422: errorResponse("The query is invalid.", "querystring.limit: must be <= 100"),
        },
      },
    },
    async function listSessions(request) {
      const { limit = USERS_PAGE_DEFAULT, cursor } = request.query;
      // One extra row tells whether a next page exists without a count query.
      const rows = await sessions.list(request.user!.id, { limit: limit + 1, before: cursor });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      const nextCursor = rows.length > limit && last ? last.id : null;
      return {
        next_cursor: nextCursor,
        next: nextCursor ? `/me/sessions?${new URLSearchParams({ limit: String(limit), cursor: nextCursor })}` : null,
        items: items.map((session) => ({
          id: session.id,
          created_at: session.createdAt,
          last_used_at: session.lastUsedAt,
          expires_at: session.expiresAt,
          client_address: session.clientAddress,
          user_agent: session.userAgent,
          current: session.id === request.sessionId,
        })),
      };
    },
  );

  app.delete(
    "/me/sessions/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "endSession",
        tags: ["me"],
        summary: "End one of your sessions (log it out)",
        description:
          "204 with no body. Its refresh tokens stop working at once; access tokens already issued in it run " +
          "out within their 30 minutes. Other sessions are untouched.",
        security: BEARER_SECURITY,
        params: SessionIdParams,
        response: {
          204: { type: "null", description: "Ended." },
          401: UnauthorizedResponse,
          404: errorResponse("No live session of yours with this id.", SESSION_NOT_FOUND),
          422: errorResponse("The id is not a UUID.", 'params.id: must match format "uuid"'),
        },
      },
    },
    async function endSession(request, reply) {
      const session = await store.findSession(request.params.id);
      // Someone else's session answers exactly like a missing one.
      const events: AuditEntry[] = [{ type: "session_revocation", outcome: "logged_out", clientAddress: request.ip }];
      if (!session || session.userId !== request.user!.id || !(await sessions.revoke(session.id, events))) {
        throw new HttpError(404, SESSION_NOT_FOUND);
      }
      reply.code(204).send(null);
    },
  );
};
