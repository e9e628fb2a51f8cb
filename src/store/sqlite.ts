// The embedded default: one SQLite file through node:sqlite, as a Db for the
// store's verbs (sql-store.ts). WAL mode lets readers run beside the writer;
// each statement is prepared once per SQL text, its $n placeholders
// rewritten to ?n. Calls are synchronous underneath (microseconds on an
// indexed lookup). Every transaction is IMMEDIATE: it takes SQLite's write
// lock first, so other processes on the same file cannot interleave, and
// within this process transactions run one at a time, with statements from
// outside one waiting until it ends: the connection is shared, and a
// transaction's statements must be its own.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { EmailTaken } from "../errors.ts";
import { type ChangeListeners, localFeed } from "./change-feed.ts";
import type { Db, Dialect, Param, Queryable, Sql } from "./db.ts";
import { pending } from "./migrations.ts";
import { sqlStore } from "./sql-store.ts";
import type { UserStore } from "./store.ts";
import type { UserChangeFeed } from "./users.ts";

/** How often the user cache asks whether another process wrote the file (see userChanges). */
export const DATA_VERSION_CHECK_MS = 100;

/** SQLITE_CONSTRAINT_UNIQUE and SQLITE_CONSTRAINT_PRIMARYKEY extended result codes. */
const UNIQUE_VIOLATIONS = new Set([2067, 1555]);

export const SQLITE: Dialect = {
  forUpdate: "",
  skipLocked: "",
  noLimit: "LIMIT -1",
  elements: (param) => `json_each(${param})`,
  bytewiseEmail: "email",
  // No lockAdmins: the IMMEDIATE transaction holds the database. No notifyUserChange: data_version.
};

/** The statement SQLite runs for a verb's SQL: $1, $2 ... become ?1, ?2, which bind by number. */
export function sqliteText(sql: Sql): string {
  return (typeof sql === "string" ? sql : sql.text).replace(/\$(\d+)/g, "?$1");
}

const RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)";

export interface SqliteOptions {
  /**
   * WAL with NORMAL survives a crash of the process (every committed transaction is in the WAL
   * file) but may lose the last transactions on power loss or an OS crash; FULL syncs the WAL on
   * every commit and loses nothing acknowledged, at the price of one fsync per write.
   */
  synchronous?: "normal" | "full";
}

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
  const sqlite = new SqliteDb(db);
  sqlite.migrate();
  return sqlStore(sqlite, clock);
}

class SqliteDb implements Db {
  readonly dialect = SQLITE;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<Sql, StatementSync>();
  readonly #begin: StatementSync;
  readonly #commit: StatementSync;
  /** Settles when the open transaction ends; undefined while none is open. */
  #transaction: Promise<void> | undefined;
  /** The transaction's own statements, which do not wait for it. */
  readonly #tx: Queryable = {
    one: async <Row>(sql: Sql, params?: readonly Param[]) => this.#exec(sql, params, get<Row>),
    all: async <Row>(sql: Sql, params?: readonly Param[]) => this.#exec(sql, params, all<Row>),
    run: async (sql, params) => this.#exec(sql, params, run),
  };

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#begin = db.prepare("BEGIN IMMEDIATE");
    this.#commit = db.prepare("COMMIT");
  }

  /** Applies the pending migrations; IMMEDIATE: two processes opening one new file apply each once. */
  migrate(): void {
    this.#db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
    );
    this.#begin.run();
    try {
      const rows = this.#exec("SELECT version FROM schema_migrations", [], all<{ version: number }>);
      for (const { version, name, sqlite } of pending(new Set(rows.map((row) => row.version)))) {
        this.#db.exec(sqlite);
        this.#exec(RECORD_MIGRATION, [version, name, new Date().toISOString()], run);
      }
      this.#commit.run();
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  async one<Row>(sql: Sql, params?: readonly Param[]): Promise<Row | undefined> {
    while (this.#transaction) await this.#transaction;
    return this.#exec(sql, params, get<Row>);
  }

  async all<Row>(sql: Sql, params?: readonly Param[]): Promise<Row[]> {
    while (this.#transaction) await this.#transaction;
    return this.#exec(sql, params, all<Row>);
  }

  async run(sql: Sql, params?: readonly Param[]): Promise<number> {
    while (this.#transaction) await this.#transaction;
    return this.#exec(sql, params, run);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    while (this.#transaction) await this.#transaction;
    let end = () => {};
    this.#transaction = new Promise((resolve) => {
      end = resolve;
    });
    try {
      this.#begin.run();
      const result = await work(this.#tx);
      this.#commit.run();
      return result;
    } catch (error) {
      // SQLite may already have rolled back by itself (a full disk, say); the original error matters.
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    } finally {
      this.#transaction = undefined;
      end();
    }
  }

  claiming<T>(work: (q: Queryable) => Promise<T>): Promise<T> {
    return this.transaction(work);
  }

  /**
   * Another process writing the same file (the CLI, say) moves data_version; our own commits do not,
   * and the store tells the listeners of them itself. Reading it costs about as much as a cached
   * lookup saves, so it is read at most every DATA_VERSION_CHECK_MS: another process's change is
   * seen within that.
   */
  userChanges(listeners: ChangeListeners): UserChangeFeed {
    const dataVersion = this.#db.prepare("PRAGMA data_version");
    const readVersion = () => (dataVersion.get() as { data_version: number }).data_version;
    let seenVersion = readVersion();
    let checkedAt = 0;
    return localFeed(listeners, () => {
      const now = Date.now();
      if (now - checkedAt < DATA_VERSION_CHECK_MS) return;
      checkedAt = now;
      const version = readVersion();
      if (version !== seenVersion) {
        seenVersion = version;
        listeners.changed(null);
      }
    });
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }

  #statement(sql: Sql): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sqliteText(sql));
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs a statement prepared once per SQL text, with booleans as 0 or 1 and arrays of text as JSON. */
  #exec<T>(sql: Sql, params: readonly Param[] = [], use: (statement: StatementSync, values: SQLInputValue[]) => T): T {
    const values = params.map((value) =>
      typeof value === "boolean" ? Number(value) : Array.isArray(value) ? JSON.stringify(value) : value,
    ) as SQLInputValue[];
    try {
      return use(this.#statement(sql), values);
    } catch (error) {
      if (UNIQUE_VIOLATIONS.has((error as { errcode?: number }).errcode ?? 0)) throw new EmailTaken();
      throw error;
    }
  }
}

const get = <Row>(statement: StatementSync, values: SQLInputValue[]) => statement.get(...values) as Row | undefined;
const all = <Row>(statement: StatementSync, values: SQLInputValue[]) => statement.all(...values) as Row[];
const run = (statement: StatementSync, values: SQLInputValue[]) => Number(statement.run(...values).changes);
