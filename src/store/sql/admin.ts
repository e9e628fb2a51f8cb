// The service-wide admin API's reads (admin.ts): the whole audit log,
// newest first, and the overview's counts in one round of queries. Time
// ranges over audit events and users are bounded by id as well as by time:
// ids are UUID version 7, so the smallest id of an instant is a key that the
// primary key (and audit_events_by_type_newest, migration 140) range over.
import type { AdminReadVerbs, Backlog, OverviewCounts, ServiceEvent, SignInBucket } from "../admin.ts";
import type { Param } from "../db.ts";
import { reader } from "./reader.ts";
import type { Row, Shared } from "./shared.ts";

const readEvent = reader<ServiceEvent>();

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The smallest UUID version 7 of the millisecond `ms`: every id made at or after it sorts after it. */
export function firstIdAt(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

// What counts as a sign-in and as a failed one (docs/operating/admin-api.md): `login` events; success and
// success_upstream succeed, failure (unknown e-mail or wrong password) and refused_* (inactive,
// unverified) fail; mfa_required is a step, neither.
const SUCCEEDED = "substr(outcome, 1, 7) = 'success'";
const FAILED = "(outcome = 'failure' OR substr(outcome, 1, 8) = 'refused_')";

const count = (value: unknown) => Number(value ?? 0);

/** Bucket starts, oldest first: `n` buckets of `size` ms, the last one holding `now`. */
function bucketStarts(now: number, size: number, n: number): number[] {
  const current = Math.floor(now / size) * size;
  return Array.from({ length: n }, (_, i) => current - (n - 1 - i) * size);
}

export function adminVerbs({ db }: Shared): AdminReadVerbs {
  async function backlog(table: string): Promise<Backlog> {
    // The (status, next_attempt_at) index of each outbox answers the pending and failed rows: a backlog is
    // small unless deliveries are failing, which is what the counts are there to show.
    const row = await db.one<Row>(
      `SELECT sum(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS n,
        min(CASE WHEN status = 'pending' THEN created_at END) AS oldest,
        sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed
      FROM ${table} WHERE status IN ('pending', 'failed')`,
    );
    return {
      pending: count(row?.n),
      oldestCreatedAt: (row?.oldest as string | null | undefined) ?? null,
      failed: count(row?.failed),
    };
  }

  async function signIns(now: number): Promise<{ byHour: SignInBucket[]; byDay: SignInBucket[] }> {
    const hours = bucketStarts(now, HOUR_MS, 24);
    const days = bucketStarts(now, DAY_MS, 7);
    const buckets = [
      ...hours.map((start) => [start, start + HOUR_MS]),
      ...days.map((start) => [start, start + DAY_MS]),
    ];
    const params: Param[] = ["login", firstIdAt(days[0] as number)];
    const sums: string[] = [];
    buckets.forEach(([start, end], i) => {
      params.push(new Date(start as number).toISOString(), new Date(end as number).toISOString());
      const within = `created_at >= $${params.length - 1} AND created_at < $${params.length}`;
      sums.push(`sum(CASE WHEN ${within} AND ${SUCCEEDED} THEN 1 ELSE 0 END) AS s${i}`);
      sums.push(`sum(CASE WHEN ${within} AND ${FAILED} THEN 1 ELSE 0 END) AS f${i}`);
    });
    // One pass over the last 7 days' login events, found by (type, id).
    const row =
      (await db.one<Row>(`SELECT ${sums.join(", ")} FROM audit_events WHERE type = $1 AND id >= $2`, params)) ?? {};
    const bucket = (start: number, i: number): SignInBucket => ({
      start: new Date(start).toISOString(),
      succeeded: count(row[`s${i}`]),
      failed: count(row[`f${i}`]),
    });
    return {
      byHour: hours.map((start, i) => bucket(start, i)),
      byDay: days.map((start, i) => bucket(start, hours.length + i)),
    };
  }

  return {
    async listServiceEvents({ limit, before, userId, type, outcomePrefix, clientAddress, since, until }) {
      const params: Param[] = [];
      const clauses: string[] = [];
      const add = (clause: (n: number) => string, value: Param | undefined) => {
        if (value === undefined) return;
        params.push(value);
        clauses.push(clause(params.length));
      };
      add((n) => `e.id < $${n}`, before);
      add((n) => `e.user_id = $${n}`, userId);
      add((n) => `e.type = $${n}`, type);
      if (outcomePrefix !== undefined) {
        // A prefix compared by substr, not LIKE: no wildcard to escape, and case-sensitive on both databases.
        params.push(outcomePrefix, [...outcomePrefix].length);
        clauses.push(`substr(e.outcome, 1, $${params.length}) = $${params.length - 1}`);
      }
      add((n) => `e.client_address = $${n}`, clientAddress);
      add((n) => `e.created_at >= $${n}`, since);
      // An event's id is made at or after its created_at (ids.ts), so `since` bounds the ids too, and the
      // primary key's range starts there instead of the whole log being walked back to it.
      add((n) => `e.id >= $${n}`, since === undefined ? undefined : firstIdAt(Date.parse(since)));
      add((n) => `e.created_at <= $${n}`, until);
      params.push(limit);
      const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
      const sql = `SELECT e.*, u.email AS user_email, a.email AS actor_email FROM audit_events e
        LEFT JOIN users u ON u.id = e.user_id LEFT JOIN users a ON a.id = e.actor_id
        ${where} ORDER BY e.id DESC LIMIT $${params.length}`;
      return (await db.all<Row>(sql, params)).map(readEvent);
    },

    async overviewCounts(now): Promise<OverviewCounts> {
      const weekAgo = firstIdAt(now - 7 * DAY_MS);
      // Whole-table counts of users: PostgreSQL counts by a scan (of the index where it can); on
      // 1,000,000 users that is some tens of milliseconds, accepted for a dashboard read on demand.
      const users = await db.one<Row>(
        `SELECT count(*) AS total,
          sum(CASE WHEN is_active = $1 THEN 1 ELSE 0 END) AS active,
          sum(CASE WHEN id >= $2 THEN 1 ELSE 0 END) AS recent
        FROM users`,
        [true, weekAgo],
      );
      const { byHour, byDay } = await signIns(now);
      const logouts = await db.one<Row>(
        `SELECT sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
          sum(CASE WHEN status = 'pending' AND attempts > 0 THEN 1 ELSE 0 END) AS retrying
        FROM backchannel_logouts WHERE status IN ('failed', 'pending')`,
      );
      return {
        users: { total: count(users?.total), active: count(users?.active), createdLast7Days: count(users?.recent) },
        signInsByHour: byHour,
        signInsByDay: byDay,
        mailOutbox: await backlog("mail_outbox"),
        webhookOutbox: await backlog("webhook_messages"),
        backchannelLogouts: { failed: count(logouts?.failed), retrying: count(logouts?.retrying) },
      };
    },
  };
}
