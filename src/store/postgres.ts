// PostgreSQL for several instances behind one address: a pg Pool whose size
// is a setting, the same domain verbs and migrations as SQLite, 23505 mapped
// to EmailTaken, and every connection-level failure (refused, reset, timed
// out, server shutting down) mapped to StoreUnavailable, a 503, so requests
// fail fast and the pool recovers on its own when the server is back.
// Writes that can remove an admin take one advisory transaction lock, so two
// instances cannot each remove "the other" last admin. Every verb that writes
// more than one row is one transaction (see store.ts). Every connection has
// an error listener for its whole life: pg emits "error" on a client whose
// server went away, and one emitted while the client is checked out (inside
// a transaction) would otherwise be unhandled and end the process.
import pg from "pg";
import { EmailTaken, HttpError, LastActiveAdmin, StoreUnavailable } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { ChangeListeners } from "./change-feed.ts";
import { newCredentialStamp, newId } from "./ids.ts";
import { pending } from "./migrations.ts";
import { PostgresChangeFeed, USER_CHANGES_CHANNEL } from "./postgres-changes.ts";
import { judgePresentedToken, parseAmr } from "./rotation.ts";
import type {
  AccountTokenPurpose,
  AccountTokenRecord,
  AuditEntry,
  AuditEvent,
  AuditQuery,
  DeliveryOutcome,
  MailStatus,
  MfaChallenge,
  NewAccountToken,
  NewOutboxMessage,
  NewPasskey,
  NewSession,
  NewUser,
  OutboxMessage,
  PasskeyRecord,
  PresentedRefreshToken,
  Redemption,
  Rotation,
  SecondFactors,
  SessionPage,
  SessionRecord,
  TotpFactor,
  UserChanges,
  UserQuery,
  UserRecord,
  UserStore,
  WebAuthnChallengeRecord,
  WebAuthnPurpose,
  WriteOptions,
} from "./store.ts";

/** Session ids are UUIDs; anything else would be a 22P02 from the uuid column, and names nothing. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Keys for pg_advisory_lock: one for migrations, one for the admin invariant. */
const MIGRATION_LOCK = 727_001;
const ADMIN_LOCK = 727_002;

/**
 * Ends the live sessions beyond the newest `cap` (user, now, cap) when a login starts one more.
 * Runs on every login, through the index of live sessions (migration 8), so its cost does not
 * grow with the revoked sessions the user has (test/session-index.test.ts).
 */
export const REVOKE_SESSIONS_PAST_CAP = `UPDATE sessions SET revoked_at = $2 WHERE id IN (
     SELECT id FROM sessions
     WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
     ORDER BY id DESC OFFSET $3)
   RETURNING id`;

export interface PostgresOptions {
  url: string;
  poolSize: number;
  /** Bound on connecting and on every statement; past it the request gets a 503. */
  timeoutMs: number;
  /** A schema to work in (tests give each run its own); created when missing. */
  schema?: string;
  clock?: () => number;
}

interface UserRow {
  id: string;
  email: string;
  hashed_password: string;
  full_name: string | null;
  is_active: boolean;
  is_admin: boolean;
  created_at: Date;
  updated_at: Date;
  credentials_changed_at: Date | null;
  credential_stamp: string;
  email_verified_at: Date | null;
}

interface SessionRow {
  id: string;
  user_id: string;
  created_at: Date;
  last_used_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  client_address: string | null;
  user_agent: string | null;
  refresh_token_hash: string | null;
  refresh_generation: number;
  refresh_expires_at: Date;
  rotated_at: Date | null;
  amr: string | null;
}

const COLUMN_OF: Record<keyof UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  emailVerifiedAt: "email_verified_at",
};

