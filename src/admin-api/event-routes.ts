// GET /events: the service-wide audit log for admins, every event (those
// about no user too), newest first, in pages behind an opaque cursor,
// filtered by user, type, outcome prefix, client address and time range;
// or, with format=csv or format=jsonl, all of it as a download, streamed
// page by page (event-export.ts). The audit table records no OAuth client,
// so there is no client filter (docs/operating/admin-api.md).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import type { Clock } from "../auth/tokens.ts";
import { NOT_ENOUGH_PRIVILEGES } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { ServiceEventQuery, UserStore } from "../store/store.ts";
import { exportStream } from "./event-export.ts";
import {
  BAD_CURSOR,
  decodeCursor,
  EVENTS_PAGE_DEFAULT,
  EventListQuery,
  encodeCursor,
  ServiceEventPage,
  toEventOut,
} from "./event-schemas.ts";

export interface EventRouteOptions {
  store: UserStore;
  guards: Guards;
  clock: Clock;
}

const EXPORT_TYPES = { csv: "text/csv; charset=utf-8", jsonl: "application/jsonl" } as const;

/** The store's query for the request's filters (times as the store keeps them: ISO in UTC). */
function filtersOf(query: EventListQuery): Omit<ServiceEventQuery, "limit"> {
  const { cursor, user_id, type, outcome, address, since, until } = query;
  return {
    ...(cursor === undefined ? {} : { before: decodeCursor(cursor) }),
    ...(user_id === undefined ? {} : { userId: user_id.toLowerCase() }),
    ...(type === undefined ? {} : { type }),
    ...(outcome === undefined ? {} : { outcomePrefix: outcome }),
    ...(address === undefined ? {} : { clientAddress: address }),
    ...(since === undefined ? {} : { since: new Date(since).toISOString() }),
    ...(until === undefined ? {} : { until: new Date(until).toISOString() }),
  };
}

export const serviceEventRoutes: FastifyPluginAsyncTypebox<EventRouteOptions> = async (
  app,
  { store, guards, clock },
) => {
  app.get(
    "/events",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "listEvents",
        tags: ["admin"],
        summary: "The service-wide audit log (admins)",
        description:
          "Every security event, those about no user too, newest first, in pages: follow `next` (or pass " +
          "`next_cursor` as `cursor`) until it is null. Filters combine with AND. With `format=csv` or " +
          "`format=jsonl` the answer is every matching event as a file (`Content-Disposition: attachment`), " +
          "streamed; CSV cells that a spreadsheet would run as a formula start with `'`.",
        security: BEARER_SECURITY,
        querystring: EventListQuery,
        response: {
          200: {
            description: "A page of events (JSON), or the export (CSV, JSON Lines).",
            content: {
              "application/json": { schema: ServiceEventPage },
              "text/csv": { schema: Type.String({ description: "RFC 4180, a header row first." }) },
              "application/jsonl": { schema: Type.String({ description: "One event (JSON) per line." }) },
            },
          },
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
          422: errorResponse("A query parameter or the cursor is invalid.", BAD_CURSOR),
        },
      },
    },
    async function listEvents(request, reply) {
      const query = request.query;
      const filters = filtersOf(query);
      const format = query.format ?? "json";
      if (format !== "json") {
        const stream = await exportStream(store, filters, format);
        const date = new Date(clock()).toISOString().slice(0, 10);
        return (
          reply
            .type(EXPORT_TYPES[format])
            .header("content-disposition", `attachment; filename="events-${date}.${format}"`)
            // A stream is sent as it is; the response schemas document it but do not serialise it.
            .send(stream as unknown as string)
        );
      }
      const limit = query.limit ?? EVENTS_PAGE_DEFAULT;
      // One extra row tells whether a next page exists without a count query.
      const rows = await store.listServiceEvents({ ...filters, limit: limit + 1 });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      const nextCursor = rows.length > limit && last ? encodeCursor(last.id) : null;
      let next: string | null = null;
      if (nextCursor) {
        const params = new URLSearchParams({ limit: String(limit), cursor: nextCursor });
        for (const name of ["user_id", "type", "outcome", "address", "since", "until"] as const) {
          const value = query[name];
          if (value !== undefined) params.set(name, value);
        }
        next = `/events?${params}`;
      }
      return reply.type("application/json; charset=utf-8").send({
        items: items.map(toEventOut),
        next_cursor: nextCursor,
        next,
      });
    },
  );
};
