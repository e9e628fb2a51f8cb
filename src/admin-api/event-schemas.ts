// The shapes of GET /events: the query (filters, page, export format), an
// event as the service-wide log shows it (GET /users/{id}/events' event, with
// the user it is about), and the page; and the opaque cursor, which names
// the last event of a page without promising its form to clients.
import { type Static, Type } from "typebox";
import { HttpError } from "../errors.ts";
import { ADMIN_ACTOR, AUDIT_EVENT_TYPES, type AuditEventType, type ServiceEvent } from "../store/store.ts";

export const EVENTS_PAGE_DEFAULT = 50;
export const EVENTS_PAGE_MAX = 100;

/** No control characters (a NUL byte is refused by PostgreSQL): the same 422 on both databases. */
const PRINTABLE = "^[^\\u0000-\\u001f\\u007f]*$";

const EventType = Type.Unsafe<AuditEventType>({
  type: "string",
  enum: [...AUDIT_EVENT_TYPES],
  description: "The kind of event.",
});

export const EventListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: EVENTS_PAGE_MAX, default: EVENTS_PAGE_DEFAULT, description: "Page size." }),
    ),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "The `next_cursor` of the previous page (opaque)." }),
    ),
    user_id: Type.Optional(Type.String({ format: "uuid", description: "Only events about this user." })),
    type: Type.Optional(EventType),
    outcome: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        pattern: PRINTABLE,
        description:
          "Only events whose outcome starts with this (case-sensitive): `refused` matches `refused_inactive`.",
      }),
    ),
    address: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        pattern: PRINTABLE,
        description: "Only events from this client address (exact).",
      }),
    ),
    since: Type.Optional(Type.String({ format: "date-time", description: "Only events at or after this instant." })),
    until: Type.Optional(Type.String({ format: "date-time", description: "Only events at or before this instant." })),
    format: Type.Optional(
      Type.Unsafe<"json" | "csv" | "jsonl">({
        type: "string",
        enum: ["json", "csv", "jsonl"],
        default: "json",
        description:
          "`json`: one page. `csv` or `jsonl`: every matching event (from `cursor` on, if given) as a file to " +
          "download, streamed; `limit` is ignored.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type EventListQuery = Static<typeof EventListQuery>;

export const ServiceEventOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    type: EventType,
    outcome: Type.String({
      description: "success, failure, granted_admin, reuse_detected, ...",
      examples: ["success"],
    }),
    user_id: Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
      description:
        "The user the event is about; null for events about no user (a failed login with an unknown e-mail).",
    }),
    user_email: Type.Union([Type.String(), Type.Null()], {
      description: "That user's e-mail today; null when there is no user or the user was deleted.",
    }),
    client_address: Type.Union([Type.String(), Type.Null()], { description: "Null for command-line actions." }),
    created_at: Type.String({ format: "date-time" }),
    actor_id: Type.Union([Type.String({ format: "uuid" }), Type.Null()], { description: ADMIN_ACTOR }),
    actor_email: Type.Union([Type.String(), Type.Null()], {
      description: "That admin's e-mail today; null when no admin acted or the admin was deleted.",
    }),
  },
  { $id: "ServiceAuditEvent", description: "A security event of the service-wide log. Never a password or a token." },
);
export type EventOut = Static<typeof ServiceEventOut>;

export const ServiceEventPage = Type.Object(
  {
    items: Type.Array(ServiceEventOut),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: "Pass as `cursor` for the next (older) page; null on the last page.",
    }),
    next: Type.Union([Type.String(), Type.Null()], {
      description: "The path and query of the next page, with the same filters; null on the last page.",
    }),
  },
  { $id: "ServiceAuditEventPage", description: "One page of the service-wide audit log, newest first." },
);

export function toEventOut(event: ServiceEvent): EventOut {
  return {
    id: event.id,
    type: event.type,
    outcome: event.outcome,
    user_id: event.userId,
    user_email: event.userEmail,
    client_address: event.clientAddress,
    created_at: event.createdAt,
    actor_id: event.actorId ?? null,
    actor_email: event.actorEmail,
  };
}

// The cursor is the last event's id behind a version prefix, base64url: clients pass it back as it is,
// and the service may change what it holds.
const CURSOR_PREFIX = "ev1:";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function encodeCursor(id: string): string {
  return Buffer.from(`${CURSOR_PREFIX}${id}`).toString("base64url");
}

export const BAD_CURSOR = "querystring.cursor: not a cursor of this list";

/** The event id a cursor names; 422 for anything this service did not make. */
export function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const id = text.startsWith(CURSOR_PREFIX) ? text.slice(CURSOR_PREFIX.length) : "";
  if (!UUID.test(id)) throw new HttpError(422, BAD_CURSOR);
  return id;
}
