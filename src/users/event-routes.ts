// GET /users/{id}/events: the audit trail of one user, a nested collection
// for admins, oldest first, in pages, filtered by type and time range as
// query parameters. Events outlive their user, so a deleted user's trail
// (its deletion included) can still be read.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import { NOT_ENOUGH_PRIVILEGES } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import { ADMIN_ACTOR, AUDIT_EVENT_TYPES, type AuditEventType, type UserStore } from "../store/store.ts";
import { UserIdParams } from "./schemas.ts";

export interface EventRouteOptions {
  store: UserStore;
  guards: Guards;
}

const EventType = Type.Unsafe<AuditEventType>({
  type: "string",
  enum: [...AUDIT_EVENT_TYPES],
  description: "The kind of event.",
});

const EventQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: "Page size." })),
    cursor: Type.Optional(Type.String({ format: "uuid", description: "The `next_cursor` of the previous page." })),
    type: Type.Optional(EventType),
    from: Type.Optional(Type.String({ format: "date-time", description: "Only events at or after this instant." })),
    to: Type.Optional(Type.String({ format: "date-time", description: "Only events at or before this instant." })),
  },
  { additionalProperties: false },
);

const EventOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    type: EventType,
    outcome: Type.String({
      description: "success, failure, granted_admin, reuse_detected, ...",
      examples: ["success"],
    }),
    client_address: Type.Union([Type.String(), Type.Null()], { description: "Null for command-line actions." }),
    created_at: Type.String({ format: "date-time" }),
    actor_id: Type.Union([Type.String({ format: "uuid" }), Type.Null()], { description: ADMIN_ACTOR }),
  },
  { $id: "AuditEvent", description: "A security event. Never carries a password or a token." },
);

const EventPage = Type.Object(
  {
    items: Type.Array(EventOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()]),
    next: Type.Union([Type.String(), Type.Null()], { description: "Path and query of the next page, or null." }),
  },
  { $id: "AuditEventPage" },
);

export const eventRoutes: FastifyPluginAsyncTypebox<EventRouteOptions> = async (app, { store, guards }) => {
  app.get(
    "/users/:id/events",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "listUserEvents",
        tags: ["users"],
        summary: "A user's audit trail (admins)",
        description:
          "Security events of one user, oldest first, in pages: sign-up, logins, password changes, role changes, " +
          "deactivation, deletion, session revocations. Filter with `type`, `from` and `to`; follow `next`.",
        security: BEARER_SECURITY,
        params: UserIdParams,
        querystring: EventQuery,
        response: {
          200: EventPage,
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
          422: errorResponse("The id or a query parameter is invalid.", "querystring.type: must be equal to constant"),
        },
      },
    },
    async function listUserEvents(request) {
      const { limit = 50, cursor, type, from, to } = request.query;
      const rows = await store.listEvents({
        userId: request.params.id,
        limit: limit + 1,
        ...(cursor ? { after: cursor } : {}),
        ...(type ? { type } : {}),
        ...(from ? { from: new Date(from).toISOString() } : {}),
        ...(to ? { to: new Date(to).toISOString() } : {}),
      });
      const items = rows.slice(0, limit);
      const nextCursor = rows.length > limit ? (items.at(-1)?.id ?? null) : null;
      let next: string | null = null;
      if (nextCursor) {
        const query = new URLSearchParams({ limit: String(limit), cursor: nextCursor });
        if (type) query.set("type", type);
        if (from) query.set("from", from);
        if (to) query.set("to", to);
        next = `/users/${request.params.id}/events?${query}`;
      }
      return {
        items: items.map((event) => ({
          id: event.id,
          type: event.type,
          outcome: event.outcome,
          client_address: event.clientAddress,
          created_at: event.createdAt,
          actor_id: event.actorId ?? null,
        })),
        next_cursor: nextCursor,
        next,
      };
    },
  );
};
