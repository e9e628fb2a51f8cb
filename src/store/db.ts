// What the store's verbs (sql-store.ts) need of a database, and the few
// fragments in which the two dialects differ. Verbs write their SQL once, in
// PostgreSQL's style: $1, $2 ... placeholders (SQLite's backend rewrites
// them once per statement to ?1, ?2, which bind by number), timestamps as
// ISO text, booleans and arrays of text as parameters, rows read back with
// timestamps as ISO text. Each backend (sqlite.ts, postgres.ts) prepares a
// statement once per SQL text, maps its unique violation to EmailTaken, runs
// transactions its own way, and owns its channel of other processes' changes.
import type { ChangeListeners } from "./change-feed.ts";
import type { UserChangeFeed } from "./users.ts";

/** Booleans reach SQLite as 0 or 1, arrays of text as a JSON array (read through Dialect.elements). */
export type Param = string | number | boolean | null | readonly string[];

/** SQL text, which PostgreSQL keeps as a named prepared statement when it is given a name (the hot paths). */
export const prepared = (name: string, text: string) => ({ name, text });
export type Sql = string | ReturnType<typeof prepared>;

export interface Queryable {
  /** The first row, if any. */
  one<Row>(sql: Sql, params?: readonly Param[]): Promise<Row | undefined>;
  all<Row>(sql: Sql, params?: readonly Param[]): Promise<Row[]>;
  /** How many rows the statement changed. */
  run(sql: Sql, params?: readonly Param[]): Promise<number>;
}

export interface Db extends Queryable {
  readonly dialect: Dialect;
  /**
   * Runs `work` as one transaction on `tx`, all or nothing; `work` must not use the Db itself.
   * SQLite: BEGIN IMMEDIATE, one transaction at a time; PostgreSQL: one pooled connection.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs one statement that reads the rows it then changes (a claim), so that writers in other
   * processes wait instead of colliding: SQLite, in an IMMEDIATE transaction (the write lock from
   * the start); PostgreSQL, as it is (its row locks, SKIP LOCKED in the statement, do that).
   */
  claiming<T>(work: (q: Queryable) => Promise<T>): Promise<T>;
  /** Tells `listeners` of changes to users made by other processes (see UserChangeFeed). */
  userChanges(listeners: ChangeListeners): UserChangeFeed;
  close(): Promise<void>;
}

/** The fragments of SQL that differ; everything else is written once. */
export interface Dialect {
  /**
   * Ends a SELECT whose rows the transaction will change: PostgreSQL locks them, so that concurrent
   * transactions queue; SQLite's IMMEDIATE transaction holds the whole database already (empty).
   */
  readonly forUpdate: string;
  /** Ends the SELECT of rows to claim: claimers at the same moment take different rows. */
  readonly skipLocked: string;
  /** Stands before an OFFSET with no limit (SQLite requires a LIMIT there). */
  readonly noLimit: string;
  /** A table with one column, `value`: the elements of an array-of-text parameter. */
  elements(param: string): string;
  /**
   * The users' e-mail as an expression compared byte by byte, which an index answers (issue 35: an
   * e-mail prefix as a range). SQLite: the column itself (its unique index is in byte order already).
   * PostgreSQL: lower(email) COLLATE "C", the expression of users_email_bytewise (migration 130):
   * an expression index keeps its own statistics, in its own collation, so the planner knows how
   * few users a prefix finds (the column's statistics are in the database's collation, unusable here).
   */
  readonly bytewiseEmail: string;
  /** Runs first in a write that may remove the last active admin, so two such writes take turns. */
  readonly lockAdmins?: string;
  /** Runs inside a user write's transaction ($1: the user's id) to tell other instances on commit. */
  readonly notifyUserChange?: Sql;
}
