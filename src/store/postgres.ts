// PostgreSQL for several instances behind one address, as a Db for the
// store's verbs (sql-store.ts): a pg Pool whose size is a setting, the hot
// statements named (prepared once per connection), timestamps read back as
// ISO text, 23505 mapped to EmailTaken, and every connection-level failure
// (refused, reset, timed out, server shutting down) mapped to
// StoreUnavailable, a 503, so requests fail fast and the pool recovers on
// its own when the server is back. Writes that can remove an admin take one
// advisory transaction lock, so two instances cannot each remove "the other"
// last admin; user writes notify every instance (postgres-changes.ts). Every
// connection has an error listener for its whole life: pg emits "error" on a
// client whose server went away, and one emitted while the client is checked
// out (inside a transaction) would otherwise be unhandled and end the process.
import pg from "pg";
import { EmailTaken, HttpError, StoreUnavailable } from "../errors.ts";
import { type Db, type Dialect, type Param, prepared, type Queryable, type Sql } from "./db.ts";
import { pending } from "./migrations.ts";
import { PostgresChangeFeed, USER_CHANGES_CHANNEL } from "./postgres-changes.ts";
import { sqlStore } from "./sql-store.ts";
import type { UserStore } from "./store.ts";

/**
 * Keys for the advisory locks: the admin invariant's, and the migrations' (with the schema's hash as
 * its second key: services in other schemas of one database migrate without waiting for each other).
 */
const MIGRATION_LOCK = 727_001;
const ADMIN_LOCK = 727_002;

/**
 * How long an instance waits for another one's migrations, and how long one migration statement may
 * run. Not DB_TIMEOUT_MS, which bounds a request's statements: several instances starting together
 * on a new database wait for the first one's migrations, and a migration on a large table (an index
 * on a million sessions) takes what it takes; neither should stop an instance from starting.
 */
export const MIGRATION_LOCK_WAIT_MS = 5 * 60_000;
const MIGRATION_STATEMENT_TIMEOUT_MS = 30 * 60_000;
const MIGRATION_LOCK_POLL_MS = 100;

export const POSTGRES: Dialect = {
  forUpdate: " FOR UPDATE",
  skipLocked: "FOR UPDATE SKIP LOCKED",
  noLimit: "",
  elements: (param) => `unnest(${param}::text[]) AS elements (value)`,
  bytewiseEmail: 'lower(email) COLLATE "C"',
  lockAdmins: `SELECT pg_advisory_xact_lock(${ADMIN_LOCK})`,
  notifyUserChange: prepared("notify_user_change", `SELECT pg_notify('${USER_CHANGES_CHANNEL}', $1)`),
};

export interface PostgresOptions {
  url: string;
  poolSize: number;
  /** Bound on connecting and on every statement; past it the request gets a 503. */
  timeoutMs: number;
  /** A schema to work in (tests give each run its own); created when missing. */
  schema?: string;
  clock?: () => number;
}

