// The embedded default: one SQLite file through node:sqlite. WAL mode lets
// readers run beside the writer; every statement is prepared once at open.
// Calls are synchronous underneath (microseconds on an indexed lookup) and
// wrapped in promises to fill the UserStore interface.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { EmailTaken } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { newId } from "./ids.ts";
import { type Migration, sqliteMigrations } from "./migrations.ts";
import type { NewUser, UserRecord, UserStore } from "./store.ts";

/** SQLITE_CONSTRAINT_UNIQUE and SQLITE_CONSTRAINT_PRIMARYKEY extended result codes. */
const UNIQUE_VIOLATIONS = new Set([2067, 1555]);

interface UserRow {
  id: string;
  email: string;
  hashed_password: string;
  created_at: string;
  updated_at: string;
}

export function openSqliteStore(path: string): UserStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
  migrate(db, sqliteMigrations);
  return new SqliteUserStore(db);
}

function migrate(db: DatabaseSync, migrations: readonly Migration[]): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
  );
  // IMMEDIATE takes the write lock first, so two processes opening one new file apply each migration once.
  db.exec("BEGIN IMMEDIATE");
  try {
    const applied = new Set(
      (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((row) => row.version),
    );
    const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
    db.exec("COMMIT");
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

class SqliteUserStore implements UserStore {
  readonly #db: DatabaseSync;
  readonly #findByEmail: StatementSync;
  readonly #insert: StatementSync;
  readonly #setPassword: StatementSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#findByEmail = db.prepare("SELECT * FROM users WHERE email = ?");
    this.#insert = db.prepare(
      "INSERT INTO users (id, email, hashed_password, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *",
    );
    this.#setPassword = db.prepare("UPDATE users SET hashed_password = ?, updated_at = ? WHERE id = ?");
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    const row = this.#findByEmail.get(normalizeEmail(email)) as unknown as UserRow | undefined;
    return row && toRecord(row);
  }

  async create(user: NewUser): Promise<UserRecord> {
    const now = Date.now();
    const stamp = new Date(now).toISOString();
    try {
      const row = this.#insert.get(
        newId(now),
        normalizeEmail(user.email),
        user.hashedPassword,
        stamp,
        stamp,
      ) as unknown as UserRow;
      return toRecord(row);
    } catch (error) {
      if (UNIQUE_VIOLATIONS.has((error as { errcode?: number }).errcode ?? 0)) throw new EmailTaken();
      throw error;
    }
  }

  async setPassword(id: string, hashedPassword: string): Promise<void> {
    this.#setPassword.run(hashedPassword, new Date().toISOString(), id);
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }
}

function toRecord(row: UserRow): UserRecord {
  return {
    id: row.id,
    email: row.email,
    hashedPassword: row.hashed_password,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
