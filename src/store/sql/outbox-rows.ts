// The outbox columns' two writes, the same for every outbox table (mail_outbox,
// backchannel_logouts, webhook_messages; see outbox/worker.ts): a claim of due
// rows under a lease, exclusive across instances (SQLite's write lock,
// PostgreSQL's SKIP LOCKED), and the recording of an attempt's outcome,
// which only the lease's owner may write.
import type { Db, Param } from "../db.ts";
import type { DeliveryOutcome } from "../mail.ts";

type Row = Record<string, unknown>;

/**
 * Claims up to `limit` rows of `table` (keyed by `id`) due at `at` for `owner` until `leaseUntil`,
 * counting an attempt on each: oldest due first. A row one sender claimed is not claimed by another:
 * on SQLite another process on the file waits for this claim; on PostgreSQL instances claiming at the
 * same moment take different rows instead of waiting or doubling up.
 */
export function claimDueRows(
  db: Db,
  table: string,
  owner: string,
  at: string,
  leaseUntil: string,
  limit: number,
): Promise<Row[]> {
  return db.claiming((tx) =>
    tx.all<Row>(
      `UPDATE ${table} SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
       WHERE id IN (SELECT id FROM ${table} WHERE status = 'pending' AND next_attempt_at <= $3
                    AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_attempt_at, id LIMIT $4
                    ${db.dialect.skipLocked}) RETURNING *`,
      [owner, leaseUntil, at, limit],
    ),
  );
}

/** How a table writes a delivered row: its status word, the column of the time, and anything else to clear. */
export interface SentColumns {
  status: string;
  atColumn: string;
  /** More assignments, such as dropping a payload that is no longer needed. */
  also?: string;
}

const SENT: SentColumns = { status: "sent", atColumn: "sent_at" };

/**
 * The SET list that records `outcome` and releases the lease, with its parameters numbered from
 * `first` (the statement's own come before them).
 */
export function outcomeAssignments(outcome: DeliveryOutcome, first: number, sent = SENT): [string, Param[]] {
  const [set, params]: [string, Param[]] =
    outcome.status === "sent"
      ? [
          `status = '${sent.status}', ${sent.atColumn} = $${first}, last_error = NULL${sent.also ? `, ${sent.also}` : ""}`,
          [outcome.at],
        ]
      : outcome.status === "pending"
        ? [`next_attempt_at = $${first}, last_error = $${first + 1}`, [outcome.nextAttemptAt, outcome.error]]
        : [`status = 'failed', last_error = $${first}`, [outcome.error]];
  return [`${set}, lease_owner = NULL, lease_until = NULL`, params];
}

/** Records `outcome` on row `id` of `table`, if `owner` still holds its lease. */
export async function completeRow(
  db: Db,
  table: string,
  id: string,
  owner: string,
  outcome: DeliveryOutcome,
  sent = SENT,
): Promise<void> {
  const [set, params] = outcomeAssignments(outcome, 3, sent);
  await db.run(`UPDATE ${table} SET ${set} WHERE id = $1 AND lease_owner = $2`, [id, owner, ...params]);
}
