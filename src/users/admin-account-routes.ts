// What an admin does to someone's account from the console's user page (issue 35): their live
// sessions (list, end one, end all), their passkeys (list, remove), the apps they allowed (list,
// revoke), and a password-reset mail sent to them. Each answers as the owner's own route under /me
// answers and ends things by the same store verbs (so back-channel logouts, webhooks and security
// notifications follow as when the owner acts); each destructive action is audited about the user,
// with the admin as actor (AuditEntry.actorId). Admins only; an unknown user is 404.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { AccountRecovery } from "../auth/account-recovery.ts";
import type { Guards } from "../auth/guard.ts";
import type { Sessions } from "../auth/sessions.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, notFound, USER_NOT_FOUND } from "../errors.ts";
import { PASSKEY_NOT_FOUND, toPasskeyOut } from "../factors/passkey-routes.ts";
import { PasskeyList } from "../factors/schemas.ts";
import type { Notices } from "../mail/notices.ts";
import type { ClientRegistry } from "../oidc/clients.ts";
import { APP_NOT_FOUND, GrantedApp } from "../oidc/provider-routes.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import { SESSION_NOT_FOUND } from "../sessions/routes.ts";
import { SessionList, SessionListQuery } from "../sessions/schemas.ts";
import type { AuditEntry, UserRecord, UserStore } from "../store/store.ts";
import { USERS_PAGE_DEFAULT, UserId } from "./schemas.ts";

export interface AdminAccountRouteOptions {
  store: UserStore;
  guards: Guards;
  sessions: Sessions;
  clients: ClientRegistry;
  recovery: AccountRecovery;
  notices: Notices;
  clock: () => number;
}

/** 409 of POST /users/{id}/password-reset: a reset link would not work for an inactive account. */
export const INACTIVE_USER_NO_RESET =
  "The user is inactive: an inactive account cannot sign in, so no reset link is sent; activate it first";

/** 202 of POST /users/{id}/password-reset. */
export const PASSWORD_RESET_MAILED = "A password-reset link is on its way to the user's address";

const userErrors = {
  401: UnauthorizedResponse,
  403: errorResponse("Authenticated, but not an admin.", NOT_ENOUGH_PRIVILEGES),
  422: errorResponse("The path or query is invalid.", 'params.id: must match format "uuid"'),
};
const noUser = errorResponse("No user with this id.", USER_NOT_FOUND);
const ended = (description: string) => ({ type: "null", description }) as const;

