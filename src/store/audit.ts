// The audit trail (store.ts): a security event is written in the
// transaction of the change it describes, with what it carries: its notice
// (a mail, queued in the outbox) and the webhook events it names
// (webhooks/events.ts), written for each enabled, subscribed endpoint (the
// webhook outbox, sql/webhook-events.ts). Every verb that takes `events`
// records them this way (sql/shared.ts, record).
import type { NewOutboxMessage } from "./mail.ts";

export const AUDIT_EVENT_TYPES = [
  "signup",
  "login",
  "password_change",
  "role_change",
  "deactivation",
  "deletion",
  "session_revocation",
  "password_reset",
  "email_verification",
  "email_change",
  "mail",
  "passkey",
  "second_factor",
  "webhook",
  // An OAuth client registered, changed, given a new secret or deleted; about the admin who did it.
  "oauth_client",
  "oidc",
  // Sign-in with an upstream provider (issue 25): sign-ins, links and unlinks of identities.
  "upstream",
  // The device authorization grant (issue 36): requested, approved, denied, redeemed, refused:<why>.
  "device_authorization",
  // A DPoP proof refused at the token endpoint (issue 36), with its reason; about no user.
  "dpop",
  // The brand changed through the admin API (issue 37): the service's or a client's; about the admin who did it.
  "branding",
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** An audit event written in the same transaction as the change it describes. */
export interface AuditEntry {
  type: AuditEventType;
  outcome: string;
  clientAddress: string | null;
  /** Defaults to the user the write is about (created, changed, removed, or the session's owner). */
  userId?: string | null;
  /** The admin who acted on someone else's account (issue 35); left out when the user or the service acted. */
  actorId?: string | null;
  /** A security notification about this event, queued in the outbox in the same transaction. */
  notice?: NewOutboxMessage;
}

/** What the API says of AuditEvent.actorId (GET /users/{id}/events, GET /events and its export). */
export const ADMIN_ACTOR =
  "The admin who acted on this user's account (an admin route); null when the user, the service or the command line acted.";

/** A security event: who, what, from where, how it ended. Never a password or a token. */
export interface AuditEvent {
  id: string;
  /** Null for a failed login with an e-mail that belongs to nobody. */
  userId: string | null;
  type: AuditEventType;
  outcome: string;
  clientAddress: string | null;
  createdAt: string;
  /** The admin who acted, when an admin acted on this user's account; null otherwise. */
  actorId?: string | null;
}

export interface AuditQuery {
  userId: string;
  limit: number;
  /** Keyset pagination: only events whose id sorts after this one (ids are time-ordered). */
  after?: string;
  type?: AuditEventType;
  /** ISO timestamps, inclusive. */
  from?: string;
  to?: string;
}

/** The audit trail: written with each change by the verbs themselves; recordEvent for what changes nothing. */
export interface AuditVerbs {
  recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void>;
  listEvents(query: AuditQuery): Promise<AuditEvent[]>;
  /** Deletes up to `limit` events older than `before`; answers how many. */
  pruneEvents(before: string, limit: number): Promise<number>;
}
