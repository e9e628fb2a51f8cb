// The UserStore over either database: each verb, with its transaction, is
// written once here against a Db (db.ts), whose dialect holds the few
// fragments that differ. Every verb applies normalizeEmail, keeps the one
// invariant that needs a transaction (a change never removes the last
// active admin: LastActiveAdmin), and writes more than one row only inside
// one transaction (see store.ts). Ids that cannot be UUIDs, and text with a
// NUL byte, name nothing: they are answered without a query, because
// PostgreSQL refuses them in a uuid or text column.
import { LastActiveAdmin } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { ChangeListeners } from "./change-feed.ts";
import { type Db, type Dialect, type Param, prepared, type Queryable, type Sql } from "./db.ts";
import { newCredentialStamp, newId } from "./ids.ts";
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
  UserChangeFeed,
  UserChanges,
  UserQuery,
  UserRecord,
  UserStore,
  WebAuthnChallengeRecord,
  WebAuthnPurpose,
  WriteOptions,
} from "./store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (...ids: string[]) => ids.every((id) => UUID.test(id));

const USER_BY_EMAIL = prepared("users_by_email", "SELECT * FROM users WHERE email = $1");
const USER_BY_ID = prepared("users_by_id", "SELECT * FROM users WHERE id = $1");
const INSERT_USER = prepared(
  "users_insert",
  `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at,
                     credential_stamp, email_verified_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9) RETURNING *`,
);
const INSERT_SESSION = prepared(
  "sessions_insert",
  `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent,
                         refresh_token_hash, refresh_generation, refresh_expires_at, amr)
   VALUES ($1, $2, $3, $3, $4, $5, $6, $7, 0, $8, $9)`,
);
const ROTATE = prepared(
  "sessions_rotate",
  `UPDATE sessions SET refresh_token_hash = $1, refresh_generation = refresh_generation + 1,
     refresh_expires_at = $2, rotated_at = $3, last_used_at = $3, client_address = $4, user_agent = $5
   WHERE id = $6 RETURNING *`,
);
const SECOND_FACTORS_OF = prepared(
  "second_factors_of",
  `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL) AS totp,
          (SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL) AS codes,
          (SELECT count(*) FROM webauthn_credentials WHERE user_id = $1) AS passkeys`,
);
const INSERT_EVENT = prepared(
  "audit_events_insert",
  "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
);

/**
 * Ends the live sessions beyond the newest `cap` ($1 user, $2 now, $3 cap) when a login starts one
 * more. Runs on every login, through the index of live sessions (migration 8), so its cost does not
 * grow with the revoked sessions the user has (test/session-index.test.ts).
 */
export const revokeSessionsPastCap = (d: Dialect) =>
  prepared(
    "sessions_past_cap",
    `UPDATE sessions SET revoked_at = $2 WHERE id IN (
       SELECT id FROM sessions
       WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
       ORDER BY id DESC ${d.noLimit} OFFSET $3)
     RETURNING id`,
  );

/**
 * Housekeeping's delete of sessions past any of their three ends ($1 now, $2 limit). The OR reads
 * the table whichever single column is indexed (test/session-index.test.ts), which is why migration
 * 9 dropped the index of expires_at that every login wrote.
 */
export const PURGE_SESSIONS = `DELETE FROM sessions WHERE id IN (
   SELECT id FROM sessions WHERE expires_at <= $1 OR refresh_expires_at <= $1 OR revoked_at <= $1 LIMIT $2)`;

/** What resetSecondFactors deletes: every second factor of a user, and its pending challenges. */
const SECOND_FACTOR_TABLES = [
  "totp_factors",
  "recovery_codes",
  "webauthn_credentials",
  "webauthn_challenges",
  "mfa_challenges",
];

const COLUMN_OF: Record<keyof UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  emailVerifiedAt: "email_verified_at",
};

