// The write side of the back-channel logout outbox (migrations 60 and 80):
// queue() is called from the one path for ended sessions (sql/shared.ts,
// sessionsEnded), inside the ending's transaction. A row says what the
// logout token will say (client, sub, sid) and where it goes; the token is
// signed at each attempt (oidc/backchannel-logout.ts). One pending row per
// client and sid (a partial unique index): sessions that end together, or
// again before the first logout went out, owe one logout. The verbs that
// read and deliver the rows are sql/backchannel-logouts.ts.
import type { Queryable } from "../db.ts";
import { newId } from "../ids.ts";

// oauth_clients.id is a uuid on PostgreSQL, client_id text: compared as text (the registry is small).
const OWED = `SELECT DISTINCT c.client_id, c.browser_session_id, s.user_id, k.backchannel_logout_uri, k.registered_by
  FROM oidc_client_sessions c JOIN sessions s ON s.id = c.session_id
    JOIN oauth_clients k ON CAST(k.id AS TEXT) = c.client_id
  WHERE c.session_id = $1 AND k.backchannel_logout_uri IS NOT NULL`;

const INSERT = `INSERT INTO backchannel_logouts
    (id, client_id, user_id, sid, uri, registered_by, next_attempt_at, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (client_id, sid) WHERE status = 'pending' DO NOTHING`;

/**
 * The wake-up waits this long: it is sent from inside the transaction, which commits a moment later; a
 * worker that looks too early finds the logouts at its next poll.
 */
const WAKE_DELAY_MS = 20;

type Row = Record<string, unknown>;

export interface LogoutQueue {
  /** Through `q` (the ending's transaction): the logouts owed for these ended client sessions. */
  queue(q: Queryable, sessionIds: readonly string[]): Promise<void>;
  /** Calls `listener` shortly after logouts were queued here (to wake the worker). */
  onQueued(listener: () => void): void;
}

export function createLogoutQueue(clock: () => number): LogoutQueue {
  const listeners: (() => void)[] = [];
  const iso = (ms: number) => new Date(ms).toISOString();

  return {
    async queue(q, sessionIds) {
      let written = 0;
      for (const sessionId of sessionIds) {
        for (const owed of await q.all<Row>(OWED, [sessionId])) {
          const at = clock();
          written += await q.run(INSERT, [
            newId(at),
            owed.client_id as string,
            owed.user_id as string,
            owed.browser_session_id as string,
            owed.backchannel_logout_uri as string,
            owed.registered_by as string,
            iso(at),
          ]);
        }
      }
      if (written > 0) for (const listener of listeners) setTimeout(listener, WAKE_DELAY_MS).unref();
    },
    onQueued(listener) {
      listeners.push(listener);
    },
  };
}