const UserParams = Type.Object({ id: UserId });
const UserSessionParams = Type.Object({ id: UserId, sid: Type.String({ format: "uuid" }) });
const UserPasskeyParams = Type.Object({ id: UserId, passkeyId: Type.String({ format: "uuid" }) });
const UserAppParams = Type.Object({
  id: UserId,
  client_id: Type.String({ minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f]*$" }),
});

export const adminAccountRoutes: FastifyPluginAsyncTypebox<AdminAccountRouteOptions> = async (
  app,
  { store, guards, sessions, clients, recovery, notices, clock },
) => {
  const preHandler = [guards.authenticate, guards.requireAdmin];

  /** The user the path names, or 404. */
  async function target(id: string): Promise<UserRecord> {
    const user = await store.findById(id);
    if (!user) throw notFound();
    return user;
  }

  /** The admin's audit entry about the target user: the admin is the actor. */
  function byAdmin(
    request: { ip: string; user?: UserRecord | null },
    type: AuditEntry["type"],
    outcome: string,
    extra: Partial<AuditEntry> = {},
  ): AuditEntry {
    return { type, outcome, clientAddress: request.ip, actorId: request.user!.id, ...extra };
  }

  app.get(
    "/users/:id/sessions",
    {
      preHandler,
      schema: {
        operationId: "listUserSessions",
        tags: ["users"],
        summary: "A user's live sessions (admins)",
        description:
          "As `GET /me/sessions` answers the user: newest first, in pages (follow `next` until it is null). " +
          "`current` is true only for the session of the admin's own token (when the admin looks at itself).",
        security: BEARER_SECURITY,
        params: UserParams,
        querystring: SessionListQuery,
        response: { 200: SessionList, ...userErrors, 404: noUser },
      },
    },
    async function listUserSessions(request) {
      const { id } = request.params;
      const { limit = USERS_PAGE_DEFAULT, cursor } = request.query;
      await target(id);
      // One extra row tells whether a next page exists without a count query.
      const rows = await sessions.list(id, { limit: limit + 1, before: cursor });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      const nextCursor = rows.length > limit && last ? last.id : null;
      const query = nextCursor ? new URLSearchParams({ limit: String(limit), cursor: nextCursor }) : null;
      return {
        next_cursor: nextCursor,
        next: query ? `/users/${id}/sessions?${query}` : null,
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
    "/users/:id/sessions/:sid",
    {
      preHandler,
      schema: {
        operationId: "endUserSession",
        tags: ["users"],
        summary: "End one of a user's sessions (admins)",
        description:
          "204 with no body. As when the user ends it at `DELETE /me/sessions/{id}`: its refresh tokens stop " +
          "working at once, the apps begun in it with a back-channel logout URI are told, and the webhook " +
          "`session.ended` goes out (reason `ended_by_admin`). Access tokens already issued in it run out " +
          "within their 30 minutes; to end those too, end all the user's sessions. Audited " +
          "(`session_revocation`, `ended_by_admin`, the admin as actor).",
        security: BEARER_SECURITY,
        params: UserSessionParams,
        response: {
          204: ended("Ended."),
          ...userErrors,
          404: errorResponse("No such user, or no live session of that user with this id.", SESSION_NOT_FOUND),
        },
      },
    },
    async function endUserSession(request, reply) {
      const { id, sid } = request.params;
      await target(id);
      const session = await store.findSession(sid);
      // Another user's session answers exactly like a missing one.
      const event = byAdmin(request, "session_revocation", "ended_by_admin");
      if (!session || session.userId !== id || !(await sessions.revoke(session.id, [event]))) {
        throw new HttpError(404, SESSION_NOT_FOUND);
      }
      reply.code(204).send(null);
    },
  );

  app.delete(
    "/users/:id/sessions",
    {
      preHandler,
      schema: {
        operationId: "endUserSessions",
        tags: ["users"],
        summary: "End all of a user's sessions (admins)",
        description:
          "204 with no body. Every session of the user ends (apps' sessions included: their back-channel " +
          "logouts are sent) and so does every access token issued to the user so far, as after a password " +
          "change: the user signs in again everywhere. For the user who lost a device. Audited " +
          "(`session_revocation`, `all_ended_by_admin`, the admin as actor). An admin ending their own " +
          "sessions ends the token of this call too.",
        security: BEARER_SECURITY,
        params: UserParams,
        response: { 204: ended("Ended."), ...userErrors, 404: noUser },
      },
    },
    async function endUserSessions(request, reply) {
      const { id } = request.params;
      const events = [byAdmin(request, "session_revocation", "all_ended_by_admin")];
      if (!(await store.update(id, {}, { endSessions: true, events }))) throw notFound();
      reply.code(204).send(null);
    },
  );

  app.get(
    "/users/:id/passkeys",
    {
      preHandler,
      schema: {
        operationId: "listUserPasskeys",
        tags: ["users"],
        summary: "A user's passkeys (admins)",
        description: "As `GET /me/passkeys` answers the user: oldest first, names and dates, never key material.",
        security: BEARER_SECURITY,
        params: UserParams,
        response: { 200: PasskeyList, ...userErrors, 404: noUser },
      },
    },
    async function listUserPasskeys(request) {
      await target(request.params.id);
      return (await store.listPasskeys(request.params.id)).map(toPasskeyOut);
    },
  );

  app.delete(
    "/users/:id/passkeys/:passkeyId",
    {
      preHandler,
      schema: {
        operationId: "removeUserPasskey",
        tags: ["users"],
        summary: "Remove one of a user's passkeys (admins)",
        description:
          "204 with no body. It no longer signs in; the sessions it started go on (end them too if it was " +
          "lost). The user's address is told (security notification `passkey_removed`, without the admin's " +
          "device or address) and the webhook `mfa.disabled` goes out. Audited (`passkey`, " +
          "`removed_by_admin`, the admin as actor).",
        security: BEARER_SECURITY,
        params: UserPasskeyParams,
        response: {
          204: ended("Removed."),
          ...userErrors,
          404: errorResponse("No such user, or no passkey of that user with this id.", PASSKEY_NOT_FOUND),
        },
      },
    },
    async function removeUserPasskey(request, reply) {
      const user = await target(request.params.id);
      const notice = notices.about("passkey_removed", user, null, { byAdmin: true });
      const event = byAdmin(request, "passkey", "removed_by_admin", { notice });
      if (!(await store.removePasskey(user.id, request.params.passkeyId, [event]))) {
        throw new HttpError(404, PASSKEY_NOT_FOUND);
      }
      notices.wake();
      reply.code(204).send(null);
    },
  );

  app.get(
    "/users/:id/apps",
    {
      preHandler,
      schema: {
        operationId: "listUserApps",
        tags: ["users"],
        summary: "Applications a user allowed (admins)",
        description: "As `GET /me/apps` answers the user: the third-party apps they consented to, newest first.",
        security: BEARER_SECURITY,
        params: UserParams,
        response: { 200: Type.Object({ items: Type.Array(GrantedApp) }), ...userErrors, 404: noUser },
      },
    },
    async function listUserApps(request) {
      await target(request.params.id);
      const consents = await store.listConsents(request.params.id);
      const items = await Promise.all(
        consents.map(async (consent) => ({
          client_id: consent.clientId,
          client_name: (await clients.find(consent.clientId))?.name ?? "A removed application",
          scope: consent.scope,
          granted_at: consent.grantedAt,
        })),
      );
      return { items };
    },
  );

  app.delete(
    "/users/:id/apps/:client_id",
    {
      preHandler,
      schema: {
        operationId: "revokeUserApp",
        tags: ["users"],
        summary: "Take back an application's access to a user's account (admins)",
        description:
          "204 with no body. As `DELETE /me/apps/{client_id}`: the consent is forgotten (the app asks again) " +
          "and the app's sessions of the user end (refresh tokens refused at once, back-channel logout sent). " +
          "Audited (`oidc`, `consent_revoked_by_admin`, the admin as actor).",
        security: BEARER_SECURITY,
        params: UserAppParams,
        response: {
          204: ended("Taken back."),
          ...userErrors,
          404: errorResponse("No such user, or no consent of that user for this client.", APP_NOT_FOUND),
        },
      },
    },
    async function revokeUserApp(request, reply) {
      const { id, client_id } = request.params;
      await target(id);
      const at = new Date(clock()).toISOString();
      const event = byAdmin(request, "oidc", "consent_revoked_by_admin");
      if (!(await store.revokeConsent(id, client_id, at, [event]))) throw new HttpError(404, APP_NOT_FOUND);
      reply.code(204).send(null);
    },
  );

  app.post(
    "/users/:id/password-reset",
    {
      preHandler,
      schema: {
        operationId: "sendUserPasswordReset",
        tags: ["users"],
        summary: "Mail a user a password-reset link (admins)",
        description:
          "202: the same mail as `POST /auth/password-reset-requests` is queued in the mail " +
          "outbox for the user's address (a link that works once, for `PASSWORD_RESET_TTL_SECONDS`; an " +
          "earlier link stops working). The admin never sees the link. 409 when the user is inactive: " +
          "activate the account first. Audited (`password_reset`, `requested_by_admin`, the admin as actor).",
        security: BEARER_SECURITY,
        params: UserParams,
        response: {
          202: Type.Object(
            { message: Type.String({ examples: [PASSWORD_RESET_MAILED] }) },
            { description: "The mail is queued in the mail outbox." },
          ),
          ...userErrors,
          404: noUser,
          409: errorResponse("The user is inactive.", INACTIVE_USER_NO_RESET),
        },
      },
    },
    async function sendUserPasswordReset(request, reply) {
      const user = await target(request.params.id);
      if (!user.isActive) throw new HttpError(409, INACTIVE_USER_NO_RESET);
      await recovery.sendPasswordReset(user, byAdmin(request, "password_reset", "requested_by_admin"));
      reply.code(202);
      return { message: PASSWORD_RESET_MAILED };
    },
  );
};