export async function openPostgresStore(options: PostgresOptions): Promise<PostgresUserStore> {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error("schema names are lower-case letters, digits and underscores");
  }
  const connection: pg.ClientConfig = {
    connectionString: options.url,
    connectionTimeoutMillis: options.timeoutMs,
    query_timeout: options.timeoutMs,
    statement_timeout: options.timeoutMs,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  const pool = new pg.Pool({ ...connection, max: options.poolSize, idleTimeoutMillis: 30_000 });
  // A client losing its server must not crash the process, idle (the pool's "error") or checked
  // out (the client's own "error", which the pool does not listen to then). The statement in flight
  // fails with the same error and becomes a 503; the broken client is discarded, not pooled again.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  const store = new PostgresUserStore(pool, connection, options.clock ?? Date.now);
  try {
    if (options.schema) await guard(() => pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`));
    await store.migrate();
  } catch (error) {
    await pool.end();
    throw error;
  }
  return store;
}

/** Connection-level failures have no SQLSTATE, or one of class 08 (connection) or 57 (operator intervention). */
function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith("08") || code.startsWith("57") || code === "53300";
}

async function guard<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "23505") throw new EmailTaken();
    // Data exceptions (a NUL byte in text, say) are the caller's input, not our failure.
    if (code?.startsWith("22")) throw new HttpError(422, "A value contains characters that cannot be stored");
    if (error instanceof LastActiveAdmin) throw error;
    if (isUnavailable(error)) throw new StoreUnavailable(error);
    throw error;
  }
}

export class PostgresUserStore implements UserStore {
  readonly userChanges: PostgresChangeFeed;
  readonly #changes = new ChangeListeners();
  readonly #pool: pg.Pool;
  readonly #clock: () => number;

  constructor(pool: pg.Pool, connection: pg.ClientConfig, clock: () => number) {
    this.#pool = pool;
    this.#clock = clock;
    this.userChanges = new PostgresChangeFeed(connection, this.#changes);
  }

  async migrate(): Promise<number[]> {
    return guard(async () => {
      const client = await this.#pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
        await client.query(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)",
        );
        const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
        const applied: number[] = [];
        for (const migration of pending(new Set(rows.map((row) => row.version)))) {
          await client.query("BEGIN");
          try {
            await client.query(migration.postgres);
            await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())", [
              migration.version,
              migration.name,
            ]);
            await client.query("COMMIT");
          } catch (error) {
            await client.query("ROLLBACK");
            throw error;
          }
          applied.push(migration.version);
        }
        return applied;
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
        client.release();
      }
    });
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    // PostgreSQL text cannot hold NUL, and no stored address contains one.
    if (email.includes("\0")) return undefined;
    return guard(async () => {
      const { rows } = await this.#pool.query<UserRow>({
        name: "users_by_email",
        text: "SELECT * FROM users WHERE email = $1",
        values: [normalizeEmail(email)],
      });
      return toRecord(rows[0]);
    });
  }

  async findById(id: string): Promise<UserRecord | undefined> {
    return guard(async () => {
      const { rows } = await this.#pool.query<UserRow>({
        name: "users_by_id",
        text: "SELECT * FROM users WHERE id = $1",
        values: [id],
      });
      return toRecord(rows[0]);
    });
  }

  async list({ limit, after, email, isActive, isAdmin }: UserQuery): Promise<UserRecord[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const filter = (column: string, value: unknown) => {
      values.push(value);
      where.push(`${column} $${values.length}`);
    };
    if (after !== undefined) filter("id >", after);
    if (email !== undefined) filter("email =", normalizeEmail(email));
    if (isActive !== undefined) filter("is_active =", isActive);
    if (isAdmin !== undefined) filter("is_admin =", isAdmin);
    values.push(limit);
    const sql = `SELECT * FROM users ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id LIMIT $${values.length}`;
    return guard(async () =>
      (await this.#pool.query<UserRow>(sql, values)).rows.map((row) => toRecord(row) as UserRecord),
    );
  }

  async countActiveAdmins(): Promise<number> {
    return guard(async () => countActiveAdmins(this.#pool));
  }

  async create(user: NewUser, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<UserRecord> {
    const now = this.#clock();
    const stamp = new Date(now);
    return this.#transaction(async (client) => {
      const { rows } = await client.query<UserRow>({
        name: "users_insert",
        text: `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at,
                                 credential_stamp, email_verified_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9) RETURNING *`,
        values: [
          newId(now),
          normalizeEmail(user.email),
          user.hashedPassword,
          user.fullName ?? null,
          user.isActive !== false,
          user.isAdmin === true,
          stamp,
          newCredentialStamp(),
          user.emailVerifiedAt ?? null,
        ],
      });
      const created = toRecord(rows[0]) as UserRecord;
      await this.#record(client, events, created.id);
      return created;
    });
  }

  async update(
    id: string,
    changes: UserChanges,
    { endSessions = false, events = [] }: WriteOptions = {},
  ): Promise<UserRecord | undefined> {
    const now = new Date(this.#clock());
    const values: unknown[] = [now];
    const assignments = ["updated_at = $1"];
    for (const [field, value] of Object.entries(changes) as [keyof UserChanges, unknown][]) {
      if (value === undefined) continue;
      values.push(field === "email" ? normalizeEmail(value as string) : value);
      assignments.push(`${COLUMN_OF[field]} = $${values.length}`);
    }
    if (endSessions || changes.email !== undefined) {
      values.push(newCredentialStamp());
      assignments.push(`credential_stamp = $${values.length}`);
    }
    if (endSessions) assignments.push("credentials_changed_at = $1");
    values.push(id);
    const sql = `UPDATE users SET ${assignments.join(", ")} WHERE id = $${values.length} RETURNING *`;
    const canRemoveAnAdmin = changes.isAdmin === false || changes.isActive === false;
    return this.#writeUser(id, canRemoveAnAdmin, async (client) => {
      const updated = toRecord((await client.query<UserRow>(sql, values)).rows[0]);
      if (updated === undefined) return undefined;
      if (endSessions) {
        await client.query("UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", [now, id]);
        // A pending second-factor challenge proved the old password: it ends with the sessions.
        await client.query("DELETE FROM mfa_challenges WHERE user_id = $1", [id]);
      }
      await this.#record(client, events, id);
      return updated;
    });
  }

  async remove(id: string, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<boolean> {
    return this.#writeUser(id, true, async (client) => {
      const removed = ((await client.query("DELETE FROM users WHERE id = $1", [id])).rowCount ?? 0) > 0;
      if (removed) await this.#record(client, events, id);
      return removed;
    });
  }

  async createSession(
    session: NewSession,
    { maxPerUser, events = [] }: { maxPerUser: number; events?: readonly AuditEntry[] },
  ): Promise<SessionRecord> {
    const now = new Date(this.#clock());
    return this.#transaction(async (client) => {
      // One login of a user at a time past this point, so that two cannot both stay under the cap.
      await client.query("SELECT 1 FROM users WHERE id = $1 FOR UPDATE", [session.userId]);
      const { rows } = await client.query<SessionRow>({
        name: "sessions_insert",
        text: `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent,
                                     refresh_token_hash, refresh_generation, refresh_expires_at, amr)
               VALUES ($1, $2, $3, $3, $4, $5, $6, $7, 0, $8, $9) RETURNING *`,
        values: [
          session.id,
          session.userId,
          now,
          session.expiresAt,
          session.clientAddress,
          session.userAgent,
          session.tokenHash,
          session.tokenExpiresAt,
          JSON.stringify(session.amr ?? ["pwd"]),
        ],
      });
      await this.#record(client, events, session.userId);
      const pastCap = await client.query<{ id: string }>({
        name: "sessions_past_cap",
        text: REVOKE_SESSIONS_PAST_CAP,
        values: [session.userId, now, maxPerUser],
      });
      await this.#record(
        client,
        pastCap.rows.map(() => ({ type: "session_revocation", outcome: "session_limit", clientAddress: null })),
        session.userId,
      );
      return toSession(rows[0] as SessionRow);
    });
  }

  async rotateRefreshToken(
    presented: PresentedRefreshToken,
    successor: { tokenHash: string; expiresAt: string },
    now: string,
    client: { address: string | null; userAgent: string | null },
  ): Promise<Rotation> {
    if (!UUID.test(presented.sessionId)) return { outcome: "invalid" };
    return this.#transaction(async (db): Promise<Rotation> => {
      // FOR UPDATE: concurrent rotations of one session queue here, and only the first finds its generation current.
      const { rows } = await db.query<SessionRow>({
        name: "sessions_for_rotation",
        text: "SELECT * FROM sessions WHERE id = $1 FOR UPDATE",
        values: [presented.sessionId],
      });
      const row = rows[0];
      const at = new Date(now);
      if (!row || row.revoked_at !== null || row.expires_at <= at) return { outcome: "invalid" };
      const outcome = judgePresentedToken(
        {
          id: row.id,
          userId: row.user_id,
          generation: row.refresh_generation,
          tokenHash: row.refresh_token_hash,
          refreshExpiresAt: row.refresh_expires_at.toISOString(),
          rotatedAt: row.rotated_at?.toISOString() ?? null,
        },
        presented,
        at.toISOString(),
      );
      if (outcome !== "current") return outcome;
      const successorExpiry =
        new Date(successor.expiresAt) < row.expires_at ? new Date(successor.expiresAt) : row.expires_at;
      const updated = await db.query<SessionRow>({
        name: "sessions_rotate",
        text: `UPDATE sessions SET refresh_token_hash = $1, refresh_generation = refresh_generation + 1,
                 refresh_expires_at = $2, rotated_at = $3, last_used_at = $3, client_address = $4, user_agent = $5
               WHERE id = $6 RETURNING *`,
        values: [successor.tokenHash, successorExpiry, at, client.address, client.userAgent, row.id],
      });
      const owner = await db.query<UserRow>({
        name: "users_by_id",
        text: "SELECT * FROM users WHERE id = $1",
        values: [row.user_id],
      });
      return {
        outcome: "rotated",
        session: toSession(updated.rows[0] as SessionRow),
        user: toRecord(owner.rows[0]) as UserRecord,
      };
    });
  }

  async findSession(id: string): Promise<SessionRecord | undefined> {
    if (!UUID.test(id)) return undefined;
    return guard(async () => {
      const { rows } = await this.#pool.query<SessionRow>("SELECT * FROM sessions WHERE id = $1", [id]);
      return rows[0] && toSession(rows[0]);
    });
  }

  async listSessions(userId: string, now: string, { limit, before }: SessionPage): Promise<SessionRecord[]> {
    return guard(async () => {
      const { rows } = await this.#pool.query<SessionRow>(
        `SELECT * FROM sessions
         WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
           ${before ? "AND id < $4" : ""}
         ORDER BY id DESC LIMIT $3`,
        [userId, now, limit, ...(before ? [before] : [])],
      );
      return rows.map(toSession);
    });
  }

  async revokeSession(id: string, now: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    if (!UUID.test(id)) return false;
    return this.#transaction(async (client) => {
      const { rows } = await client.query<{ user_id: string }>(
        "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING user_id",
        [now, id],
      );
      if (rows[0]) await this.#record(client, events, rows[0].user_id);
      return rows[0] !== undefined;
    });
  }

  async revokeSessionByToken(
    presented: PresentedRefreshToken,
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<string | undefined> {
    if (!UUID.test(presented.sessionId)) return undefined;
    return this.#transaction(async (client) => {
      const { rows } = await client.query<{ user_id: string }>(
        `UPDATE sessions SET revoked_at = $1
         WHERE id = $2 AND refresh_generation = $3 AND refresh_token_hash = $4 AND revoked_at IS NULL
         RETURNING user_id`,
        [now, presented.sessionId, presented.generation, presented.tokenHash],
      );
      if (rows[0]) await this.#record(client, events, rows[0].user_id);
      return rows[0]?.user_id;
    });
  }

  async purgeExpired(now: string, limit: number): Promise<number> {
    return guard(async () => {
      const sessions = await this.#pool.query(
        `DELETE FROM sessions WHERE id IN (
           SELECT id FROM sessions WHERE expires_at <= $1 OR refresh_expires_at <= $1 OR revoked_at <= $1 LIMIT $2)`,
        [now, limit],
      );
      const challenges = await this.#pool.query(
        `DELETE FROM mfa_challenges WHERE token_hash IN (
           SELECT token_hash FROM mfa_challenges WHERE expires_at <= $1 LIMIT $2)`,
        [now, limit],
      );
      const ceremonies = await this.#pool.query(
        "DELETE FROM webauthn_challenges WHERE id IN (SELECT id FROM webauthn_challenges WHERE expires_at <= $1 LIMIT $2)",
        [now, limit],
      );
      return (sessions.rowCount ?? 0) + (challenges.rowCount ?? 0) + (ceremonies.rowCount ?? 0);
    });
  }

  async secondFactorsOf(userId: string): Promise<SecondFactors> {
    return guard(async () => {
      const { rows } = await this.#pool.query<{ totp: boolean; codes: string }>({
        name: "second_factors_of",
        text: `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL) AS totp,
                      (SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL) AS codes,
                      (SELECT count(*) FROM webauthn_credentials WHERE user_id = $1) AS passkeys`,
        values: [userId],
      });
      const row = rows[0] as { totp: boolean; codes: string; passkeys: string };
      return { totp: row.totp, recoveryCodesRemaining: Number(row.codes), passkeys: Number(row.passkeys) };
    });
  }

  async findTotp(userId: string): Promise<TotpFactor | undefined> {
    return guard(async () => {
      const { rows } = await this.#pool.query<TotpRow>("SELECT * FROM totp_factors WHERE user_id = $1", [userId]);
      return rows[0] && toTotp(rows[0]);
    });
  }

  async startTotp(userId: string, sealedSecret: string): Promise<boolean> {
    return guard(async () => {
      const { rowCount } = await this.#pool.query(
        `INSERT INTO totp_factors (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at,
           last_step = NULL
         WHERE totp_factors.confirmed_at IS NULL`,
        [userId, sealedSecret, new Date(this.#clock())],
      );
      return (rowCount ?? 0) > 0;
    });
  }

  async confirmTotp(
    userId: string,
    step: number,
    recoveryCodeHashes: readonly string[] | undefined,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    const now = new Date(this.#clock());
    return this.#transaction(async (client) => {
      const { rowCount } = await client.query(
        `UPDATE totp_factors SET confirmed_at = $1, last_step = $2
         WHERE user_id = $3 AND confirmed_at IS NULL AND (last_step IS NULL OR last_step < $2)`,
        [now, step, userId],
      );
      if ((rowCount ?? 0) === 0) return false;
      if (recoveryCodeHashes !== undefined) await replaceCodes(client, userId, recoveryCodeHashes, now);
      await this.#record(client, events, userId);
      return true;
    });
  }

  async acceptTotpStep(userId: string, step: number, events: readonly AuditEntry[] = []): Promise<boolean> {
    return this.#transaction(async (client) => {
      const { rowCount } = await client.query(
        `UPDATE totp_factors SET last_step = $1
         WHERE user_id = $2 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $1)`,
        [step, userId],
      );
      if ((rowCount ?? 0) === 0) return false;
      await this.#record(client, events, userId);
      return true;
    });
  }

  async removeTotp(
    userId: string,
    { dropRecoveryCodes, events = [] }: { dropRecoveryCodes: boolean; events?: readonly AuditEntry[] },
  ): Promise<boolean> {
    return this.#transaction(async (client) => {
      const { rowCount } = await client.query("DELETE FROM totp_factors WHERE user_id = $1", [userId]);
      if ((rowCount ?? 0) === 0) return false;
      if (dropRecoveryCodes) await client.query("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
      await this.#record(client, events, userId);
      return true;
    });
  }

  async replaceRecoveryCodes(
    userId: string,
    codeHashes: readonly string[],
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = new Date(this.#clock());
    await this.#transaction(async (client) => {
      await replaceCodes(client, userId, codeHashes, now);
      await this.#record(client, events, userId);
    });
  }

  async useRecoveryCode(
    userId: string,
    candidateHashes: readonly string[],
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    if (candidateHashes.length === 0) return false;
    return this.#transaction(async (client) => {
      const { rowCount } = await client.query(
        `UPDATE recovery_codes SET used_at = $1
         WHERE user_id = $2 AND used_at IS NULL AND code_hash = ANY($3::text[])`,
        [now, userId, candidateHashes],
      );
      if ((rowCount ?? 0) === 0) return false;
      await this.#record(client, events, userId);
      return true;
    });
  }

  async resetSecondFactors(userId: string, events: readonly AuditEntry[] = []): Promise<void> {
    await this.#transaction(async (client) => {
      await client.query("DELETE FROM totp_factors WHERE user_id = $1", [userId]);
      await client.query("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
      await client.query("DELETE FROM webauthn_credentials WHERE user_id = $1", [userId]);
      await client.query("DELETE FROM webauthn_challenges WHERE user_id = $1", [userId]);
      await client.query("DELETE FROM mfa_challenges WHERE user_id = $1", [userId]);
      await this.#record(client, events, userId);
    });
  }

  async createMfaChallenge({
    tokenHash,
    userId,
    expiresAt,
  }: {
    tokenHash: string;
    userId: string;
    expiresAt: string;
  }): Promise<void> {
    await guard(() =>
      this.#pool.query(
        "INSERT INTO mfa_challenges (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        [tokenHash, userId, new Date(this.#clock()), expiresAt],
      ),
    );
  }

  async findMfaChallenge(tokenHash: string): Promise<MfaChallenge | undefined> {
    return guard(async () => {
      const { rows } = await this.#pool.query<MfaChallengeRow>("SELECT * FROM mfa_challenges WHERE token_hash = $1", [
        tokenHash,
      ]);
      return rows[0] && toChallenge(rows[0]);
    });
  }

  async failMfaChallenge(tokenHash: string, maxFailures: number, now: string): Promise<number> {
    return guard(async () => {
      const { rows } = await this.#pool.query<{ failures: number }>(
        `UPDATE mfa_challenges SET failures = failures + 1,
           spent_at = CASE WHEN failures + 1 >= $1 THEN $2::timestamptz ELSE spent_at END
         WHERE token_hash = $3 AND spent_at IS NULL RETURNING failures`,
        [maxFailures, now, tokenHash],
      );
      return rows[0] ? rows[0].failures : maxFailures;
    });
  }

  async spendMfaChallenge(tokenHash: string, now: string): Promise<string | undefined> {
    return guard(async () => {
      const { rows } = await this.#pool.query<{ user_id: string }>(
        `UPDATE mfa_challenges SET spent_at = $1
         WHERE token_hash = $2 AND spent_at IS NULL AND expires_at > $1 RETURNING user_id`,
        [now, tokenHash],
      );
      return rows[0]?.user_id;
    });
  }

  async listTotpSecrets(): Promise<{ userId: string; sealedSecret: string }[]> {
    return guard(async () => {
      const { rows } = await this.#pool.query<{ user_id: string; sealed_secret: string }>(
        "SELECT user_id, sealed_secret FROM totp_factors ORDER BY user_id",
      );
      return rows.map((row) => ({ userId: row.user_id, sealedSecret: row.sealed_secret }));
    });
  }

  async replaceTotpSecret(userId: string, previous: string, next: string): Promise<boolean> {
    return guard(async () => {
      const { rowCount } = await this.#pool.query(
        "UPDATE totp_factors SET sealed_secret = $1 WHERE user_id = $2 AND sealed_secret = $3",
        [next, userId, previous],
      );
      return (rowCount ?? 0) > 0;
    });
  }

  async addPasskey(
    passkey: NewPasskey,
    events: readonly AuditEntry[] = [],
    recoveryCodeHashes?: readonly string[],
  ): Promise<PasskeyRecord | undefined> {
    const now = this.#clock();
    return this.#transaction(async (client) => {
      const { rows } = await client.query<PasskeyRow>(
        `INSERT INTO webauthn_credentials (id, user_id, credential_id, public_key, counter, transports, name,
                                           device_type, backed_up, aaguid, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (credential_id) DO NOTHING RETURNING *`,
        [
          newId(now),
          passkey.userId,
          passkey.credentialId,
          passkey.publicKey,
          passkey.counter,
          JSON.stringify(passkey.transports),
          passkey.name,
          passkey.deviceType,
          passkey.backedUp,
          passkey.aaguid,
          new Date(now),
        ],
      );
      if (rows[0] === undefined) return undefined;
      if (recoveryCodeHashes !== undefined)
        await replaceCodes(client, passkey.userId, recoveryCodeHashes, new Date(now));
      await this.#record(client, events, passkey.userId);
      return toPasskey(rows[0]);
    });
  }

  async listPasskeys(userId: string): Promise<PasskeyRecord[]> {
    if (!UUID.test(userId)) return [];
    return guard(async () => {
      const { rows } = await this.#pool.query<PasskeyRow>(
        "SELECT * FROM webauthn_credentials WHERE user_id = $1 ORDER BY id",
        [userId],
      );
      return rows.map(toPasskey);
    });
  }

  async countPasskeys(userId: string): Promise<number> {
    if (!UUID.test(userId)) return 0;
    return guard(async () => {
      const { rows } = await this.#pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = $1",
        [userId],
      );
      return Number(rows[0]?.n ?? 0);
    });
  }

  async findPasskeyByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined> {
    if (credentialId.includes("\0")) return undefined;
    return guard(async () => {
      const { rows } = await this.#pool.query<PasskeyRow>(
        "SELECT * FROM webauthn_credentials WHERE credential_id = $1",
        [credentialId],
      );
      return rows[0] && toPasskey(rows[0]);
    });
  }

  async renamePasskey(
    userId: string,
    id: string,
    name: string,
    events: readonly AuditEntry[] = [],
  ): Promise<PasskeyRecord | undefined> {
    if (!UUID.test(id) || !UUID.test(userId)) return undefined;
    return this.#transaction(async (client) => {
      const { rows } = await client.query<PasskeyRow>(
        "UPDATE webauthn_credentials SET name = $1 WHERE id = $2 AND user_id = $3 RETURNING *",
        [name, id, userId],
      );
      if (rows[0] === undefined) return undefined;
      await this.#record(client, events, userId);
      return toPasskey(rows[0]);
    });
  }

  async removePasskey(userId: string, id: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    if (!UUID.test(id) || !UUID.test(userId)) return false;
    return this.#transaction(async (client) => {
      const { rowCount } = await client.query("DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2", [
        id,
        userId,
      ]);
      if (!rowCount) return false;
      await this.#record(client, events, userId);
      return true;
    });
  }

  async recordPasskeyUse(
    id: string,
    use: { previousCounter: number; counter: number; backedUp: boolean; at: string },
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    if (!UUID.test(id)) return false;
    return this.#transaction(async (client) => {
      const { rows } = await client.query<{ user_id: string }>(
        `UPDATE webauthn_credentials SET counter = $1, backed_up = $2, last_used_at = $3
         WHERE id = $4 AND counter = $5 RETURNING user_id`,
        [use.counter, use.backedUp, use.at, id, use.previousCounter],
      );
      if (rows[0] === undefined) return false;
      await this.#record(client, events, rows[0].user_id);
      return true;
    });
  }

  async saveWebAuthnChallenge(challenge: Omit<WebAuthnChallengeRecord, "createdAt">): Promise<void> {
    await guard(() =>
      this.#pool.query(
        "INSERT INTO webauthn_challenges (id, challenge_hash, purpose, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        [
          challenge.id,
          challenge.challengeHash,
          challenge.purpose,
          challenge.userId,
          new Date(this.#clock()),
          challenge.expiresAt,
        ],
      ),
    );
  }

  async takeWebAuthnChallenge(
    key: { id: string } | { challengeHash: string },
    purpose: WebAuthnPurpose,
    now: string,
  ): Promise<WebAuthnChallengeRecord | undefined> {
    if ("id" in key && !UUID.test(key.id)) return undefined;
    // One statement: of several concurrent takers, only the one whose DELETE removed the row gets it.
    const [column, value] = "id" in key ? ["id", key.id] : ["challenge_hash", key.challengeHash];
    if (value.includes("\0")) return undefined;
    return guard(async () => {
      const { rows } = await this.#pool.query<WebAuthnChallengeRow>(
        `DELETE FROM webauthn_challenges WHERE ${column} = $1 RETURNING *`,
        [value],
      );
      const row = rows[0];
      if (!row || row.purpose !== purpose || row.expires_at <= new Date(now)) return undefined;
      return toWebAuthnChallenge(row);
    });
  }

  async recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void> {
    await guard(() => this.#record(this.#pool, [event], event.userId));
  }

  async listEvents({ userId, limit, after, type, from, to }: AuditQuery): Promise<AuditEvent[]> {
    const values: unknown[] = [userId];
    const where = ["user_id = $1"];
    const filter = (column: string, value: unknown) => {
      values.push(value);
      where.push(`${column} $${values.length}`);
    };
    if (after !== undefined) filter("id >", after);
    if (type !== undefined) filter("type =", type);
    if (from !== undefined) filter("created_at >=", from);
    if (to !== undefined) filter("created_at <=", to);
    values.push(limit);
    const sql = `SELECT * FROM audit_events WHERE ${where.join(" AND ")} ORDER BY id LIMIT $${values.length}`;
    return guard(async () => (await this.#pool.query<AuditRow>(sql, values)).rows.map(toEvent));
  }

  async pruneEvents(before: string, limit: number): Promise<number> {
    return guard(async () => {
      const result = await this.#pool.query(
        "DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE created_at < $1 LIMIT $2)",
        [before, limit],
      );
      return result.rowCount ?? 0;
    });
  }

  /** Inserts audit events; those without a user id are about `subject`. */
  async #record(client: pg.Pool | pg.PoolClient, events: readonly AuditEntry[], subject: string | null): Promise<void> {
    for (const event of events) {
      const now = this.#clock();
      await client.query({
        name: "audit_events_insert",
        text: "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        values: [
          newId(now),
          event.userId === undefined ? subject : event.userId,
          event.type,
          event.outcome,
          event.clientAddress,
          new Date(now),
        ],
      });
    }
  }

  async issueAccountToken(
    token: NewAccountToken,
    mail: NewOutboxMessage,
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = new Date(this.#clock());
    await this.#transaction(async (client) => {
      await client.query(
        "UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL",
        [now, token.userId, token.purpose],
      );
      await client.query(
        `INSERT INTO account_tokens (token_hash, user_id, purpose, email, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [token.tokenHash, token.userId, token.purpose, normalizeEmail(token.email), now, token.expiresAt],
      );
      await this.#insertMail(client, mail);
      await this.#record(client, events, token.userId);
    });
  }

  async findAccountToken(tokenHash: string): Promise<AccountTokenRecord | undefined> {
    return guard(async () => {
      const { rows } = await this.#pool.query<AccountTokenRow>("SELECT * FROM account_tokens WHERE token_hash = $1", [
        tokenHash,
      ]);
      return rows[0] && toAccountToken(rows[0]);
    });
  }

  async redeemAccountToken(tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption> {
    return this.#transaction((client) => redeem(client, tokenHash, purpose, new Date(now)));
  }

  async confirmEmail(
    tokenHash: string,
    now: string,
    notice: (previousEmail: string, user: UserRecord) => NewOutboxMessage,
    event: (emailChanged: boolean) => AuditEntry,
  ): Promise<Redemption> {
    const at = new Date(now);
    const redemption = await this.#transaction(async (client): Promise<Redemption> => {
      const redemption = await redeem(client, tokenHash, "email_verification", at);
      if (redemption.outcome !== "redeemed") return redemption;
      const previous = redemption.user;
      // A new address is a new credential stamp, as for any e-mail change.
      const stamp = previous.email === redemption.token.email ? previous.credentialStamp : newCredentialStamp();
      const { rows } = await client.query<UserRow>(
        "UPDATE users SET email = $1, email_verified_at = $2, updated_at = $2, credential_stamp = $3 WHERE id = $4 RETURNING *",
        [redemption.token.email, at, stamp, previous.id],
      );
      const user = toRecord(rows[0]) as UserRecord;
      if (previous.email !== user.email) await this.#insertMail(client, notice(previous.email, user));
      await this.#record(client, [event(previous.email !== user.email)], user.id);
      await client.query({
        name: "notify_user_change",
        text: `SELECT pg_notify('${USER_CHANGES_CHANNEL}', $1)`,
        values: [user.id],
      });
      return { ...redemption, user };
    });
    if (redemption.outcome === "redeemed") this.#changes.changed(redemption.user.id);
    return redemption;
  }

  async enqueueMail(mail: NewOutboxMessage): Promise<void> {
    await guard(() => this.#insertMail(this.#pool, mail));
  }

  async claimMail(owner: string, now: string, leaseUntil: string, limit: number): Promise<OutboxMessage[]> {
    return guard(async () => {
      // SKIP LOCKED: instances claiming at the same moment take different rows instead of waiting or doubling up.
      const { rows } = await this.#pool.query<OutboxRow>(
        `UPDATE mail_outbox SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= $3
                      AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_attempt_at, id LIMIT $4
                      FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [owner, leaseUntil, now, limit],
      );
      return rows.map(toOutbox);
    });
  }

  async completeMail(id: string, owner: string, outcome: DeliveryOutcome): Promise<void> {
    await guard(() => {
      if (outcome.status === "sent") {
        // The payload (a sealed link token) is no longer needed once the message is out.
        return this.#pool.query(
          `UPDATE mail_outbox SET status = 'sent', sent_at = $1, payload = '{}', lease_owner = NULL, lease_until = NULL,
           last_error = NULL WHERE id = $2 AND lease_owner = $3`,
          [outcome.at, id, owner],
        );
      }
      if (outcome.status === "pending") {
        return this.#pool.query(
          `UPDATE mail_outbox SET next_attempt_at = $1, last_error = $2, lease_owner = NULL, lease_until = NULL
           WHERE id = $3 AND lease_owner = $4`,
          [outcome.nextAttemptAt, outcome.error, id, owner],
        );
      }
      return this.#pool.query(
        `UPDATE mail_outbox SET status = 'failed', last_error = $1, lease_owner = NULL, lease_until = NULL
         WHERE id = $2 AND lease_owner = $3`,
        [outcome.error, id, owner],
      );
    });
  }

  async listMail({ status, limit }: { status?: MailStatus; limit: number }): Promise<OutboxMessage[]> {
    return guard(async () => {
      const { rows } =
        status === undefined
          ? await this.#pool.query<OutboxRow>("SELECT * FROM mail_outbox ORDER BY id DESC LIMIT $1", [limit])
          : await this.#pool.query<OutboxRow>("SELECT * FROM mail_outbox WHERE status = $1 ORDER BY id DESC LIMIT $2", [
              status,
              limit,
            ]);
      return rows.map(toOutbox);
    });
  }

  async retryFailedMail(id: string | undefined, now: string): Promise<number> {
    const sql = `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL
                 WHERE status = 'failed'${id === undefined ? "" : " AND id = $2"}`;
    return guard(async () => (await this.#pool.query(sql, id === undefined ? [now] : [now, id])).rowCount ?? 0);
  }

  async pruneAccountRecords(tokensBefore: string, sentBefore: string, limit: number): Promise<number> {
    return guard(async () => {
      const tokens = await this.#pool.query(
        "DELETE FROM account_tokens WHERE token_hash IN (SELECT token_hash FROM account_tokens WHERE expires_at < $1 LIMIT $2)",
        [tokensBefore, limit],
      );
      const mail = await this.#pool.query(
        "DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'sent' AND sent_at < $1 LIMIT $2)",
        [sentBefore, limit],
      );
      return (tokens.rowCount ?? 0) + (mail.rowCount ?? 0);
    });
  }

  async ping(): Promise<void> {
    await guard(() => this.#pool.query("SELECT 1"));
  }

  async #insertMail(client: pg.Pool | pg.PoolClient, mail: NewOutboxMessage): Promise<void> {
    const now = this.#clock();
    const id = newId(now);
    await client.query(
      `INSERT INTO mail_outbox (id, kind, recipient, user_id, payload, message_id, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [id, mail.kind, mail.recipient, mail.userId, mail.payload, `<${id}@${mail.messageDomain}>`, new Date(now)],
    );
  }

  /** Runs work in one transaction on one connection; a failed connection is destroyed, not pooled. */
  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return guard(async () => {
      const client = await this.#pool.connect();
      let broken = false;
      try {
        await client.query("BEGIN");
        const result = await work(client);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        broken = !(error instanceof HttpError) && isUnavailable(error);
        if (!broken) await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        client.release(broken);
      }
    });
  }

  async close(): Promise<void> {
    await this.userChanges.close();
    if (!this.#pool.ended) await this.#pool.end();
  }

  /**
   * A write to one user: it notifies every instance inside its transaction (delivered only if it
   * commits), and this instance's listeners right after the commit, before the caller answers.
   */
  async #writeUser<T>(
    userId: string,
    canRemoveAnAdmin: boolean,
    write: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    const result = await this.#write(canRemoveAnAdmin, async (client) => {
      const written = await write(client);
      await client.query({
        name: "notify_user_change",
        text: `SELECT pg_notify('${USER_CHANGES_CHANNEL}', $1)`,
        values: [userId],
      });
      return written;
    });
    this.#changes.changed(userId);
    return result;
  }

  /** Runs a write in a transaction; when it may remove an admin, under the admin lock and with the check. */
  async #write<T>(canRemoveAnAdmin: boolean, write: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.#transaction(async (client) => {
      if (!canRemoveAnAdmin) return write(client);
      await client.query("SELECT pg_advisory_xact_lock($1)", [ADMIN_LOCK]);
      const before = await countActiveAdmins(client);
      const result = await write(client);
      if (before > 0 && (await countActiveAdmins(client)) === 0) throw new LastActiveAdmin();
      return result;
    });
  }
}

