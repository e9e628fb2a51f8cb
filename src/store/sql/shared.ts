// What the aggregates' verbs (sql/*.ts) share, made once per store by
// sql-store.ts and handed to each aggregate's factory: the database, its
// dialect and the clock, and the writes that cross aggregates inside one
// transaction: an audit event with its notice and webhook events (record,
// publish, insertMail), the one path of every ending of sessions
// (sessionsEnded, endEverySession), and a write to a user under the admin
// invariant (writeUser). Ids that cannot be UUIDs, and text with a NUL byte,
// name nothing: verbs answer them without a query (isUuid), because
// PostgreSQL refuses them in a uuid or text column.
import { LastActiveAdmin } from "../../errors.ts";
import { type EventFacts, eventOfAudit, type WebhookEventType, webhookEvent } from "../../webhooks/events.ts";
import type { AuditEntry } from "../audit.ts";
import { ChangeListeners } from "../change-feed.ts";
import { type Db, type Param, prepared, type Queryable, type Sql } from "../db.ts";
import { newId } from "../ids.ts";
import type { NewOutboxMessage } from "../mail.ts";
import type { WebhookEvent } from "../webhooks.ts";
import { createLogoutQueue } from "./backchannel-queue.ts";
import { createWebhookPublisher } from "./webhook-events.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Whether every id can be a UUID: one that cannot names nothing, and PostgreSQL would refuse it. */
export const isUuid = (...ids: string[]) => ids.every((id) => UUID.test(id));

const INSERT_EVENT = prepared(
  "audit_events_insert",
  "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at, actor_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
);
// Equalities (not bare columns), so that SQLite too answers from the index users_active_admins.
const ACTIVE_ADMINS = "SELECT count(*) AS n FROM users WHERE is_admin = $1 AND is_active = $1";

/** Ends the live client sessions begun in a browser session ($1 now, $2 the browser session). */
const END_CLIENT_SESSIONS_OF = `UPDATE sessions SET revoked_at = $1 WHERE revoked_at IS NULL AND id IN
  (SELECT session_id FROM oidc_client_sessions WHERE browser_session_id = $2) RETURNING id, user_id`;

/** A row as the driver answers it: timestamps as ISO text (both backends), booleans as 0/1 on SQLite. */
export type Row = Record<string, unknown>;

/** PostgreSQL's boolean; SQLite's 0 or 1. */
export const flag = (value: unknown) => Boolean(value);

export const iso = (ms: number) => new Date(ms).toISOString();

/** Conditions whose value is undefined are left out; parameters are numbered from 1, `limit` last. */
export function filtered(select: string, conditions: [string, Param | undefined][], order: string, limit: number) {
  const params: Param[] = [];
  const clauses: string[] = [];
  for (const [clause, value] of conditions) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`${clause} $${params.length}`);
  }
  params.push(limit);
  const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
  return [`${select} ${where} ORDER BY ${order} LIMIT $${params.length}`, params] as const;
}

/** What every aggregate's factory receives (see sql-store.ts). */
export type Shared = ReturnType<typeof shared>;

/** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
export function shared(db: Db, clock: () => number) {
  const d = db.dialect;
  const changes = new ChangeListeners();
  const now = () => new Date(clock()).toISOString();
  const webhooks = createWebhookPublisher(clock);
  const logouts = createLogoutQueue(clock);

  /** The record of the first row the statement answers, if any. */
  async function find<T>(sql: Sql, params: Param[], read: (row: Row) => T): Promise<T | undefined> {
    const row = await db.one<Row>(sql, params);
    return row && read(row);
  }

  /**
   * Inserts audit events, and the notices they carry; those without a user id are about `subject`.
   * The webhook events they name (webhooks/events.ts) are published with them, in the same
   * transaction; `facts` fill in their data.
   */
  async function record(
    q: Queryable,
    events: readonly AuditEntry[],
    subject: string | null,
    facts: EventFacts = {},
  ): Promise<void> {
    const published: WebhookEvent[] = [];
    for (const event of events) {
      const at = clock();
      const userId = event.userId === undefined ? subject : event.userId;
      const { type, outcome, clientAddress, actorId = null } = event;
      const values = [newId(at), userId, type, outcome, clientAddress, new Date(at).toISOString(), actorId];
      await q.run(INSERT_EVENT, values);
      const derived = userId === null ? undefined : eventOfAudit(event, facts);
      if (derived && userId !== null && (await webhooks.wanted(q, derived.type))) {
        published.push(webhookEvent(derived.type, userId, derived.data, at));
      }
      if (event.notice !== undefined) await insertMail(q, event.notice);
    }
    await webhooks.publish(q, published);
  }

  /**
   * Inside the transaction that ended `sessionIds` (revoked, or about to be deleted with their user):
   * the one path by which every ending of a session reaches the relying parties. With `cascade`, the
   * live client sessions begun in an ended browser session end with it (an OpenID Connect sign-out is
   * the browser session's), each recorded as `cascade` (so its webhook session.ended too); then the
   * logout tokens owed for all of them are queued, one per client and sid (backchannel-queue.ts).
   */
  async function sessionsEnded(tx: Queryable, sessionIds: readonly string[], at: string, cascade?: AuditEntry) {
    const all = [...sessionIds];
    if (cascade !== undefined) {
      for (const id of sessionIds) {
        for (const begun of await tx.all<{ id: string; user_id: string }>(END_CLIENT_SESSIONS_OF, [at, id])) {
          await record(tx, [cascade], begun.user_id, { sessionId: begun.id });
          all.push(begun.id);
        }
      }
    }
    await logouts.queue(tx, all);
  }

  /** Publishes one webhook event that no audit entry names (user.updated), when anyone subscribes. */
  async function publish(q: Queryable, type: WebhookEventType, userId: string, data: Record<string, string>) {
    if (await webhooks.wanted(q, type)) await webhooks.publish(q, [webhookEvent(type, userId, data, clock())]);
  }

  /**
   * One statement and, if it answered a row, its events (about the row's user_id, or `subject`), in
   * one transaction: the shape of most single-row changes.
   */
  async function eventful<R extends { user_id?: string }>(
    sql: string,
    params: Param[],
    events: readonly AuditEntry[],
    subject?: string | null,
    facts?: EventFacts,
  ): Promise<R | undefined> {
    return db.transaction(async (tx) => {
      const row = await tx.one<R>(sql, params);
      if (row !== undefined) await record(tx, events, subject ?? row.user_id ?? null, facts);
      return row;
    });
  }

  async function insertMail(q: Queryable, mail: NewOutboxMessage): Promise<void> {
    const at = clock();
    const id = newId(at);
    await q.run(
      `INSERT INTO mail_outbox (id, kind, recipient, user_id, payload, message_id, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [id, mail.kind, mail.recipient, mail.userId, mail.payload, `<${id}@${mail.messageDomain}>`, iso(at)],
    );
  }

  /** Deletes up to `limit` rows of `table` (by its `key`) that `condition` ($1) picks; answers how many. */
  function deleteSome(table: string, key: string, condition: string, value: string, limit: number) {
    const sql = `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${condition} LIMIT $2)`;
    return db.run(sql, [value, limit]);
  }

  /**
   * Inside a user write's transaction: ends every session of the user and the pending second-factor
   * challenges (they proved the old password), each session with its webhook and back-channel logouts;
   * answers how many sessions ended. The caller replaces the credential stamp.
   */
  async function endEverySession(tx: Queryable, userId: string, at: string): Promise<number> {
    const ended = await tx.all<{ id: string }>(
      "UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL RETURNING id",
      [at, userId],
    );
    await tx.run("DELETE FROM mfa_challenges WHERE user_id = $1", [userId]);
    for (const session of ended) {
      await publish(tx, "session.ended", userId, { session_id: session.id, reason: "credentials_changed" });
    }
    // Every session of the user ended: no client session is left to cascade to.
    await sessionsEnded(
      tx,
      ended.map((session) => session.id),
      at,
    );
    return ended.length;
  }

  /** Inside a user write's transaction: tells other instances, where the dialect tells them this way. */
  async function notify(tx: Queryable, userId: string): Promise<void> {
    if (d.notifyUserChange !== undefined) await tx.run(d.notifyUserChange, [userId]);
  }

  async function activeAdmins(q: Queryable): Promise<number> {
    return Number((await q.one<{ n: number | string }>(ACTIVE_ADMINS, [true]))?.n ?? 0);
  }

  /**
   * A write to one user in one transaction: when it may remove an admin, under the admin lock and
   * rolled back if it took the active admins from some to none. Other instances hear of it on
   * commit (notify), this one's listeners right after, before the caller answers.
   */
  async function writeUser<T>(userId: string, canRemoveAnAdmin: boolean, write: (tx: Queryable) => Promise<T>) {
    const result = await db.transaction(async (tx) => {
      if (canRemoveAnAdmin && d.lockAdmins !== undefined) await tx.run(d.lockAdmins);
      const before = canRemoveAnAdmin ? await activeAdmins(tx) : 0;
      const written = await write(tx);
      if (before > 0 && (await activeAdmins(tx)) === 0) throw new LastActiveAdmin();
      await notify(tx, userId);
      return written;
    });
    changes.changed(userId);
    return result;
  }

  return {
    db,
    d,
    clock,
    now,
    changes,
    webhooks,
    logouts,
    find,
    record,
    sessionsEnded,
    publish,
    eventful,
    insertMail,
    deleteSome,
    endEverySession,
    notify,
    activeAdmins,
    writeUser,
  };
}
