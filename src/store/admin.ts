// What the service-wide admin API reads (issue 35, src/admin-api/): the
// whole audit log, newest first, with the filters the console offers, and
// the few counts its overview shows, each answered from an index or a
// count the operator docs accept (docs/operating/admin-api.md).
import type { AuditEvent, AuditEventType } from "./audit.ts";

/** An audit event as the service-wide log shows it: with its user's e-mail while the user exists. */
export interface ServiceEvent extends AuditEvent {
  userEmail: string | null;
  /** The acting admin's e-mail today; null when no admin acted or the admin was deleted. */
  actorEmail: string | null;
}

export interface ServiceEventQuery {
  limit: number;
  /** Keyset pagination, newest first: only events whose id sorts before this one (ids are time-ordered). */
  before?: string;
  userId?: string;
  type?: AuditEventType;
  /** Events whose outcome starts with this text (case-sensitive on both databases). */
  outcomePrefix?: string;
  clientAddress?: string;
  /** ISO timestamps, inclusive. */
  since?: string;
  until?: string;
}

/** Sign-ins counted in one time bucket (the bucket starts at `start`, ISO). */
export interface SignInBucket {
  start: string;
  succeeded: number;
  failed: number;
}

/** An outbox's backlog: items not yet delivered nor given up, when the oldest was queued; and those given up. */
export interface Backlog {
  pending: number;
  oldestCreatedAt: string | null;
  /** Given up after every attempt: kept to be retried for AUDIT_RETENTION_DAYS from when they were queued. */
  failed: number;
}

export interface OverviewCounts {
  users: { total: number; active: number; createdLast7Days: number };
  signInsByHour: SignInBucket[];
  signInsByDay: SignInBucket[];
  mailOutbox: Backlog;
  webhookOutbox: Backlog;
  backchannelLogouts: { failed: number; retrying: number };
}

export interface AdminReadVerbs {
  listServiceEvents(query: ServiceEventQuery): Promise<ServiceEvent[]>;
  /**
   * The overview's counts at `now` (ms): hour buckets are the last 24 whole UTC hours (the current one
   * included), day buckets the last 7 UTC days (today included), oldest first.
   */
  overviewCounts(now: number): Promise<OverviewCounts>;
}