/** Inside a transaction: the user's recovery codes become exactly these. */
async function replaceCodes(
  client: pg.PoolClient,
  userId: string,
  codeHashes: readonly string[],
  now: Date,
): Promise<void> {
  await client.query("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
  if (codeHashes.length === 0) return;
  await client.query(
    "INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT $1, hash, $3 FROM unnest($2::text[]) AS hash",
    [userId, codeHashes, now],
  );
}

/** Inside a transaction: spends a live token and its siblings, or says why it cannot. */
async function redeem(
  client: pg.PoolClient,
  tokenHash: string,
  purpose: AccountTokenPurpose,
  now: Date,
): Promise<Redemption> {
  // FOR UPDATE: concurrent redemptions of one token queue here, and only the first finds it unspent.
  const { rows } = await client.query<AccountTokenRow>(
    "SELECT * FROM account_tokens WHERE token_hash = $1 AND purpose = $2 FOR UPDATE",
    [tokenHash, purpose],
  );
  const row = rows[0];
  if (!row) return { outcome: "invalid" };
  if (row.spent_at !== null) return { outcome: "spent" };
  if (row.expires_at <= now) return { outcome: "expired" };
  const users = await client.query<UserRow>("SELECT * FROM users WHERE id = $1", [row.user_id]);
  const user = toRecord(users.rows[0]);
  if (!user) return { outcome: "invalid" };
  await client.query(
    "UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL",
    [now, row.user_id, purpose],
  );
  return { outcome: "redeemed", token: toAccountToken(row), user };
}

async function countActiveAdmins(client: pg.Pool | pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM users WHERE is_admin AND is_active");
  return Number(rows[0]?.n ?? 0);
}

function toRecord(row: UserRow | undefined): UserRecord | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    email: row.email,
    hashedPassword: row.hashed_password,
    fullName: row.full_name,
    isActive: row.is_active,
    isAdmin: row.is_admin,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    credentialsChangedAt: row.credentials_changed_at?.toISOString() ?? null,
    credentialStamp: row.credential_stamp,
    emailVerifiedAt: row.email_verified_at?.toISOString() ?? null,
  };
}

