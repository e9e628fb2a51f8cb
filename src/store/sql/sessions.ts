// The sessions table's verbs (sessions.ts): a login, the rotation of its
// refresh token (sql/rotation.ts judges the presented one), revocations and
// housekeeping. Every ending of a session goes through sessionsEnded
// (sql/shared.ts), in the ending's transaction.
import type { AuditEntry } from "../audit.ts";
import { type Dialect, type Param, prepared, type Queryable } from "../db.ts";
import type { DeviceSighting, Rotation, SessionRecord, SessionVerbs } from "../sessions.ts";
import { reader } from "./reader.ts";
import { judgePresentedToken, parseAmr, type SessionTokenState } from "./rotation.ts";
import { isUuid, type Row, type Shared } from "./shared.ts";
import { readUser, USER_BY_ID } from "./users.ts";

const INSERT_SESSION = prepared(
  "sessions_insert",
  `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent,
                         refresh_token_hash, refresh_generation, refresh_expires_at, amr, dpop_jkt)
   VALUES ($1, $2, $3, $3, $4, $5, $6, $7, 0, $8, $9, $10)`,
);
const ROTATE = prepared(
  "sessions_rotate",
  `UPDATE sessions SET refresh_token_hash = $1, refresh_generation = refresh_generation + 1,
     refresh_expires_at = $2, rotated_at = $3, last_used_at = $3, client_address = $4, user_agent = $5
   WHERE id = $6 RETURNING *`,
);
const DEVICES_OF = "SELECT count(*) AS n FROM known_devices WHERE user_id = $1";

/**
 * Ends the live sessions beyond the newest `cap` ($1 user, $2 now, $3 cap) when a login starts one
 * more. Runs on every login, through the index of live sessions (migration 8), so its cost does not
 * grow with the revoked sessions the user has (test/session-index.test.ts).
 */
export const revokeSessionsPastCap = (d: Dialect) =>
  prepared(
    "sessions_past_cap",
    `UPDATE sessions SET revoked_at = $2 WHERE id IN (SELECT id FROM sessions
       WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
         AND NOT EXISTS (SELECT 1 FROM oidc_client_sessions WHERE session_id = sessions.id)
       ORDER BY id DESC ${d.noLimit} OFFSET $3) RETURNING id`,
  );

/**
 * The same cap for the sessions of one OpenID Connect client ($4): each client's sessions of a user
 * count apart, so a relying party that signs in often never ends the user's own sessions (nor
 * another app's). The user's own cap ends an app's session only by ending the browser session it
 * was begun in (sessionsEnded's cascade, like any other ending of a browser session).
 */
export const revokeClientSessionsPastCap = (d: Dialect) =>
  prepared(
    "client_sessions_past_cap",
    `UPDATE sessions SET revoked_at = $2 WHERE id IN (SELECT sessions.id FROM sessions
       JOIN oidc_client_sessions ON oidc_client_sessions.session_id = sessions.id
       WHERE sessions.user_id = $1 AND oidc_client_sessions.client_id = $4 AND sessions.revoked_at IS NULL
         AND sessions.expires_at > $2 AND sessions.refresh_expires_at > $2
       ORDER BY sessions.id DESC ${d.noLimit} OFFSET $3) RETURNING id`,
  );

/**
 * Housekeeping's delete of sessions past any of their three ends ($1 now, $2 limit). The OR reads
 * the table whichever single column is indexed (test/session-index.test.ts), which is why migration
 * 9 dropped the index of expires_at that every login wrote.
 */
export const PURGE_SESSIONS = `DELETE FROM sessions WHERE id IN (
   SELECT id FROM sessions WHERE expires_at <= $1 OR refresh_expires_at <= $1 OR revoked_at <= $1 LIMIT $2)`;

const SESSION_LIMIT: AuditEntry = { type: "session_revocation", outcome: "session_limit", clientAddress: null };

// The refresh columns are the session's current token, read only by the rotation.
const readSession = reader<SessionRecord>({ amr: (value) => parseAmr(value as string | null) }, [
  "refresh_token_hash",
  "refresh_generation",
  "refresh_expires_at",
  "rotated_at",
]);
/** What the rotation reads of a session: its token columns and its ends. */
const readTokenState = reader<SessionTokenState & Pick<SessionRecord, "expiresAt" | "revokedAt">>();