/** Conditions whose value is undefined are left out; the parameters are numbered from 1. */
function where(conditions: [clause: string, value: Param | undefined][]): { sql: string; params: Param[] } {
  const params: Param[] = [];
  const clauses: string[] = [];
  for (const [clause, value] of conditions) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`${clause} $${params.length}`);
  }
  return { sql: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

export class SqlUserStore implements UserStore {
  readonly userChanges: UserChangeFeed;
  readonly #changes = new ChangeListeners();
  readonly #db: Db;
  readonly #clock: () => number;
  readonly #sessionForRotation: Sql;
  readonly #revokeSessionsPastCap: Sql;

  /** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
  constructor(db: Db, clock: () => number) {
    this.#db = db;
    this.#clock = clock;
    this.userChanges = db.userChanges(this.#changes);
    this.#sessionForRotation = prepared(
      "sessions_for_rotation",
      `SELECT * FROM sessions WHERE id = $1${db.dialect.forUpdate}`,
    );
    this.#revokeSessionsPastCap = revokeSessionsPastCap(db.dialect);
  }

  #now(): string {
    return new Date(this.#clock()).toISOString();
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    if (email.includes("\0")) return undefined;
    return toUser(await this.#db.one<UserRow>(USER_BY_EMAIL, [normalizeEmail(email)]));
  }

  async findById(id: string): Promise<UserRecord | undefined> {
    return toUser(await this.#db.one<UserRow>(USER_BY_ID, [id]));
  }

  async list({ limit, after, email, isActive, isAdmin }: UserQuery): Promise<UserRecord[]> {
    const filter = where([
      ["id >", after],
      ["email =", email === undefined ? undefined : normalizeEmail(email)],
      ["is_active =", isActive],
      ["is_admin =", isAdmin],
    ]);
    const sql = `SELECT * FROM users ${filter.sql} ORDER BY id LIMIT $${filter.params.length + 1}`;
    return (await this.#db.all<UserRow>(sql, [...filter.params, limit])).map((row) => toUser(row) as UserRecord);
  }

  async countActiveAdmins(): Promise<number> {
    return countActiveAdmins(this.#db);
  }

  async create(user: NewUser, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<UserRecord> {
    const now = this.#clock();
    return this.#db.transaction(async (tx) => {
      const row = (await tx.one<UserRow>(INSERT_USER, [
        newId(now),
        normalizeEmail(user.email),
        user.hashedPassword,
        user.fullName ?? null,
        user.isActive !== false,
        user.isAdmin === true,
        new Date(now).toISOString(),
        newCredentialStamp(),
        user.emailVerifiedAt ?? null,
      ])) as UserRow;
      await this.#record(tx, events, row.id);
      return toUser(row) as UserRecord;
    });
  }

  async update(
    id: string,
    changes: UserChanges,
    { endSessions = false, events = [] }: WriteOptions = {},
  ): Promise<UserRecord | undefined> {
    const now = this.#now();
    const params: Param[] = [now];
    const assignments = ["updated_at = $1"];
    for (const [field, value] of Object.entries(changes) as [keyof UserChanges, Param | undefined][]) {
      if (value === undefined) continue;
      params.push(field === "email" ? normalizeEmail(value as string) : value);
      assignments.push(`${COLUMN_OF[field]} = $${params.length}`);
    }
    if (endSessions || changes.email !== undefined) {
      // Changing only when the e-mail really changes would need a read first; a new stamp is harmless.
      params.push(newCredentialStamp());
      assignments.push(`credential_stamp = $${params.length}`);
    }
    if (endSessions) assignments.push("credentials_changed_at = $1");
    params.push(id);
    const sql = `UPDATE users SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
    const canRemoveAnAdmin = changes.isAdmin === false || changes.isActive === false;
    return this.#writeUser(id, canRemoveAnAdmin, async (tx) => {
      const updated = toUser(await tx.one<UserRow>(sql, params));
      if (updated === undefined) return undefined;
      if (endSessions) {
        await tx.run("UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", [now, id]);
        // A pending second-factor challenge proved the old password: it ends with the sessions.
        await tx.run("DELETE FROM mfa_challenges WHERE user_id = $1", [id]);
      }
      await this.#record(tx, events, id);
      return updated;
    });
  }

  async remove(id: string, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<boolean> {
    return this.#writeUser(id, true, async (tx) => {
      const removed = (await tx.run("DELETE FROM users WHERE id = $1", [id])) > 0;
      if (removed) await this.#record(tx, events, id);
      return removed;
    });
  }

  async createSession(
    session: NewSession,
    { maxPerUser, events = [] }: { maxPerUser: number; events?: readonly AuditEntry[] },
  ): Promise<SessionRecord> {
    const now = this.#now();
    const amr = session.amr ?? ["pwd"];
    const d = this.#db.dialect;
    return this.#db.transaction(async (tx) => {
      // One login of a user at a time past this point, so that two cannot both stay under the cap.
      if (d.forUpdate) await tx.run(`SELECT 1 FROM users WHERE id = $1${d.forUpdate}`, [session.userId]);
      await tx.run(INSERT_SESSION, [
        session.id,
        session.userId,
        now,
        session.expiresAt,
        session.clientAddress,
        session.userAgent,
        session.tokenHash,
        session.tokenExpiresAt,
        JSON.stringify(amr),
      ]);
      await this.#record(tx, events, session.userId);
      const pastCap = await tx.all(this.#revokeSessionsPastCap, [session.userId, now, maxPerUser]);
      const ended = { type: "session_revocation", outcome: "session_limit", clientAddress: null } as const;
      await this.#record(
        tx,
        pastCap.map(() => ended),
        session.userId,
      );
      // Built from what was written rather than read back: a login is this store's hottest write.
      return {
        id: session.id,
        userId: session.userId,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: session.expiresAt,
        revokedAt: null,
        clientAddress: session.clientAddress,
        userAgent: session.userAgent,
        amr: [...amr],
      };
    });
  }

  async rotateRefreshToken(
    presented: PresentedRefreshToken,
    successor: { tokenHash: string; expiresAt: string },
    now: string,
    client: { address: string | null; userAgent: string | null },
  ): Promise<Rotation> {
    if (!isUuid(presented.sessionId)) return { outcome: "invalid" };
    return this.#db.transaction(async (tx): Promise<Rotation> => {
      // Concurrent rotations of one session queue here (FOR UPDATE, or SQLite's one writer), and
      // only the first finds its generation current.
      const row = await tx.one<SessionRow>(this.#sessionForRotation, [presented.sessionId]);
      if (!row || row.revoked_at !== null || row.expires_at <= now) return { outcome: "invalid" };
      const state = {
        id: row.id,
        userId: row.user_id,
        generation: row.refresh_generation,
        tokenHash: row.refresh_token_hash,
        refreshExpiresAt: row.refresh_expires_at,
        rotatedAt: row.rotated_at,
      };
      const outcome = judgePresentedToken(state, presented, now);
      if (outcome !== "current") return outcome;
      const expiresAt = successor.expiresAt < row.expires_at ? successor.expiresAt : row.expires_at;
      const updated = await tx.one<SessionRow>(ROTATE, [
        successor.tokenHash,
        expiresAt,
        now,
        client.address,
        client.userAgent,
        row.id,
      ]);
      const user = await tx.one<UserRow>(USER_BY_ID, [row.user_id]);
      return { outcome: "rotated", session: toSession(updated as SessionRow), user: toUser(user) as UserRecord };
    });
  }

  async findSession(id: string): Promise<SessionRecord | undefined> {
    if (!isUuid(id)) return undefined;
    const row = await this.#db.one<SessionRow>("SELECT * FROM sessions WHERE id = $1", [id]);
    return row && toSession(row);
  }

  async listSessions(userId: string, now: string, { limit, before }: SessionPage): Promise<SessionRecord[]> {
    const rows = await this.#db.all<SessionRow>(
      `SELECT * FROM sessions
       WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
         ${before ? "AND id < $4" : ""}
       ORDER BY id DESC LIMIT $3`,
      [userId, now, limit, ...(before ? [before] : [])],
    );
    return rows.map(toSession);
  }

  async revokeSession(id: string, now: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    if (!isUuid(id)) return false;
    return this.#db.transaction(async (tx) => {
      const revoked = await tx.one<{ user_id: string }>(
        "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING user_id",
        [now, id],
      );
      if (revoked) await this.#record(tx, events, revoked.user_id);
      return revoked !== undefined;
    });
  }

  async revokeSessionByToken(
    presented: PresentedRefreshToken,
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<string | undefined> {
    if (!isUuid(presented.sessionId)) return undefined;
    return this.#db.transaction(async (tx) => {
      const revoked = await tx.one<{ user_id: string }>(
        `UPDATE sessions SET revoked_at = $1
         WHERE id = $2 AND refresh_generation = $3 AND refresh_token_hash = $4 AND revoked_at IS NULL
         RETURNING user_id`,
        [now, presented.sessionId, presented.generation, presented.tokenHash],
      );
      if (revoked) await this.#record(tx, events, revoked.user_id);
      return revoked?.user_id;
    });
  }

  async purgeExpired(now: string, limit: number): Promise<number> {
    const sessions = await this.#db.run(PURGE_SESSIONS, [now, limit]);
    const challenges = await this.#db.run(
      `DELETE FROM mfa_challenges WHERE token_hash IN (
         SELECT token_hash FROM mfa_challenges WHERE expires_at <= $1 LIMIT $2)`,
      [now, limit],
    );
    const ceremonies = await this.#db.run(
      "DELETE FROM webauthn_challenges WHERE id IN (SELECT id FROM webauthn_challenges WHERE expires_at <= $1 LIMIT $2)",
      [now, limit],
    );
    return sessions + challenges + ceremonies;
  }

  async addPasskey(passkey: NewPasskey, events: readonly AuditEntry[] = []): Promise<PasskeyRecord | undefined> {
    const now = this.#clock();
    return this.#db.transaction(async (tx) => {
      const row = await tx.one<PasskeyRow>(
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
          new Date(now).toISOString(),
        ],
      );
      if (row === undefined) return undefined;
      await this.#record(tx, events, passkey.userId);
      return toPasskey(row);
    });
  }

  async listPasskeys(userId: string): Promise<PasskeyRecord[]> {
    if (!isUuid(userId)) return [];
    const rows = await this.#db.all<PasskeyRow>("SELECT * FROM webauthn_credentials WHERE user_id = $1 ORDER BY id", [
      userId,
    ]);
    return rows.map(toPasskey);
  }

  async countPasskeys(userId: string): Promise<number> {
    if (!isUuid(userId)) return 0;
    const row = await this.#db.one<{ n: number | string }>(
      "SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = $1",
      [userId],
    );
    return Number(row?.n ?? 0);
  }

  async findPasskeyByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined> {
    if (credentialId.includes("\0")) return undefined;
    const row = await this.#db.one<PasskeyRow>("SELECT * FROM webauthn_credentials WHERE credential_id = $1", [
      credentialId,
    ]);
    return row && toPasskey(row);
  }

  async renamePasskey(
    userId: string,
    id: string,
    name: string,
    events: readonly AuditEntry[] = [],
  ): Promise<PasskeyRecord | undefined> {
    if (!isUuid(id, userId)) return undefined;
    return this.#db.transaction(async (tx) => {
      const row = await tx.one<PasskeyRow>(
        "UPDATE webauthn_credentials SET name = $1 WHERE id = $2 AND user_id = $3 RETURNING *",
        [name, id, userId],
      );
      if (row === undefined) return undefined;
      await this.#record(tx, events, userId);
      return toPasskey(row);
    });
  }

  async removePasskey(userId: string, id: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    if (!isUuid(id, userId)) return false;
    return this.#db.transaction(async (tx) => {
      const removed = await tx.run("DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2", [id, userId]);
      if (removed === 0) return false;
      await this.#record(tx, events, userId);
      return true;
    });
  }

  async recordPasskeyUse(
    id: string,
    use: { previousCounter: number; counter: number; backedUp: boolean; at: string },
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    if (!isUuid(id)) return false;
    return this.#db.transaction(async (tx) => {
      const row = await tx.one<{ user_id: string }>(
        `UPDATE webauthn_credentials SET counter = $1, backed_up = $2, last_used_at = $3
         WHERE id = $4 AND counter = $5 RETURNING user_id`,
        [use.counter, use.backedUp, use.at, id, use.previousCounter],
      );
      if (row === undefined) return false;
      await this.#record(tx, events, row.user_id);
      return true;
    });
  }

  async saveWebAuthnChallenge(challenge: Omit<WebAuthnChallengeRecord, "createdAt">): Promise<void> {
    await this.#db.run(
      `INSERT INTO webauthn_challenges (id, challenge_hash, purpose, user_id, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [challenge.id, challenge.challengeHash, challenge.purpose, challenge.userId, this.#now(), challenge.expiresAt],
    );
  }

  async takeWebAuthnChallenge(
    key: { id: string } | { challengeHash: string },
    purpose: WebAuthnPurpose,
    now: string,
  ): Promise<WebAuthnChallengeRecord | undefined> {
    if ("id" in key && !isUuid(key.id)) return undefined;
    const [column, value] = "id" in key ? ["id", key.id] : ["challenge_hash", key.challengeHash];
    if (value.includes("\0")) return undefined;
    // One statement: of several concurrent takers, only the one whose DELETE removed the row gets it.
    const row = await this.#db.one<WebAuthnChallengeRow>(
      `DELETE FROM webauthn_challenges WHERE ${column} = $1 RETURNING *`,
      [value],
    );
    if (!row || row.purpose !== purpose || row.expires_at <= now) return undefined;
    return {
      id: row.id,
      challengeHash: row.challenge_hash,
      purpose: row.purpose as WebAuthnPurpose,
      userId: row.user_id,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    };
  }

  async secondFactorsOf(userId: string): Promise<SecondFactors> {
    const row = (await this.#db.one<{ totp: Flag; codes: Count; passkeys: Count }>(SECOND_FACTORS_OF, [userId])) as {
      totp: Flag;
      codes: Count;
      passkeys: Count;
    };
    return { totp: Boolean(row.totp), recoveryCodesRemaining: Number(row.codes), passkeys: Number(row.passkeys) };
  }

  async findTotp(userId: string): Promise<TotpFactor | undefined> {
    const row = await this.#db.one<TotpRow>("SELECT * FROM totp_factors WHERE user_id = $1", [userId]);
    return (
      row && {
        userId: row.user_id,
        sealedSecret: row.sealed_secret,
        createdAt: row.created_at,
        confirmedAt: row.confirmed_at,
        lastStep: row.last_step === null ? null : Number(row.last_step),
      }
    );
  }

  async startTotp(userId: string, sealedSecret: string): Promise<boolean> {
    const written = await this.#db.run(
      `INSERT INTO totp_factors (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at,
         last_step = NULL
       WHERE totp_factors.confirmed_at IS NULL`,
      [userId, sealedSecret, this.#now()],
    );
    return written > 0;
  }

  async confirmTotp(
    userId: string,
    step: number,
    recoveryCodeHashes: readonly string[] | undefined,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    const now = this.#now();
    return this.#db.transaction(async (tx) => {
      const confirmed = await tx.run(
        `UPDATE totp_factors SET confirmed_at = $1, last_step = $2
         WHERE user_id = $3 AND confirmed_at IS NULL AND (last_step IS NULL OR last_step < $2)`,
        [now, step, userId],
      );
      if (confirmed === 0) return false;
      if (recoveryCodeHashes !== undefined) await this.#replaceCodes(tx, userId, recoveryCodeHashes, now);
      await this.#record(tx, events, userId);
      return true;
    });
  }

  async acceptTotpStep(userId: string, step: number, events: readonly AuditEntry[] = []): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const accepted = await tx.run(
        `UPDATE totp_factors SET last_step = $1
         WHERE user_id = $2 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $1)`,
        [step, userId],
      );
      if (accepted === 0) return false;
      await this.#record(tx, events, userId);
      return true;
    });
  }

  async removeTotp(
    userId: string,
    { dropRecoveryCodes, events = [] }: { dropRecoveryCodes: boolean; events?: readonly AuditEntry[] },
  ): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      if ((await tx.run("DELETE FROM totp_factors WHERE user_id = $1", [userId])) === 0) return false;
      if (dropRecoveryCodes) await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
      await this.#record(tx, events, userId);
      return true;
    });
  }

  async replaceRecoveryCodes(
    userId: string,
    codeHashes: readonly string[],
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = this.#now();
    await this.#db.transaction(async (tx) => {
      await this.#replaceCodes(tx, userId, codeHashes, now);
      await this.#record(tx, events, userId);
    });
  }

  async useRecoveryCode(
    userId: string,
    candidateHashes: readonly string[],
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    if (candidateHashes.length === 0) return false;
    const d = this.#db.dialect;
    return this.#db.transaction(async (tx) => {
      const used = await tx.run(
        `UPDATE recovery_codes SET used_at = $1
         WHERE user_id = $2 AND used_at IS NULL AND code_hash IN (SELECT value FROM ${d.elements("$3")})`,
        [now, userId, candidateHashes],
      );
      if (used === 0) return false;
      await this.#record(tx, events, userId);
      return true;
    });
  }

  async resetSecondFactors(userId: string, events: readonly AuditEntry[] = []): Promise<void> {
    await this.#db.transaction(async (tx) => {
      for (const table of SECOND_FACTOR_TABLES) await tx.run(`DELETE FROM ${table} WHERE user_id = $1`, [userId]);
      await this.#record(tx, events, userId);
    });
  }

  async createMfaChallenge(challenge: { tokenHash: string; userId: string; expiresAt: string }): Promise<void> {
    await this.#db.run(
      "INSERT INTO mfa_challenges (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
      [challenge.tokenHash, challenge.userId, this.#now(), challenge.expiresAt],
    );
  }

  async findMfaChallenge(tokenHash: string): Promise<MfaChallenge | undefined> {
    const row = await this.#db.one<MfaChallengeRow>("SELECT * FROM mfa_challenges WHERE token_hash = $1", [tokenHash]);
    return (
      row && {
        tokenHash: row.token_hash,
        userId: row.user_id,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        spentAt: row.spent_at,
        failures: Number(row.failures),
      }
    );
  }

  async failMfaChallenge(tokenHash: string, maxFailures: number, now: string): Promise<number> {
    const row = await this.#db.one<{ failures: number }>(
      `UPDATE mfa_challenges SET failures = failures + 1,
         spent_at = CASE WHEN failures + 1 >= $1 THEN $2 ELSE spent_at END
       WHERE token_hash = $3 AND spent_at IS NULL RETURNING failures`,
      [maxFailures, now, tokenHash],
    );
    return row ? Number(row.failures) : maxFailures;
  }

  async spendMfaChallenge(tokenHash: string, now: string): Promise<string | undefined> {
    const row = await this.#db.one<{ user_id: string }>(
      `UPDATE mfa_challenges SET spent_at = $1
       WHERE token_hash = $2 AND spent_at IS NULL AND expires_at > $1 RETURNING user_id`,
      [now, tokenHash],
    );
    return row?.user_id;
  }

  async listTotpSecrets(): Promise<{ userId: string; sealedSecret: string }[]> {
    const rows = await this.#db.all<{ user_id: string; sealed_secret: string }>(
      "SELECT user_id, sealed_secret FROM totp_factors ORDER BY user_id",
    );
    return rows.map((row) => ({ userId: row.user_id, sealedSecret: row.sealed_secret }));
  }

  async replaceTotpSecret(userId: string, previous: string, next: string): Promise<boolean> {
    const changed = await this.#db.run(
      "UPDATE totp_factors SET sealed_secret = $1 WHERE user_id = $2 AND sealed_secret = $3",
      [next, userId, previous],
    );
    return changed > 0;
  }

  async recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void> {
    await this.#record(this.#db, [event], event.userId);
  }

  async listEvents({ userId, limit, after, type, from, to }: AuditQuery): Promise<AuditEvent[]> {
    const filter = where([
      ["user_id =", userId],
      ["id >", after],
      ["type =", type],
      ["created_at >=", from],
      ["created_at <=", to],
    ]);
    const sql = `SELECT * FROM audit_events ${filter.sql} ORDER BY id LIMIT $${filter.params.length + 1}`;
    const rows = await this.#db.all<AuditRow>(sql, [...filter.params, limit]);
    return rows.map((row) => ({
      id: row.id,
      userId: row.user_id,
      type: row.type as AuditEvent["type"],
      outcome: row.outcome,
      clientAddress: row.client_address,
      createdAt: row.created_at,
    }));
  }

  async pruneEvents(before: string, limit: number): Promise<number> {
    return this.#db.run(
      "DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE created_at < $1 LIMIT $2)",
      [before, limit],
    );
  }

  async issueAccountToken(
    token: NewAccountToken,
    mail: NewOutboxMessage,
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = this.#now();
    await this.#db.transaction(async (tx) => {
      await tx.run("UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL", [
        now,
        token.userId,
        token.purpose,
      ]);
      await tx.run(
        `INSERT INTO account_tokens (token_hash, user_id, purpose, email, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [token.tokenHash, token.userId, token.purpose, normalizeEmail(token.email), now, token.expiresAt],
      );
      await this.#insertMail(tx, mail);
      await this.#record(tx, events, token.userId);
    });
  }

  async findAccountToken(tokenHash: string): Promise<AccountTokenRecord | undefined> {
    const row = await this.#db.one<AccountTokenRow>("SELECT * FROM account_tokens WHERE token_hash = $1", [tokenHash]);
    return row && toAccountToken(row);
  }

  async redeemAccountToken(tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption> {
    return this.#db.transaction((tx) => this.#redeem(tx, tokenHash, purpose, now));
  }

  async confirmEmail(
    tokenHash: string,
    now: string,
    notice: (previousEmail: string, user: UserRecord) => NewOutboxMessage,
    event: (emailChanged: boolean) => AuditEntry,
  ): Promise<Redemption> {
    const redemption = await this.#db.transaction(async (tx): Promise<Redemption> => {
      const redemption = await this.#redeem(tx, tokenHash, "email_verification", now);
      if (redemption.outcome !== "redeemed") return redemption;
      const previous = redemption.user;
      // A new address is a new credential stamp, as for any e-mail change.
      const stamp = previous.email === redemption.token.email ? previous.credentialStamp : newCredentialStamp();
      const row = await tx.one<UserRow>(
        "UPDATE users SET email = $1, email_verified_at = $2, updated_at = $2, credential_stamp = $3 WHERE id = $4 RETURNING *",
        [redemption.token.email, now, stamp, previous.id],
      );
      const user = toUser(row) as UserRecord;
      if (previous.email !== user.email) await this.#insertMail(tx, notice(previous.email, user));
      await this.#record(tx, [event(previous.email !== user.email)], user.id);
      await this.#notify(tx, user.id);
      return { ...redemption, user };
    });
    if (redemption.outcome === "redeemed") this.#changes.changed(redemption.user.id);
    return redemption;
  }

  async enqueueMail(mail: NewOutboxMessage): Promise<void> {
    await this.#insertMail(this.#db, mail);
  }

  async claimMail(owner: string, now: string, leaseUntil: string, limit: number): Promise<OutboxMessage[]> {
    // A message claimed by one sender is not claimed by another: SQLite's IMMEDIATE transaction makes
    // another process on the file wait for this claim; PostgreSQL's SKIP LOCKED makes other instances
    // claiming at the same moment take different rows instead of waiting or doubling up.
    const rows = await this.#db.transaction((tx) =>
      tx.all<OutboxRow>(
        `UPDATE mail_outbox SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
         WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= $3
                      AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_attempt_at, id LIMIT $4
                      ${this.#db.dialect.skipLocked})
         RETURNING *`,
        [owner, leaseUntil, now, limit],
      ),
    );
    return rows.map(toOutbox);
  }

  async completeMail(id: string, owner: string, outcome: DeliveryOutcome): Promise<void> {
    const [set, params]: [string, Param[]] =
      outcome.status === "sent"
        ? // The payload (a sealed link token) is no longer needed once the message is out.
          ["status = 'sent', sent_at = $3, payload = '{}', last_error = NULL", [outcome.at]]
        : outcome.status === "pending"
          ? ["next_attempt_at = $3, last_error = $4", [outcome.nextAttemptAt, outcome.error]]
          : ["status = 'failed', last_error = $3", [outcome.error]];
    await this.#db.run(
      `UPDATE mail_outbox SET ${set}, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2`,
      [id, owner, ...params],
    );
  }

  async listMail({ status, limit }: { status?: MailStatus; limit: number }): Promise<OutboxMessage[]> {
    const filter = where([["status =", status]]);
    const sql = `SELECT * FROM mail_outbox ${filter.sql} ORDER BY id DESC LIMIT $${filter.params.length + 1}`;
    return (await this.#db.all<OutboxRow>(sql, [...filter.params, limit])).map(toOutbox);
  }

  async retryFailedMail(id: string | undefined, now: string): Promise<number> {
    return this.#db.run(
      `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL
       WHERE status = 'failed'${id === undefined ? "" : " AND id = $2"}`,
      id === undefined ? [now] : [now, id],
    );
  }

  async pruneAccountRecords(tokensBefore: string, sentBefore: string, limit: number): Promise<number> {
    const tokens = await this.#db.run(
      "DELETE FROM account_tokens WHERE token_hash IN (SELECT token_hash FROM account_tokens WHERE expires_at < $1 LIMIT $2)",
      [tokensBefore, limit],
    );
    const mail = await this.#db.run(
      "DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'sent' AND sent_at < $1 LIMIT $2)",
      [sentBefore, limit],
    );
    return tokens + mail;
  }

  async ping(): Promise<void> {
    await this.#db.one("SELECT 1");
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  /** Inserts audit events; those without a user id are about `subject`. */
  async #record(q: Queryable, events: readonly AuditEntry[], subject: string | null): Promise<void> {
    for (const event of events) {
      const now = this.#clock();
      await q.run(INSERT_EVENT, [
        newId(now),
        event.userId === undefined ? subject : event.userId,
        event.type,
        event.outcome,
        event.clientAddress,
        new Date(now).toISOString(),
      ]);
    }
  }

  /** Inside a transaction: the user's recovery codes become exactly these. */
  async #replaceCodes(tx: Queryable, userId: string, codeHashes: readonly string[], now: string): Promise<void> {
    await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
    if (codeHashes.length === 0) return;
    await tx.run(
      `INSERT INTO recovery_codes (user_id, code_hash, created_at)
       SELECT $1, value, $3 FROM ${this.#db.dialect.elements("$2")}`,
      [userId, codeHashes, now],
    );
  }

  async #insertMail(q: Queryable, mail: NewOutboxMessage): Promise<void> {
    const now = this.#clock();
    const id = newId(now);
    await q.run(
      `INSERT INTO mail_outbox (id, kind, recipient, user_id, payload, message_id, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [
        id,
        mail.kind,
        mail.recipient,
        mail.userId,
        mail.payload,
        `<${id}@${mail.messageDomain}>`,
        new Date(now).toISOString(),
      ],
    );
  }

  /** Inside a transaction: spends a live token and its siblings, or says why it cannot. */
  async #redeem(tx: Queryable, tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption> {
    // Concurrent redemptions of one token queue here (FOR UPDATE, or SQLite's one writer), and only the
    // first finds it unspent.
    const row = await tx.one<AccountTokenRow>(
      `SELECT * FROM account_tokens WHERE token_hash = $1 AND purpose = $2${this.#db.dialect.forUpdate}`,
      [tokenHash, purpose],
    );
    if (!row) return { outcome: "invalid" };
    if (row.spent_at !== null) return { outcome: "spent" };
    if (row.expires_at <= now) return { outcome: "expired" };
    const user = toUser(await tx.one<UserRow>(USER_BY_ID, [row.user_id]));
    if (!user) return { outcome: "invalid" };
    await tx.run("UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL", [
      now,
      row.user_id,
      purpose,
    ]);
    return { outcome: "redeemed", token: toAccountToken(row), user };
  }

  /** Inside a user write's transaction: tells other instances, if the dialect tells them this way. */
  async #notify(tx: Queryable, userId: string): Promise<void> {
    const notify = this.#db.dialect.notifyUserChange;
    if (notify !== undefined) await tx.run(notify, [userId]);
  }

  /**
   * A write to one user in one transaction: when it may remove an admin, under the admin lock and
   * rolled back if it took the active admins from some to none. Other instances hear of it on commit
   * (#notify), this one's listeners right after, before the caller answers.
   */
  async #writeUser<T>(userId: string, canRemoveAnAdmin: boolean, write: (tx: Queryable) => Promise<T>): Promise<T> {
    const lock = this.#db.dialect.lockAdmins;
    const result = await this.#db.transaction(async (tx) => {
      if (!canRemoveAnAdmin) {
        const written = await write(tx);
        await this.#notify(tx, userId);
        return written;
      }
      if (lock !== undefined) await tx.run(lock);
      const before = await countActiveAdmins(tx);
      const written = await write(tx);
      if (before > 0 && (await countActiveAdmins(tx)) === 0) throw new LastActiveAdmin();
      await this.#notify(tx, userId);
      return written;
    });
    this.#changes.changed(userId);
    return result;
  }
}

