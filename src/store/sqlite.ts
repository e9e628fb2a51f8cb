// The embedded default: one SQLite file through node:sqlite. WAL mode lets
// readers run beside the writer; hot statements are prepared once at open.
// Calls are synchronous underneath (microseconds on an indexed lookup) and
// wrapped in promises to fill the UserStore interface. Because a whole verb
// runs without yielding, each one is atomic within this process; writes that
// must check the admin invariant also take SQLite's write lock (IMMEDIATE)
// so that other processes on the same file cannot interleave. Every verb that
// writes more than one row runs in one IMMEDIATE transaction (see store.ts).
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { EmailTaken, LastActiveAdmin } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { ChangeListeners, localFeed } from "./change-feed.ts";
import { newCredentialStamp, newId } from "./ids.ts";
import { pending } from "./migrations.ts";
import { judgePresentedToken, parseAmr, type SessionTokenState } from "./rotation.ts";
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

/** How often the user cache asks whether another process wrote the file (see the constructor). */
export const DATA_VERSION_CHECK_MS = 100;

/** SQLITE_CONSTRAINT_UNIQUE and SQLITE_CONSTRAINT_PRIMARYKEY extended result codes. */
const UNIQUE_VIOLATIONS = new Set([2067, 1555]);

interface UserRow {
  id: string;
  email: string;
  hashed_password: string;
  full_name: string | null;
  is_active: number;
  is_admin: number;
  created_at: string;
  updated_at: string;
  credentials_changed_at: string | null;
  credential_stamp: string;
  email_verified_at: string | null;
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

const COLUMN_OF: Record<keyof UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  emailVerifiedAt: "email_verified_at",
};

export interface SqliteOptions {
  /**
   * WAL with NORMAL survives a crash of the process (every committed transaction is in the WAL
   * file) but may lose the last transactions on power loss or an OS crash; FULL syncs the WAL on
   * every commit and loses nothing acknowledged, at the price of one fsync per write.
   */
  synchronous?: "normal" | "full";
}

/**
 * Live sessions beyond the newest `cap` (user, now, now, cap), oldest last: the ones a new login
 * pushes out. Read on every login, through the index of live sessions (migration 8), so its cost
 * does not grow with the revoked sessions the user has (test/session-index.test.ts).
 */
export const LIVE_SESSIONS_PAST_CAP = `SELECT id FROM sessions
   WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND refresh_expires_at > ?
   ORDER BY id DESC LIMIT -1 OFFSET ?`;

/**
 * Housekeeping's delete of sessions past any of their three ends (now, now, now, limit). The OR
 * reads the table whichever single column is indexed (test/session-index.test.ts), which is why
 * migration 9 dropped the index of expires_at that every login wrote.
 */
export const PURGE_SESSIONS = `DELETE FROM sessions WHERE id IN (
   SELECT id FROM sessions WHERE expires_at <= ? OR refresh_expires_at <= ? OR revoked_at <= ? LIMIT ?)`;

/** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
export function openSqliteStore(
  path: string,
  clock: () => number = Date.now,
  { synchronous = "normal" }: SqliteOptions = {},
): UserStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(path);
  // mmap lets lookups read pages from the page cache without a read() system call each.
  db.exec(
    `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}; PRAGMA busy_timeout = 5000; PRAGMA mmap_size = 268435456;`,
  );
  migrate(db);
  return new SqliteUserStore(db, clock);
}

function migrate(db: DatabaseSync): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
  );
  // IMMEDIATE takes the write lock first, so two processes opening one new file apply each migration once.
  inTransaction(db, () => {
    const rows = db.prepare("SELECT version FROM schema_migrations").all() as unknown as { version: number }[];
    const applied = new Set(rows.map((row) => row.version));
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const migration of pending(applied)) {
      db.exec(migration.sqlite);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
  });
}

/** BEGIN, COMMIT and ROLLBACK prepared once per connection: a login runs one transaction. */
const transactionStatements = new WeakMap<DatabaseSync, { begin: StatementSync; commit: StatementSync }>();