interface PasskeyRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: string;
  counter: string | number;
  transports: string;
  name: string;
  device_type: string;
  backed_up: boolean;
  aaguid: string | null;
  created_at: Date;
  last_used_at: Date | null;
}

function toPasskey(row: PasskeyRow): PasskeyRecord {
  return {
    id: row.id,
    userId: row.user_id,
    credentialId: row.credential_id,
    publicKey: row.public_key,
    // bigint arrives as a string; counters are 32-bit, so a number holds them exactly.
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    deviceType: row.device_type,
    backedUp: row.backed_up,
    aaguid: row.aaguid,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

interface WebAuthnChallengeRow {
  id: string;
  challenge_hash: string;
  purpose: string;
  user_id: string | null;
  created_at: Date;
  expires_at: Date;
}

function toWebAuthnChallenge(row: WebAuthnChallengeRow): WebAuthnChallengeRecord {
  return {
    id: row.id,
    challengeHash: row.challenge_hash,
    purpose: row.purpose as WebAuthnPurpose,
    userId: row.user_id,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
  };
}

interface AccountTokenRow {
  token_hash: string;
  user_id: string;
  purpose: string;
  email: string;
  created_at: Date;
  expires_at: Date;
  spent_at: Date | null;
}

function toAccountToken(row: AccountTokenRow): AccountTokenRecord {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    purpose: row.purpose as AccountTokenPurpose,
    email: row.email,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    spentAt: row.spent_at?.toISOString() ?? null,
  };
}

interface OutboxRow {
  id: string;
  kind: string;
  recipient: string;
  user_id: string | null;
  payload: string;
  message_id: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  created_at: Date;
  sent_at: Date | null;
}

function toOutbox(row: OutboxRow): OutboxMessage {
  return {
    id: row.id,
    kind: row.kind as OutboxMessage["kind"],
    recipient: row.recipient,
    userId: row.user_id,
    payload: row.payload,
    messageId: row.message_id,
    status: row.status as MailStatus,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at.toISOString(),
    lastError: row.last_error,
    createdAt: row.created_at.toISOString(),
    sentAt: row.sent_at?.toISOString() ?? null,
  };
}

interface AuditRow {
  id: string;
  user_id: string | null;
  type: string;
  outcome: string;
  client_address: string | null;
  created_at: Date;
}

function toEvent(row: AuditRow): AuditEvent {
  return {
    id: row.id,
    userId: row.user_id,
    type: row.type as AuditEvent["type"],
    outcome: row.outcome,
    clientAddress: row.client_address,
    createdAt: row.created_at.toISOString(),
  };
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
    clientAddress: row.client_address,
    userAgent: row.user_agent,
    amr: parseAmr(row.amr),
  };
}

interface TotpRow {
  user_id: string;
  sealed_secret: string;
  created_at: Date;
  confirmed_at: Date | null;
  last_step: number | null;
}

function toTotp(row: TotpRow): TotpFactor {
  return {
    userId: row.user_id,
    sealedSecret: row.sealed_secret,
    createdAt: row.created_at.toISOString(),
    confirmedAt: row.confirmed_at?.toISOString() ?? null,
    lastStep: row.last_step,
  };
}

interface MfaChallengeRow {
  token_hash: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
  spent_at: Date | null;
  failures: number;
}

function toChallenge(row: MfaChallengeRow): MfaChallenge {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    spentAt: row.spent_at?.toISOString() ?? null,
    failures: row.failures,
  };
}