async function countActiveAdmins(q: Queryable): Promise<number> {
  // Equalities (not bare columns), so that SQLite too answers from the index users_active_admins.
  const row = await q.one<{ n: Count }>("SELECT count(*) AS n FROM users WHERE is_admin = $1 AND is_active = $1", [
    true,
  ]);
  return Number(row?.n ?? 0);
}

/** A boolean: PostgreSQL's boolean, SQLite's 0 or 1. */
type Flag = boolean | number;
/** A count or a bigint: PostgreSQL sends bigint as text. */
type Count = number | string;

interface UserRow {
  id: string;
  email: string;
  hashed_password: string;
  full_name: string | null;
  is_active: Flag;
  is_admin: Flag;
  created_at: string;
  updated_at: string;
  credentials_changed_at: string | null;
  credential_stamp: string;
  email_verified_at: string | null;
}

function toUser(row: UserRow | undefined): UserRecord | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    email: row.email,
    hashedPassword: row.hashed_password,
    fullName: row.full_name,
    isActive: Boolean(row.is_active),
    isAdmin: Boolean(row.is_admin),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    credentialsChangedAt: row.credentials_changed_at,
    credentialStamp: row.credential_stamp,
    emailVerifiedAt: row.email_verified_at,
  };
}

interface SessionRow {
  id: string;
  user_id: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  revoked_at: string | null;
  client_address: string | null;
  user_agent: string | null;
  refresh_token_hash: string | null;
  refresh_generation: number;
  refresh_expires_at: string;
  rotated_at: string | null;
  amr: string | null;
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    clientAddress: row.client_address,
    userAgent: row.user_agent,
    amr: parseAmr(row.amr),
  };
}