/** timestamptz read as ISO text, as SQLite stores it, so that the verbs compare and return one form. */
const parseTimestamp = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.TIMESTAMPTZ
      ? (text: string) => (parseTimestamp(text) as Date).toISOString()
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export async function openPostgresStore(options: PostgresOptions): Promise<UserStore> {
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
  const pool = new pg.Pool({ ...connection, types, max: options.poolSize, idleTimeoutMillis: 30_000 });
  // A client losing its server must not crash the process, idle (the pool's "error") or checked
  // out (the client's own "error", which the pool does not listen to then). The statement in flight
  // fails with the same error and becomes a 503; the broken client is discarded, not pooled again.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  try {
    if (options.schema) await guard(() => pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`));
    await guard(() => migrate(connection));
  } catch (error) {
    await pool.end();
    throw error;
  }
  return sqlStore(postgresDb(pool, connection), options.clock ?? Date.now);
}

const RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())";

/**
 * Applies the pending migrations, each in its transaction, under an advisory lock held across
 * instances, on a connection of its own whose statements have the migration bounds above (the lock
 * is polled with pg_try_advisory_lock, so the wait is bounded without a long statement).
 */
async function migrate(connection: pg.ClientConfig): Promise<void> {
  const client = new pg.Client({
    ...connection,
    types,
    statement_timeout: MIGRATION_STATEMENT_TIMEOUT_MS,
    query_timeout: MIGRATION_STATEMENT_TIMEOUT_MS,
  });
  client.on("error", () => {});
  await client.connect();
  const lockKeys = [MIGRATION_LOCK];
  try {
    const giveUpAt = Date.now() + MIGRATION_LOCK_WAIT_MS;
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>(
        "SELECT pg_try_advisory_lock($1, hashtext(current_schema())) AS locked",
        lockKeys,
      );
      if (rows[0]?.locked) break;
      if (Date.now() >= giveUpAt) {
        throw new Error(`another instance has held the migration lock for ${MIGRATION_LOCK_WAIT_MS / 1000} s`);
      }
      await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_POLL_MS));
    }
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)",
    );
    const { rows } = await client.query<{ version: number }>("SELECT version FROM schema_migrations");
    for (const migration of pending(new Set(rows.map((row) => row.version)))) {
      await client.query("BEGIN");
      try {
        await client.query(migration.postgres);
        await client.query(RECORD_MIGRATION, [migration.version, migration.name]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    }
  } finally {
    // Ending the connection releases the lock too; the unlock just says so sooner.
    await client.query("SELECT pg_advisory_unlock($1, hashtext(current_schema()))", lockKeys).catch(() => {});
    await client.end().catch(() => {});
  }
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
    // Already an answer (LastActiveAdmin from a verb's check, say).
    if (error instanceof HttpError) throw error;
    const code = (error as { code?: string }).code;
    if (code === "23505") throw new EmailTaken();
    // Data exceptions (a NUL byte in text, say) are the caller's input, not our failure.
    if (code?.startsWith("22")) throw new HttpError(422, "A value contains characters that cannot be stored");
    if (isUnavailable(error)) throw new StoreUnavailable(error);
    throw error;
  }
}

/** A statement for pg: named (prepared once per connection) when the verb names it. */
function query(sql: Sql, params: readonly Param[] = []): pg.QueryConfig {
  return typeof sql === "string" ? { text: sql, values: params as unknown[] } : { ...sql, values: params as unknown[] };
}

/** Statements on a pool or on one connection; errors are left to guard. */
function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    one: async <Row>(sql: Sql, params?: readonly Param[]) =>
      (await client.query(query(sql, params))).rows[0] as Row | undefined,
    all: async <Row>(sql: Sql, params?: readonly Param[]) => (await client.query(query(sql, params))).rows as Row[],
    run: async (sql: Sql, params?: readonly Param[]) => (await client.query(query(sql, params))).rowCount ?? 0,
  };
}

/** The Db over the pool: statements on any connection, a transaction on one; errors through guard. */
function postgresDb(pool: pg.Pool, connection: pg.ClientConfig): Db {
  const statements = queryable(pool);
  let feed: PostgresChangeFeed | undefined;
  const db: Db = {
    dialect: POSTGRES,
    one: <Row>(sql: Sql, params?: readonly Param[]) => guard(() => statements.one<Row>(sql, params)),
    all: <Row>(sql: Sql, params?: readonly Param[]) => guard(() => statements.all<Row>(sql, params)),
    run: (sql, params) => guard(() => statements.run(sql, params)),
    // A connection that failed is destroyed, not pooled again.
    transaction: (work) =>
      guard(async () => {
        const client = await pool.connect();
        let broken = false;
        try {
          await client.query("BEGIN");
          const result = await work(queryable(client));
          await client.query("COMMIT");
          return result;
        } catch (error) {
          broken = !(error instanceof HttpError) && isUnavailable(error);
          if (!broken) await client.query("ROLLBACK").catch(() => {});
          throw error;
        } finally {
          client.release(broken);
        }
      }),
    // SKIP LOCKED in the claim itself keeps concurrent claimers apart.
    claiming: (work) => work(db),
    userChanges(listeners) {
      feed = new PostgresChangeFeed(connection, listeners);
      return feed;
    },
    async close() {
      await feed?.close();
      if (!pool.ended) await pool.end();
    },
  };
  return db;
}