export function sessionVerbs({
  db,
  d,
  now,
  find,
  record,
  sessionsEnded,
  insertMail,
  deleteSome,
}: Shared): SessionVerbs {
  const sessionForRotation = prepared("sessions_for_rotation", `SELECT * FROM sessions WHERE id = $1${d.forUpdate}`);
  const pastCap = revokeSessionsPastCap(d);
  const clientPastCap = revokeClientSessionsPastCap(d);
  // The primary key (user_id, device_hash) answers it; one hash per key in use. With one key (the
  // usual case) an equality, which spares a JSON array and SQLite's json_each on every login.
  const knownDevice = prepared(
    "known_devices_find",
    `SELECT device_hash, last_seen_at FROM known_devices
     WHERE user_id = $1 AND device_hash IN (SELECT value FROM ${d.elements("$2")})`,
  );
  const knownDeviceByOneHash = prepared(
    "known_devices_find_one",
    "SELECT device_hash, last_seen_at FROM known_devices WHERE user_id = $1 AND device_hash = $2",
  );

  /** A session revoked with `events`, and what follows from it (sessionsEnded); the owner's id if it was live. */
  async function revokeOne(sql: string, params: Param[], sessionId: string, at: string, events: readonly AuditEntry[]) {
    return db.transaction(async (tx) => {
      const row = await tx.one<{ user_id: string }>(sql, params);
      if (row === undefined) return undefined;
      await record(tx, events, row.user_id, { sessionId });
      const cascade: AuditEntry = {
        type: "session_revocation",
        outcome: "browser_session_ended",
        clientAddress: events[0]?.clientAddress ?? null,
      };
      await sessionsEnded(tx, [sessionId], at, cascade);
      return row.user_id;
    });
  }

  /**
   * Inside a login's transaction: whether the device is new to the user, remembering it either way.
   * A known device costs one read of the primary key (and a write at most once a day, for its
   * last-seen time); only a new one writes, and forgets the least recently seen past the cap.
   */
  async function sighted(tx: Queryable, userId: string, device: DeviceSighting, at: string) {
    const [current] = device.hashes as [string];
    const [lookup, params]: [typeof knownDevice, Param[]] =
      device.hashes.length === 1 ? [knownDeviceByOneHash, [userId, current]] : [knownDevice, [userId, device.hashes]];
    const known = await tx.one<{ device_hash: string; last_seen_at: string }>(lookup, params);
    if (known !== undefined) {
      // A hash under an older key is moved to the current one, so that it survives that key's removal.
      if (known.last_seen_at < device.refreshBefore || known.device_hash !== current) {
        await tx.run(
          "UPDATE known_devices SET device_hash = $1, last_seen_at = $2 WHERE user_id = $3 AND device_hash = $4",
          [current, at, userId, known.device_hash],
        );
      }
      return false;
    }
    const others = Number((await tx.one<{ n: number | string }>(DEVICES_OF, [userId]))?.n ?? 0);
    await tx.run(
      "INSERT INTO known_devices (user_id, device_hash, first_seen_at, last_seen_at) VALUES ($1, $2, $3, $3)",
      [userId, current, at],
    );
    if (others >= device.maxPerUser) {
      await tx.run(
        `DELETE FROM known_devices WHERE user_id = $1 AND device_hash IN (SELECT device_hash FROM known_devices
           WHERE user_id = $1 ORDER BY last_seen_at DESC, device_hash ${d.noLimit} OFFSET $2)`,
        [userId, device.maxPerUser],
      );
    }
    // A user's first device is not news: the sign-in right after sign-up, or the first after an upgrade.
    return others > 0;
  }

  return {
    async createSession(session, { maxPerUser, events = [], device, client }) {
      const at = now();
      const amr = [...(session.amr ?? ["pwd"])];
      return db.transaction(async (tx) => {
        // One login of a user at a time past this point, so that two cannot both stay under the cap.
        if (d.forUpdate) await tx.run(`SELECT 1 FROM users WHERE id = $1${d.forUpdate}`, [session.userId]);
        const { id, userId, expiresAt, clientAddress, userAgent, tokenHash, tokenExpiresAt } = session;
        const values = [id, userId, at, expiresAt, clientAddress, userAgent, tokenHash, tokenExpiresAt];
        const dpopJkt = session.dpopJkt ?? null;
        await tx.run(INSERT_SESSION, [...values, JSON.stringify(amr), dpopJkt]);
        // A client's session is bound to its client in the same transaction: the cap it counts against.
        if (client !== undefined)
          await tx.run(
            "INSERT INTO oidc_client_sessions (session_id, client_id, scope, browser_session_id) VALUES ($1, $2, $3, $4)",
            [id, client.clientId, client.scope, client.browserSessionId],
          );
        if (client?.fromCodeHash !== undefined)
          await tx.run("UPDATE oidc_codes SET issued_session_id = $1 WHERE code_hash = $2", [id, client.fromCodeHash]);
        await record(tx, events, userId, { sessionId: id });
        const capped =
          client === undefined
            ? await tx.all<{ id: string }>(pastCap, [userId, at, maxPerUser])
            : await tx.all<{ id: string }>(clientPastCap, [userId, at, maxPerUser, client.clientId]);
        for (const ended of capped) await record(tx, [SESSION_LIMIT], userId, { sessionId: ended.id });
        if (capped.length > 0) {
          const ids = capped.map((session) => session.id);
          await sessionsEnded(tx, ids, at, { ...SESSION_LIMIT, outcome: "browser_session_ended" });
        }
        const notice = device !== undefined && (await sighted(tx, userId, device, at)) ? device.notice : undefined;
        if (notice !== undefined) await insertMail(tx, notice);
        // Built from what was written rather than read back: a login is this store's hottest write.
        const started = { id, userId, createdAt: at, lastUsedAt: at, expiresAt, revokedAt: null, clientAddress };
        return { ...started, userAgent, amr, dpopJkt, newDeviceNoticed: notice !== undefined };
      });
    },
    async rotateRefreshToken(presented, successor, at, client, proofKey) {
      if (!isUuid(presented.sessionId)) return { outcome: "invalid" };
      return db.transaction(async (tx): Promise<Rotation> => {
        // Concurrent rotations of one session queue here (FOR UPDATE, or SQLite's one writer), and
        // only the first finds its generation current.
        const row = await tx.one<Row>(sessionForRotation, [presented.sessionId]);
        const state = row && readTokenState(row);
        if (!state || state.revokedAt !== null || state.expiresAt <= at) return { outcome: "invalid" };
        const outcome = judgePresentedToken(state, presented, at);
        if (outcome !== "current") return outcome;
        // RFC 9449 section 5: a bound session's token is spent only with a proof by its key.
        const bound = (row as Row).dpop_jkt;
        if (typeof bound === "string" && bound !== proofKey)
          return { outcome: "unproven", proofSent: proofKey !== undefined };
        const expiresAt = successor.expiresAt < state.expiresAt ? successor.expiresAt : state.expiresAt;
        const values = [successor.tokenHash, expiresAt, at, client.address, client.userAgent, state.id];
        const updated = (await tx.one<Row>(ROTATE, values)) as Row;
        const user = (await tx.one<Row>(USER_BY_ID, [state.userId])) as Row;
        return { outcome: "rotated", session: readSession(updated), user: readUser(user) };
      });
    },
    async findSession(id) {
      return isUuid(id) ? find("SELECT * FROM sessions WHERE id = $1", [id], readSession) : undefined;
    },
    async listSessions(userId, at, { limit, before }) {
      const rows = await db.all<Row>(
        `SELECT * FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
           AND refresh_expires_at > $2 ${before ? "AND id < $4" : ""} ORDER BY id DESC LIMIT $3`,
        [userId, at, limit, ...(before ? [before] : [])],
      );
      return rows.map(readSession);
    },
    async revokeSession(id, at, events = []) {
      if (!isUuid(id)) return false;
      const sql = "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING user_id";
      return (await revokeOne(sql, [at, id], id, at, events)) !== undefined;
    },
    async revokeSessionByToken(presented, at, events = []) {
      if (!isUuid(presented.sessionId)) return undefined;
      return revokeOne(
        `UPDATE sessions SET revoked_at = $1
         WHERE id = $2 AND refresh_generation = $3 AND refresh_token_hash = $4 AND revoked_at IS NULL
         RETURNING user_id`,
        [at, presented.sessionId, presented.generation, presented.tokenHash],
        presented.sessionId,
        at,
        events,
      );
    },
    async purgeExpired(at, limit) {
      const sessions = await db.run(PURGE_SESSIONS, [at, limit]);
      const challenges = await deleteSome("mfa_challenges", "token_hash", "expires_at <= $1", at, limit);
      const ceremonies = await deleteSome("webauthn_challenges", "id", "expires_at <= $1", at, limit);
      return sessions + challenges + ceremonies;
    },
  };
}