interface PasskeyRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: string;
  counter: Count;
  transports: string;
  name: string;
  device_type: string;
  backed_up: Flag;
  aaguid: string | null;
  created_at: string;
  last_used_at: string | null;
}

function toPasskey(row: PasskeyRow): PasskeyRecord {
  return {
    id: row.id,
    userId: row.user_id,
    credentialId: row.credential_id,
    publicKey: row.public_key,
    // Counters are 32-bit, so a number holds them exactly.
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    deviceType: row.device_type,
    backedUp: Boolean(row.backed_up),
    aaguid: row.aaguid,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

interface WebAuthnChallengeRow {
  id: string;
  challenge_hash: string;
  purpose: string;
  user_id: string | null;
  created_at: string;
  expires_at: string;
}

interface AccountTokenRow {
  token_hash: string;
  user_id: string;
  purpose: string;
  email: string;
  created_at: string;
  expires_at: string;
  spent_at: string | null;
}

function toAccountToken(row: AccountTokenRow): AccountTokenRecord {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    purpose: row.purpose as AccountTokenPurpose,
    email: row.email,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    spentAt: row.spent_at,
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
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
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
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    createdAt: row.created_at,
    sentAt: row.sent_at,
  };
}

interface AuditRow {
  id: string;
  user_id: string | null;
  type: string;
  outcome: string;
  client_address: string | null;
  created_at: string;
}

interface TotpRow {
  user_id: string;
  sealed_secret: string;
  created_at: string;
  confirmed_at: string | null;
  last_step: number | null;
}

interface MfaChallengeRow {
  token_hash: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  spent_at: string | null;
  failures: number;
}
