// The embedded default: one SQLite file through node:sqlite. WAL mode lets
// readers run beside the writer; hot statements are prepared once at open.
// Calls are synchronous underneath (microseconds on an indexed lookup) and
// wrapped in promises to fill the UserStore interface. Because a whole verb
// runs without yielding, each one is atomic within this process; writes that
// must check the admin invariant also take SQLite's write lock (IMMEDIATE)
// so that other processes on the same file cannot interleave.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { EmailTaken, LastActiveAdmin } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { newId } from "./ids.ts";
import { pending } from "./migrations.ts";
import type {
  AccountTokenPurpose,
  AccountTokenRecord,
  AuditEvent,
  AuditQuery,
  DeliveryOutcome,
  MailStatus,
  NewAccountToken,
  NewOutboxMessage,
  NewSession,
  NewUser,
  OutboxMessage,
  Redemption,
  Rotation,
  SessionRecord,
  UserChanges,
  UserQuery,
  UserRecord,
  UserStore,
} from "./store.ts";

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
}

const COLUMN_OF: Record<keyof UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  credentialsChangedAt: "credentials_changed_at",
  emailVerifiedAt: "email_verified_at",
};

/** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
export function openSqliteStore(path: string, clock: () => number = Date.now): UserStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(path);
  // mmap lets lookups read pages from the page cache without a read() system call each.
  db.exec(
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA mmap_size = 268435456;",
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

function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = work();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

function rethrowUnique(error: unknown): never {
  if (UNIQUE_VIOLATIONS.has((error as { errcode?: number }).errcode ?? 0)) throw new EmailTaken();
  throw error;
}

class SqliteUserStore implements UserStore {
  readonly #db: DatabaseSync;
  readonly #clock: () => number;
  readonly #findByEmail: StatementSync;
  readonly #findById: StatementSync;
  readonly #insert: StatementSync;
  readonly #delete: StatementSync;
  readonly #countActiveAdmins: StatementSync;

  constructor(db: DatabaseSync, clock: () => number) {
    this.#db = db;
    this.#clock = clock;
    this.#findByEmail = db.prepare("SELECT * FROM users WHERE email = ?");
    this.#findById = db.prepare("SELECT * FROM users WHERE id = ?");
    this.#insert = db.prepare(
      `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at, email_verified_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    );
    this.#delete = db.prepare("DELETE FROM users WHERE id = ?");
    this.#countActiveAdmins = db.prepare("SELECT count(*) AS n FROM users WHERE is_admin = 1 AND is_active = 1");
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

  async create(user: NewUser): Promise<UserRecord> {
    const now = this.#clock();
    const stamp = new Date(now).toISOString();
    try {
      const row = this.#insert.get(
        newId(now),
        normalizeEmail(user.email),
        user.hashedPassword,
        user.fullName ?? null,
        user.isActive === false ? 0 : 1,
        user.isAdmin ? 1 : 0,
        stamp,
        stamp,
        user.emailVerifiedAt ?? null,
      ) as unknown as UserRow;
      return toRecord(row) as UserRecord;
    } catch (error) {
      rethrowUnique(error);
    }
  }

  async update(id: string, changes: UserChanges): Promise<UserRecord | undefined> {
    const assignments: string[] = ["updated_at = ?"];
    const values: SQLInputValue[] = [new Date(this.#clock()).toISOString()];
    for (const [field, value] of Object.entries(changes) as [keyof UserChanges, UserChanges[keyof UserChanges]][]) {
      if (value === undefined) continue;
      assignments.push(`${COLUMN_OF[field]} = ?`);
      values.push(
        field === "email" ? normalizeEmail(value as string) : typeof value === "boolean" ? Number(value) : value,
      );
    }
    const statement = this.#db.prepare(`UPDATE users SET ${assignments.join(", ")} WHERE id = ? RETURNING *`);
    try {
      return this.#keepingAnActiveAdmin(() => toRecord(statement.get(...values, id) as unknown as UserRow | undefined));
    } catch (error) {
      rethrowUnique(error);
    }
  }

  async remove(id: string): Promise<boolean> {
    return this.#keepingAnActiveAdmin(() => Number(this.#delete.run(id).changes) > 0);
  }

  async createSession(session: NewSession): Promise<SessionRecord> {
    const now = new Date(this.#clock()).toISOString();
    return inTransaction(this.#db, () => {
      const row = this.#db
        .prepare(
          `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent)
           VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        )
        .get(
          newId(this.#clock()),
          session.userId,
          now,
          now,
          session.expiresAt,
          session.clientAddress,
          session.userAgent,
        ) as unknown as SessionRow;
      this.#db
        .prepare("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
        .run(session.tokenHash, row.id, now, session.tokenExpiresAt);
      return toSession(row);
    });
  }

  async rotateRefreshToken(
    tokenHash: string,
    successor: { tokenHash: string; expiresAt: string },
    now: string,
    client: { address: string | null; userAgent: string | null },
  ): Promise<Rotation> {
    return inTransaction(this.#db, (): Rotation => {
      const row = this.#db
        .prepare(
          `SELECT t.spent_at, t.expires_at AS token_expires_at, s.*
           FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.token_hash = ?`,
        )
        .get(tokenHash) as unknown as (SessionRow & { spent_at: string | null; token_expires_at: string }) | undefined;
      if (!row || row.revoked_at !== null || row.expires_at <= now || row.token_expires_at <= now)
        return { outcome: "invalid" };
      if (row.spent_at !== null) return { outcome: "spent", sessionId: row.id, spentAt: row.spent_at };
      this.#db.prepare("UPDATE refresh_tokens SET spent_at = ? WHERE token_hash = ?").run(now, tokenHash);
      this.#db
        .prepare("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
        .run(
          successor.tokenHash,
          row.id,
          now,
          successor.expiresAt < row.expires_at ? successor.expiresAt : row.expires_at,
        );
      const session = this.#db
        .prepare("UPDATE sessions SET last_used_at = ?, client_address = ?, user_agent = ? WHERE id = ? RETURNING *")
        .get(now, client.address, client.userAgent, row.id) as unknown as SessionRow;
      return { outcome: "rotated", session: toSession(session) };
    });
  }

  async findSessionByToken(tokenHash: string): Promise<SessionRecord | undefined> {
    const row = this.#db
      .prepare("SELECT s.* FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.token_hash = ?")
      .get(tokenHash) as unknown as SessionRow | undefined;
    return row && toSession(row);
  }

  async findSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.#db.prepare("SELECT * FROM sessions WHERE id = ?").get(id) as unknown as SessionRow | undefined;
    return row && toSession(row);
  }

  async listSessions(userId: string, now: string): Promise<SessionRecord[]> {
    const rows = this.#db
      .prepare("SELECT * FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY id DESC")
      .all(userId, now) as unknown as SessionRow[];
    return rows.map(toSession);
  }

  async revokeSession(id: string, now: string): Promise<boolean> {
    return (
      Number(
        this.#db.prepare("UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(now, id).changes,
      ) > 0
    );
  }

  async revokeUserSessions(userId: string, now: string): Promise<number> {
    return Number(
      this.#db.prepare("UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL").run(now, userId)
        .changes,
    );
  }

  async purgeExpired(now: string, limit: number): Promise<number> {
    const tokens = this.#db
      .prepare(
        "DELETE FROM refresh_tokens WHERE token_hash IN (SELECT token_hash FROM refresh_tokens WHERE expires_at <= ? LIMIT ?)",
      )
      .run(now, limit).changes;
    const sessions = this.#db
      .prepare(
        "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at <= ? OR revoked_at <= ? LIMIT ?)",
      )
      .run(now, now, limit).changes;
    return Number(tokens) + Number(sessions);
  }

  async recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void> {
    const now = this.#clock();
    this.#db
      .prepare(
        "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(newId(now), event.userId, event.type, event.outcome, event.clientAddress, new Date(now).toISOString());
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

  async issueAccountToken(token: NewAccountToken, mail: NewOutboxMessage): Promise<void> {
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
  ): Promise<Redemption> {
    try {
      return inTransaction(this.#db, (): Redemption => {
        const redemption = this.#redeem(tokenHash, "email_verification", now);
        if (redemption.outcome !== "redeemed") return redemption;
        const previous = redemption.user;
        const row = this.#db
          .prepare("UPDATE users SET email = ?, email_verified_at = ?, updated_at = ? WHERE id = ? RETURNING *")
          .get(redemption.token.email, now, now, previous.id) as unknown as UserRow;
        const user = toRecord(row) as UserRecord;
        if (previous.email !== user.email) this.#insertMail(notice(previous.email, user));
        return { ...redemption, user };
      });
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
    emailVerifiedAt: row.email_verified_at,
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
  };
}
