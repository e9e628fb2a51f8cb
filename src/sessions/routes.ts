// The caller's sessions: GET /me/sessions lists the live ones (newest first,
// in pages, the current one marked), DELETE /me/sessions/{id} ends one of
// them. Behind the spec's token check; someone else's session answers
// exactly like a missing one.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Guards } from "../auth/guard.ts";
import type { Sessions } from "../auth/sessions.ts";
import { HttpError } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { AuditEntry, UserStore } from "../store/store.ts";
import { USERS_PAGE_DEFAULT } from "../users/schemas.ts";
import { SessionIdParams, SessionList, SessionListQuery } from "./schemas.ts";

export interface SessionRouteOptions {
  store: UserStore;
  guards: Guards;
  sessions: Sessions;
}

export const SESSION_NOT_FOUND = "Session not found";

export const sessionRoutes: FastifyPluginAsyncTypebox<SessionRouteOptions> = async (
  app,
  { store, guards, sessions },
) => {
  const { authenticate } = guards;

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