function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  let statements = transactionStatements.get(db);
  if (statements === undefined) {
    statements = { begin: db.prepare("BEGIN IMMEDIATE"), commit: db.prepare("COMMIT") };
    transactionStatements.set(db, statements);
  }
  statements.begin.run();
  try {
    const result = work();
    statements.commit.run();
    return result;
  } catch (error) {
    // SQLite may already have rolled back by itself (a full disk, say); the original error matters.
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

function rethrowUnique(error: unknown): never {
  if (UNIQUE_VIOLATIONS.has((error as { errcode?: number }).errcode ?? 0)) throw new EmailTaken();
  throw error;
}

class SqliteUserStore implements UserStore {
  readonly userChanges: UserChangeFeed;
  readonly #changes = new ChangeListeners();
  readonly #db: DatabaseSync;
  readonly #clock: () => number;
  readonly #findByEmail: StatementSync;
  /** Asked on every login (does the account need a second factor?), so prepared once. */
  readonly #secondFactorsOf: StatementSync;
  readonly #findById: StatementSync;
  readonly #insert: StatementSync;
  readonly #delete: StatementSync;
  readonly #countActiveAdmins: StatementSync;
  readonly #insertEvent: StatementSync;
  readonly #insertSession: StatementSync;
  readonly #liveSessionsPastCap: StatementSync;
  readonly #revokeSession: StatementSync;
  readonly #findSession: StatementSync;
  readonly #rotate: StatementSync;

  constructor(db: DatabaseSync, clock: () => number) {
    this.#db = db;
    this.#clock = clock;
    // Another process writing the same file (the CLI, say) moves data_version; our own commits do not,
    // and they tell the listeners themselves. Reading it costs about as much as a cached lookup saves,
    // so it is read at most every DATA_VERSION_CHECK_MS: another process's change is seen within that.
    const dataVersion = db.prepare("PRAGMA data_version");
    const readVersion = () => (dataVersion.get() as { data_version: number }).data_version;
    let seenVersion = readVersion();
    let checkedAt = 0;
    this.userChanges = localFeed(this.#changes, () => {
      const now = Date.now();
      if (now - checkedAt < DATA_VERSION_CHECK_MS) return;
      checkedAt = now;
      const version = readVersion();
      if (version !== seenVersion) {
        seenVersion = version;
        this.#changes.changed(null);
      }
    });
    this.#findByEmail = db.prepare("SELECT * FROM users WHERE email = ?");
    this.#secondFactorsOf = db.prepare(
      `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = ? AND confirmed_at IS NOT NULL) AS totp,
              (SELECT count(*) FROM recovery_codes WHERE user_id = ? AND used_at IS NULL) AS codes,
              (SELECT count(*) FROM webauthn_credentials WHERE user_id = ?) AS passkeys`,
    );
    this.#findById = db.prepare("SELECT * FROM users WHERE id = ?");
    this.#insert = db.prepare(
      `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at, credential_stamp, email_verified_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    );
    this.#delete = db.prepare("DELETE FROM users WHERE id = ?");
    this.#countActiveAdmins = db.prepare("SELECT count(*) AS n FROM users WHERE is_admin = 1 AND is_active = 1");
    this.#insertEvent = db.prepare(
      "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.#insertSession = db.prepare(
      `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent,
                             refresh_token_hash, refresh_generation, refresh_expires_at, amr)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
    );
    this.#liveSessionsPastCap = db.prepare(LIVE_SESSIONS_PAST_CAP);
    this.#revokeSession = db.prepare(
      "UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING user_id",
    );
    this.#findSession = db.prepare("SELECT * FROM sessions WHERE id = ?");
    this.#rotate = db.prepare(
      `UPDATE sessions SET refresh_token_hash = ?, refresh_generation = refresh_generation + 1,
         refresh_expires_at = ?, rotated_at = ?, last_used_at = ?, client_address = ?, user_agent = ?
       WHERE id = ? RETURNING *`,
    );
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    return toRecord(this.#findByEmail.get(normalizeEmail(email)) as unknown as UserRow | undefined);
  }

  async findById(id: string): Promise<UserRecord | undefined> {
    return toRecord(this.#findById.get(id) as unknown as UserRow | undefined);
  }

  async list({ limit, after, email, isActive, isAdmin }: UserQuery): Promise<UserRecord[]> {
    const where: string[] = [];
    const values: SQLInputValue[] = [];
    const filter = (clause: string, value: SQLInputValue) => {
      where.push(clause);
      values.push(value);
    };
    if (after !== undefined) filter("id > ?", after);
    if (email !== undefined) filter("email = ?", normalizeEmail(email));
    if (isActive !== undefined) filter("is_active = ?", isActive ? 1 : 0);
    if (isAdmin !== undefined) filter("is_admin = ?", isAdmin ? 1 : 0);
    const sql = `SELECT * FROM users ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id LIMIT ?`;
    const rows = this.#db.prepare(sql).all(...values, limit) as unknown as UserRow[];
    return rows.map((row) => toRecord(row) as UserRecord);
  }

  async countActiveAdmins(): Promise<number> {
    return this.#activeAdmins();
  }

  async create(user: NewUser, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<UserRecord> {
    const now = this.#clock();
    const stamp = new Date(now).toISOString();
    try {
      return inTransaction(this.#db, () => {
        const row = this.#insert.get(
          newId(now),
          normalizeEmail(user.email),
          user.hashedPassword,
          user.fullName ?? null,
          user.isActive === false ? 0 : 1,
          user.isAdmin ? 1 : 0,
          stamp,
          stamp,
          newCredentialStamp(),
          user.emailVerifiedAt ?? null,
        ) as unknown as UserRow;
        this.#record(events, row.id);
        return toRecord(row) as UserRecord;
      });
    } catch (error) {
      rethrowUnique(error);
    }
  }

  async update(
    id: string,
    changes: UserChanges,
    { endSessions = false, events = [] }: WriteOptions = {},
  ): Promise<UserRecord | undefined> {
    const now = new Date(this.#clock()).toISOString();
    const assignments: string[] = ["updated_at = ?"];
    const values: SQLInputValue[] = [now];
    for (const [field, value] of Object.entries(changes) as [keyof UserChanges, UserChanges[keyof UserChanges]][]) {
      if (value === undefined) continue;
      assignments.push(`${COLUMN_OF[field]} = ?`);
      values.push(
        field === "email" ? normalizeEmail(value as string) : typeof value === "boolean" ? Number(value) : value,
      );
    }
    if (endSessions || changes.email !== undefined) {
      // Changing only when the e-mail really changes would need a read first; a new stamp is harmless.
      assignments.push("credential_stamp = ?");
      values.push(newCredentialStamp());
    }
    if (endSessions) {
      assignments.push("credentials_changed_at = ?");
      values.push(now);
    }
    const statement = this.#db.prepare(`UPDATE users SET ${assignments.join(", ")} WHERE id = ? RETURNING *`);
    try {
      return this.#tellingListeners(id, () => {
        const row = statement.get(...values, id) as unknown as UserRow | undefined;
        if (row === undefined) return undefined;
        if (endSessions) {
          this.#db.prepare("UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL").run(now, id);
          // A pending second-factor challenge proved the old password: it ends with the sessions.
          this.#db.prepare("DELETE FROM mfa_challenges WHERE user_id = ?").run(id);
        }
        this.#record(events, id);
        return toRecord(row);
      });
    } catch (error) {
      rethrowUnique(error);
    }
  }

  async remove(id: string, { events = [] }: Pick<WriteOptions, "events"> = {}): Promise<boolean> {
    return this.#tellingListeners(id, () => {
      const removed = Number(this.#delete.run(id).changes) > 0;
      if (removed) this.#record(events, id);
      return removed;
    });
  }

  async createSession(
    session: NewSession,
    { maxPerUser, events = [] }: { maxPerUser: number; events?: readonly AuditEntry[] },
  ): Promise<SessionRecord> {
    const now = new Date(this.#clock()).toISOString();
    return inTransaction(this.#db, () => {
      const amr = session.amr ?? ["pwd"];
      this.#insertSession.run(
        session.id,
        session.userId,
        now,
        now,
        session.expiresAt,
        session.clientAddress,
        session.userAgent,
        session.tokenHash,
        session.tokenExpiresAt,
        JSON.stringify(amr),
      );
      this.#record(events, session.userId);
      const pastCap = this.#liveSessionsPastCap.all(session.userId, now, now, maxPerUser) as unknown as {
        id: string;
      }[];
      for (const { id } of pastCap) {
        this.#revokeSession.run(now, id);
        this.#record([{ type: "session_revocation", outcome: "session_limit", clientAddress: null }], session.userId);
      }
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
    return inTransaction(this.#db, (): Rotation => {
      const row = this.#findSession.get(presented.sessionId) as unknown as SessionRow | undefined;
      if (!row || row.revoked_at !== null || row.expires_at <= now) return { outcome: "invalid" };
      const outcome = judgePresentedToken(tokenState(row), presented, now);
      if (outcome !== "current") return outcome;
      const user = this.#findById.get(row.user_id) as unknown as UserRow;
      const updated = this.#rotate.get(
        successor.tokenHash,
        successor.expiresAt < row.expires_at ? successor.expiresAt : row.expires_at,
        now,
        now,
        client.address,
        client.userAgent,
        row.id,
      ) as unknown as SessionRow;
      return { outcome: "rotated", session: toSession(updated), user: toRecord(user) as UserRecord };
    });
  }

  async findSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.#findSession.get(id) as unknown as SessionRow | undefined;
    return row && toSession(row);
  }

  async listSessions(userId: string, now: string, { limit, before }: SessionPage): Promise<SessionRecord[]> {
    const rows = this.#db
      .prepare(
        `SELECT * FROM sessions
         WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? AND refresh_expires_at > ? ${before ? "AND id < ?" : ""}
         ORDER BY id DESC LIMIT ?`,
      )
      .all(userId, now, now, ...(before ? [before] : []), limit) as unknown as SessionRow[];
    return rows.map(toSession);
  }

  async revokeSession(id: string, now: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    return inTransaction(this.#db, () => {
      const revoked = this.#revokeSession.get(now, id) as { user_id: string } | undefined;
      if (revoked) this.#record(events, revoked.user_id);
      return revoked !== undefined;
    });
  }

  async revokeSessionByToken(
    presented: PresentedRefreshToken,
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<string | undefined> {
    return inTransaction(this.#db, () => {
      const revoked = this.#db
        .prepare(
          `UPDATE sessions SET revoked_at = ?
           WHERE id = ? AND refresh_generation = ? AND refresh_token_hash = ? AND revoked_at IS NULL
           RETURNING user_id`,
        )
        .get(now, presented.sessionId, presented.generation, presented.tokenHash) as { user_id: string } | undefined;
      if (revoked) this.#record(events, revoked.user_id);
      return revoked?.user_id;
    });
  }

  async purgeExpired(now: string, limit: number): Promise<number> {
    const sessions = this.#db.prepare(PURGE_SESSIONS).run(now, now, now, limit).changes;
    const challenges = this.#db
      .prepare(
        "DELETE FROM mfa_challenges WHERE token_hash IN (SELECT token_hash FROM mfa_challenges WHERE expires_at <= ? LIMIT ?)",
      )
      .run(now, limit).changes;
    const ceremonies = this.#db
      .prepare(
        "DELETE FROM webauthn_challenges WHERE id IN (SELECT id FROM webauthn_challenges WHERE expires_at <= ? LIMIT ?)",
      )
      .run(now, limit).changes;
    return Number(sessions) + Number(challenges) + Number(ceremonies);
  }

  async addPasskey(
    passkey: NewPasskey,
    events: readonly AuditEntry[] = [],
    recoveryCodeHashes?: readonly string[],
  ): Promise<PasskeyRecord | undefined> {
    const now = this.#clock();
    return inTransaction(this.#db, () => {
      const row = this.#db
        .prepare(
          `INSERT INTO webauthn_credentials (id, user_id, credential_id, public_key, counter, transports, name,
                                             device_type, backed_up, aaguid, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credential_id) DO NOTHING RETURNING *`,
        )
        .get(
          newId(now),
          passkey.userId,
          passkey.credentialId,
          passkey.publicKey,
          passkey.counter,
          JSON.stringify(passkey.transports),
          passkey.name,
          passkey.deviceType,
          passkey.backedUp ? 1 : 0,
          passkey.aaguid,
          new Date(now).toISOString(),
        ) as unknown as PasskeyRow | undefined;
      if (row === undefined) return undefined;
      if (recoveryCodeHashes !== undefined) {
        this.#replaceCodes(passkey.userId, recoveryCodeHashes, new Date(now).toISOString());
      }
      this.#record(events, passkey.userId);
      return toPasskey(row);
    });
  }

  async listPasskeys(userId: string): Promise<PasskeyRecord[]> {
    const rows = this.#db
      .prepare("SELECT * FROM webauthn_credentials WHERE user_id = ? ORDER BY id")
      .all(userId) as unknown as PasskeyRow[];
    return rows.map(toPasskey);
  }

  async countPasskeys(userId: string): Promise<number> {
    const row = this.#db.prepare("SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = ?").get(userId) as {
      n: number;
    };
    return Number(row.n);
  }

  async findPasskeyByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined> {
    const row = this.#db.prepare("SELECT * FROM webauthn_credentials WHERE credential_id = ?").get(credentialId) as
      | PasskeyRow
      | undefined;
    return row && toPasskey(row);
  }

  async renamePasskey(
    userId: string,
    id: string,
    name: string,
    events: readonly AuditEntry[] = [],
  ): Promise<PasskeyRecord | undefined> {
    return inTransaction(this.#db, () => {
      const row = this.#db
        .prepare("UPDATE webauthn_credentials SET name = ? WHERE id = ? AND user_id = ? RETURNING *")
        .get(name, id, userId) as unknown as PasskeyRow | undefined;
      if (row) this.#record(events, userId);
      return row && toPasskey(row);
    });
  }

  async removePasskey(userId: string, id: string, events: readonly AuditEntry[] = []): Promise<boolean> {
    return inTransaction(this.#db, () => {
      const removed =
        Number(
          this.#db.prepare("DELETE FROM webauthn_credentials WHERE id = ? AND user_id = ?").run(id, userId).changes,
        ) > 0;
      if (removed) this.#record(events, userId);
      return removed;
    });
  }

  async recordPasskeyUse(
    id: string,
    use: { previousCounter: number; counter: number; backedUp: boolean; at: string },
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    return inTransaction(this.#db, () => {
      const row = this.#db
        .prepare(
          `UPDATE webauthn_credentials SET counter = ?, backed_up = ?, last_used_at = ?
           WHERE id = ? AND counter = ? RETURNING user_id`,
        )
        .get(use.counter, use.backedUp ? 1 : 0, use.at, id, use.previousCounter) as { user_id: string } | undefined;
      if (row) this.#record(events, row.user_id);
      return row !== undefined;
    });
  }

  async saveWebAuthnChallenge(challenge: Omit<WebAuthnChallengeRecord, "createdAt">): Promise<void> {
    this.#db
      .prepare(
        "INSERT INTO webauthn_challenges (id, challenge_hash, purpose, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(
        challenge.id,
        challenge.challengeHash,
        challenge.purpose,
        challenge.userId,
        new Date(this.#clock()).toISOString(),
        challenge.expiresAt,
      );
  }

  async takeWebAuthnChallenge(
    key: { id: string } | { challengeHash: string },
    purpose: WebAuthnPurpose,
    now: string,
  ): Promise<WebAuthnChallengeRecord | undefined> {
    // One statement: of several concurrent takers, only the one whose DELETE removed the row gets it.
    const [column, value] = "id" in key ? ["id", key.id] : ["challenge_hash", key.challengeHash];
    const row = this.#db
      .prepare(`DELETE FROM webauthn_challenges WHERE ${column} = ? RETURNING *`)
      .get(value) as unknown as WebAuthnChallengeRow | undefined;
    if (!row || row.purpose !== purpose || row.expires_at <= now) return undefined;
    return toWebAuthnChallenge(row);
  }

  async secondFactorsOf(userId: string): Promise<SecondFactors> {
    const row = this.#secondFactorsOf.get(userId, userId, userId) as { totp: number; codes: number; passkeys: number };
    return { totp: row.totp === 1, recoveryCodesRemaining: Number(row.codes), passkeys: Number(row.passkeys) };
  }

  async findTotp(userId: string): Promise<TotpFactor | undefined> {
    const row = this.#db.prepare("SELECT * FROM totp_factors WHERE user_id = ?").get(userId) as unknown as
      | TotpRow
      | undefined;
    return row && toTotp(row);
  }

  async startTotp(userId: string, sealedSecret: string): Promise<boolean> {
    const now = new Date(this.#clock()).toISOString();
    const written = this.#db
      .prepare(
        `INSERT INTO totp_factors (user_id, sealed_secret, created_at) VALUES (?, ?, ?)
         ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at,
           last_step = NULL
         WHERE totp_factors.confirmed_at IS NULL`,
      )
      .run(userId, sealedSecret, now).changes;
    return Number(written) > 0;
  }

  async confirmTotp(
    userId: string,
    step: number,
    recoveryCodeHashes: readonly string[] | undefined,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    const now = new Date(this.#clock()).toISOString();
    return inTransaction(this.#db, () => {
      const confirmed = this.#db
        .prepare(
          `UPDATE totp_factors SET confirmed_at = ?, last_step = ?
           WHERE user_id = ? AND confirmed_at IS NULL AND (last_step IS NULL OR last_step < ?)`,
        )
        .run(now, step, userId, step).changes;
      if (Number(confirmed) === 0) return false;
      if (recoveryCodeHashes !== undefined) this.#replaceCodes(userId, recoveryCodeHashes, now);
      this.#record(events, userId);
      return true;
    });
  }

  async acceptTotpStep(userId: string, step: number, events: readonly AuditEntry[] = []): Promise<boolean> {
    return inTransaction(this.#db, () => {
      const accepted = this.#db
        .prepare(
          `UPDATE totp_factors SET last_step = ?
           WHERE user_id = ? AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ?)`,
        )
        .run(step, userId, step).changes;
      if (Number(accepted) === 0) return false;
      this.#record(events, userId);
      return true;
    });
  }

  async removeTotp(
    userId: string,
    { dropRecoveryCodes, events = [] }: { dropRecoveryCodes: boolean; events?: readonly AuditEntry[] },
  ): Promise<boolean> {
    return inTransaction(this.#db, () => {
      const removed = Number(this.#db.prepare("DELETE FROM totp_factors WHERE user_id = ?").run(userId).changes) > 0;
      if (!removed) return false;
      if (dropRecoveryCodes) this.#db.prepare("DELETE FROM recovery_codes WHERE user_id = ?").run(userId);
      this.#record(events, userId);
      return true;
    });
  }

  async replaceRecoveryCodes(
    userId: string,
    codeHashes: readonly string[],
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = new Date(this.#clock()).toISOString();
    inTransaction(this.#db, () => {
      this.#replaceCodes(userId, codeHashes, now);
      this.#record(events, userId);
    });
  }

  async useRecoveryCode(
    userId: string,
    candidateHashes: readonly string[],
    now: string,
    events: readonly AuditEntry[] = [],
  ): Promise<boolean> {
    if (candidateHashes.length === 0) return false;
    return inTransaction(this.#db, () => {
      const used = this.#db
        .prepare(
          `UPDATE recovery_codes SET used_at = ?
           WHERE user_id = ? AND used_at IS NULL AND code_hash IN (${candidateHashes.map(() => "?").join(", ")})`,
        )
        .run(now, userId, ...candidateHashes).changes;
      if (Number(used) === 0) return false;
      this.#record(events, userId);
      return true;
    });
  }

  async resetSecondFactors(userId: string, events: readonly AuditEntry[] = []): Promise<void> {
    inTransaction(this.#db, () => {
      this.#db.prepare("DELETE FROM totp_factors WHERE user_id = ?").run(userId);
      this.#db.prepare("DELETE FROM recovery_codes WHERE user_id = ?").run(userId);
      this.#db.prepare("DELETE FROM webauthn_credentials WHERE user_id = ?").run(userId);
      this.#db.prepare("DELETE FROM webauthn_challenges WHERE user_id = ?").run(userId);
      this.#db.prepare("DELETE FROM mfa_challenges WHERE user_id = ?").run(userId);
      this.#record(events, userId);
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
    const now = new Date(this.#clock()).toISOString();
    this.#db
      .prepare("INSERT INTO mfa_challenges (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
      .run(tokenHash, userId, now, expiresAt);
  }

  async findMfaChallenge(tokenHash: string): Promise<MfaChallenge | undefined> {
    const row = this.#db.prepare("SELECT * FROM mfa_challenges WHERE token_hash = ?").get(tokenHash) as unknown as
      | MfaChallengeRow
      | undefined;
    return row && toChallenge(row);
  }

  async failMfaChallenge(tokenHash: string, maxFailures: number, now: string): Promise<number> {
    const row = this.#db
      .prepare(
        `UPDATE mfa_challenges SET failures = failures + 1,
           spent_at = CASE WHEN failures + 1 >= ? THEN ? ELSE spent_at END
         WHERE token_hash = ? AND spent_at IS NULL RETURNING failures`,
      )
      .get(maxFailures, now, tokenHash) as { failures: number } | undefined;
    return row ? Number(row.failures) : maxFailures;
  }

  async spendMfaChallenge(tokenHash: string, now: string): Promise<string | undefined> {
    const row = this.#db
      .prepare(
        "UPDATE mfa_challenges SET spent_at = ? WHERE token_hash = ? AND spent_at IS NULL AND expires_at > ? RETURNING user_id",
      )
      .get(now, tokenHash, now) as { user_id: string } | undefined;
    return row?.user_id;
  }

  async listTotpSecrets(): Promise<{ userId: string; sealedSecret: string }[]> {
    const rows = this.#db.prepare("SELECT user_id, sealed_secret FROM totp_factors ORDER BY user_id").all() as {
      user_id: string;
      sealed_secret: string;
    }[];
    return rows.map((row) => ({ userId: row.user_id, sealedSecret: row.sealed_secret }));
  }

  async replaceTotpSecret(userId: string, previous: string, next: string): Promise<boolean> {
    const changed = this.#db
      .prepare("UPDATE totp_factors SET sealed_secret = ? WHERE user_id = ? AND sealed_secret = ?")
      .run(next, userId, previous).changes;
    return Number(changed) > 0;
  }

  async recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void> {
    this.#record([event], event.userId);
  }

  async listEvents({ userId, limit, after, type, from, to }: AuditQuery): Promise<AuditEvent[]> {
    const where = ["user_id = ?"];
    const values: SQLInputValue[] = [userId];
    const filter = (clause: string, value: SQLInputValue) => {
      where.push(clause);
      values.push(value);
    };
    if (after !== undefined) filter("id > ?", after);
    if (type !== undefined) filter("type = ?", type);
    if (from !== undefined) filter("created_at >= ?", from);
    if (to !== undefined) filter("created_at <= ?", to);
    const rows = this.#db
      .prepare(`SELECT * FROM audit_events WHERE ${where.join(" AND ")} ORDER BY id LIMIT ?`)
      .all(...values, limit) as unknown as AuditRow[];
    return rows.map(toEvent);
  }

  async pruneEvents(before: string, limit: number): Promise<number> {
    return Number(
      this.#db
        .prepare("DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE created_at < ? LIMIT ?)")
        .run(before, limit).changes,
    );
  }

  async issueAccountToken(
    token: NewAccountToken,
    mail: NewOutboxMessage,
    events: readonly AuditEntry[] = [],
  ): Promise<void> {
    const now = new Date(this.#clock()).toISOString();
    inTransaction(this.#db, () => {
      this.#db
        .prepare("UPDATE account_tokens SET spent_at = ? WHERE user_id = ? AND purpose = ? AND spent_at IS NULL")
        .run(now, token.userId, token.purpose);
      this.#db
        .prepare(
          "INSERT INTO account_tokens (token_hash, user_id, purpose, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .run(token.tokenHash, token.userId, token.purpose, normalizeEmail(token.email), now, token.expiresAt);
      this.#insertMail(mail);
      this.#record(events, token.userId);
    });
  }

  async findAccountToken(tokenHash: string): Promise<AccountTokenRecord | undefined> {
    const row = this.#db.prepare("SELECT * FROM account_tokens WHERE token_hash = ?").get(tokenHash) as unknown as
      | AccountTokenRow
      | undefined;
    return row && toAccountToken(row);
  }

  async redeemAccountToken(tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption> {
    return inTransaction(this.#db, () => this.#redeem(tokenHash, purpose, now));
  }

  async confirmEmail(
    tokenHash: string,
    now: string,
    notice: (previousEmail: string, user: UserRecord) => NewOutboxMessage,
    event: (emailChanged: boolean) => AuditEntry,
  ): Promise<Redemption> {
    try {
      const redemption = inTransaction(this.#db, (): Redemption => {
        const redemption = this.#redeem(tokenHash, "email_verification", now);
        if (redemption.outcome !== "redeemed") return redemption;
        const previous = redemption.user;
        // A new address is a new credential stamp, as for any e-mail change.
        const stamp = previous.email === redemption.token.email ? previous.credentialStamp : newCredentialStamp();
        const row = this.#db
          .prepare(
            "UPDATE users SET email = ?, email_verified_at = ?, updated_at = ?, credential_stamp = ? WHERE id = ? RETURNING *",
          )
          .get(redemption.token.email, now, now, stamp, previous.id) as unknown as UserRow;
        const user = toRecord(row) as UserRecord;
        if (previous.email !== user.email) this.#insertMail(notice(previous.email, user));
        this.#record([event(previous.email !== user.email)], user.id);
        return { ...redemption, user };
      });
      if (redemption.outcome === "redeemed") this.#changes.changed(redemption.user.id);
      return redemption;
    } catch (error) {
      rethrowUnique(error);
    }
  }

  async enqueueMail(mail: NewOutboxMessage): Promise<void> {
    this.#insertMail(mail);
  }

  async claimMail(owner: string, now: string, leaseUntil: string, limit: number): Promise<OutboxMessage[]> {
    // IMMEDIATE: another process on the same file waits for this claim to commit, so no message is claimed twice.
    return inTransaction(this.#db, () => {
      const rows = this.#db
        .prepare(
          `UPDATE mail_outbox SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
           WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= ?
                        AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at, id LIMIT ?)
           RETURNING *`,
        )
        .all(owner, leaseUntil, now, now, limit) as unknown as OutboxRow[];
      return rows.map(toOutbox);
    });
  }

  async completeMail(id: string, owner: string, outcome: DeliveryOutcome): Promise<void> {
    const statement =
      outcome.status === "sent"
        ? this.#db.prepare(
            // The payload (a sealed link token) is no longer needed once the message is out.
            `UPDATE mail_outbox SET status = 'sent', sent_at = ?, payload = '{}', lease_owner = NULL, lease_until = NULL,
             last_error = NULL WHERE id = ? AND lease_owner = ?`,
          )
        : outcome.status === "pending"
          ? this.#db.prepare(
              `UPDATE mail_outbox SET next_attempt_at = ?, last_error = ?, lease_owner = NULL, lease_until = NULL
               WHERE id = ? AND lease_owner = ?`,
            )
          : this.#db.prepare(
              `UPDATE mail_outbox SET status = 'failed', last_error = ?, lease_owner = NULL, lease_until = NULL
               WHERE id = ? AND lease_owner = ?`,
            );
    if (outcome.status === "sent") statement.run(outcome.at, id, owner);
    else if (outcome.status === "pending") statement.run(outcome.nextAttemptAt, outcome.error, id, owner);
    else statement.run(outcome.error, id, owner);
  }

  async listMail({ status, limit }: { status?: MailStatus; limit: number }): Promise<OutboxMessage[]> {
    const rows = (status === undefined
      ? this.#db.prepare("SELECT * FROM mail_outbox ORDER BY id DESC LIMIT ?").all(limit)
      : this.#db
          .prepare("SELECT * FROM mail_outbox WHERE status = ? ORDER BY id DESC LIMIT ?")
          .all(status, limit)) as unknown as OutboxRow[];
    return rows.map(toOutbox);
  }

  async retryFailedMail(id: string | undefined, now: string): Promise<number> {
    const sql = `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = ?, last_error = NULL
                 WHERE status = 'failed'${id === undefined ? "" : " AND id = ?"}`;
    const values: SQLInputValue[] = id === undefined ? [now] : [now, id];
    return Number(this.#db.prepare(sql).run(...values).changes);
  }

  async pruneAccountRecords(tokensBefore: string, sentBefore: string, limit: number): Promise<number> {
    const tokens = this.#db
      .prepare(
        "DELETE FROM account_tokens WHERE token_hash IN (SELECT token_hash FROM account_tokens WHERE expires_at < ? LIMIT ?)",
      )
      .run(tokensBefore, limit).changes;
    const mail = this.#db
      .prepare(
        "DELETE FROM mail_outbox WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'sent' AND sent_at < ? LIMIT ?)",
      )
      .run(sentBefore, limit).changes;
    return Number(tokens) + Number(mail);
  }

  async ping(): Promise<void> {
    this.#db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }

  /** Inserts audit events; those without a user id are about `subject`. */
  #record(events: readonly AuditEntry[], subject: string | null): void {
    for (const event of events) {
      const now = this.#clock();
      this.#insertEvent.run(
        newId(now),
        event.userId === undefined ? subject : event.userId,
        event.type,
        event.outcome,
        event.clientAddress,
        new Date(now).toISOString(),
      );
    }
  }

  /** Inside a transaction: the user's recovery codes become exactly these. */
  #replaceCodes(userId: string, codeHashes: readonly string[], now: string): void {
    this.#db.prepare("DELETE FROM recovery_codes WHERE user_id = ?").run(userId);
    const insert = this.#db.prepare("INSERT INTO recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)");
    for (const hash of codeHashes) insert.run(userId, hash, now);
  }

  #insertMail(mail: NewOutboxMessage): void {
    const now = this.#clock();
    const id = newId(now);
    const stamp = new Date(now).toISOString();
    this.#db
      .prepare(
        `INSERT INTO mail_outbox (id, kind, recipient, user_id, payload, message_id, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, mail.kind, mail.recipient, mail.userId, mail.payload, `<${id}@${mail.messageDomain}>`, stamp, stamp);
  }

  /** Inside a transaction: spends a live token and its siblings, or says why it cannot. */
  #redeem(tokenHash: string, purpose: AccountTokenPurpose, now: string): Redemption {
    const row = this.#db
      .prepare("SELECT * FROM account_tokens WHERE token_hash = ? AND purpose = ?")
      .get(tokenHash, purpose) as unknown as AccountTokenRow | undefined;
    if (!row) return { outcome: "invalid" };
    if (row.spent_at !== null) return { outcome: "spent" };
    if (row.expires_at <= now) return { outcome: "expired" };
    const user = toRecord(this.#findById.get(row.user_id) as unknown as UserRow | undefined);
    if (!user) return { outcome: "invalid" };
    this.#db
      .prepare("UPDATE account_tokens SET spent_at = ? WHERE user_id = ? AND purpose = ? AND spent_at IS NULL")
      .run(now, row.user_id, purpose);
    return { outcome: "redeemed", token: toAccountToken(row), user };
  }

  #activeAdmins(): number {
    return Number((this.#countActiveAdmins.get() as { n: number }).n);
  }

  /** A write to one user, kept from removing the last admin; the listeners hear of it once it has committed. */
  #tellingListeners<T>(userId: string, write: () => T): T {
    const result = this.#keepingAnActiveAdmin(write);
    this.#changes.changed(userId);
    return result;
  }

  /** Runs a write and rolls it back if it took the active-admin count from some to none. */
  #keepingAnActiveAdmin<T>(write: () => T): T {
    return inTransaction(this.#db, () => {
      const before = this.#activeAdmins();
      const result = write();
      if (before > 0 && this.#activeAdmins() === 0) throw new LastActiveAdmin();
      return result;
    });
  }
}

function toRecord(row: UserRow | undefined): UserRecord | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    email: row.email,
    hashedPassword: row.hashed_password,
    fullName: row.full_name,
    isActive: row.is_active === 1,
    isAdmin: row.is_admin === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    credentialsChangedAt: row.credentials_changed_at,
    credentialStamp: row.credential_stamp,
    emailVerifiedAt: row.email_verified_at,
  };
}

interface PasskeyRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  device_type: string;
  backed_up: number;
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
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    deviceType: row.device_type,
    backedUp: row.backed_up === 1,
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

function toWebAuthnChallenge(row: WebAuthnChallengeRow): WebAuthnChallengeRecord {
  return {
    id: row.id,
    challengeHash: row.challenge_hash,
    purpose: row.purpose as WebAuthnPurpose,
    userId: row.user_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
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

function toEvent(row: AuditRow): AuditEvent {
  return {
    id: row.id,
    userId: row.user_id,
    type: row.type as AuditEvent["type"],
    outcome: row.outcome,
    clientAddress: row.client_address,
    createdAt: row.created_at,
  };
}

function tokenState(row: SessionRow): SessionTokenState {
  return {
    id: row.id,
    userId: row.user_id,
    generation: row.refresh_generation,
    tokenHash: row.refresh_token_hash,
    refreshExpiresAt: row.refresh_expires_at,
    rotatedAt: row.rotated_at,
  };
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

interface TotpRow {
  user_id: string;
  sealed_secret: string;
  created_at: string;
  confirmed_at: string | null;
  last_step: number | null;
}

function toTotp(row: TotpRow): TotpFactor {
  return {
    userId: row.user_id,
    sealedSecret: row.sealed_secret,
    createdAt: row.created_at,
    confirmedAt: row.confirmed_at,
    lastStep: row.last_step === null ? null : Number(row.last_step),
  };
}

interface MfaChallengeRow {
  token_hash: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  spent_at: string | null;
  failures: number;
}

function toChallenge(row: MfaChallengeRow): MfaChallenge {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    spentAt: row.spent_at,
    failures: Number(row.failures),
  };
}
