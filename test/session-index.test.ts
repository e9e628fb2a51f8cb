// A login asks the store for the user's live sessions beyond the cap. Revoked sessions stay in the
// table until housekeeping deletes them (up to ten minutes), so a busy account can have thousands;
// through an index of all the user's sessions that question walked every one of them, and each
// login cost more than the last (4.8 ms of the event loop at 10,000). These tests show the question
// goes through the index of live sessions only (migration 8) on the backend under test, after many
// sessions were revoked by the cap, and that the cap still holds; and that the migration accepts
// the index already built by an operator beforehand (docs/deployment.md). And that the sessions table
// carries no index that no query reads (migration 9): each is written on every login.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, type TestContext, test } from "node:test";
import { newId } from "../src/store/ids.ts";
import { openPostgresStore, POSTGRES } from "../src/store/postgres.ts";
import { PURGE_SESSIONS, revokeSessionsPastCap } from "../src/store/sql/sessions.ts";
import { openSqliteStore, SQLITE, sqliteText } from "../src/store/sqlite.ts";
import type { UserStore } from "../src/store/store.ts";
import { createUser, openPostgresSchema } from "./helpers.ts";

const LOGINS = 300;
const CAP = 3;
const LIVE_INDEX = "sessions_live_by_user";

/** LOGINS logins of one user under a cap of CAP sessions: all but CAP end revoked. */
async function manyLogins(store: UserStore): Promise<string> {
  const user = await createUser(store, "busy@example.com", "correct horse battery staple");
  const later = new Date(Date.now() + 86_400_000).toISOString();
  for (let i = 0; i < LOGINS; i++) {
    await store.createSession(
      {
        id: newId(),
        userId: user.id,
        expiresAt: later,
        clientAddress: null,
        userAgent: null,
        tokenHash: `hash-${i}`,
        tokenExpiresAt: later,
      },
      { maxPerUser: CAP },
    );
  }
  const live = await store.listSessions(user.id, new Date().toISOString(), { limit: 100 });
  assert.equal(live.length, CAP, "the cap still holds");
  return user.id;
}

function sqliteStore(t: TestContext): { store: UserStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "session-index-"));
  const path = join(dir, "service.db");
  const store = openSqliteStore(path);
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, path };
}

describe("the login's session-cap question reads live sessions only", () => {
  if (process.env.TEST_BACKEND !== "postgres") {
    test("SQLite: migration 8 finds the index already there and only records itself", async (t) => {
      const { store, path } = sqliteStore(t);
      await store.close();
      const db = new DatabaseSync(path);
      db.exec("DELETE FROM schema_migrations WHERE version = 8");
      db.close();
      const reopened = openSqliteStore(path);
      await reopened.close();
      const check = new DatabaseSync(path, { readOnly: true });
      t.after(() => check.close());
      assert.deepEqual(
        { ...check.prepare("SELECT count(*) AS n FROM schema_migrations WHERE version = 8").get() },
        { n: 1 },
      );
    });

    test("SQLite: the query plan goes through sessions_live_by_user", async (t) => {
      const { store, path } = sqliteStore(t);
      await manyLogins(store);
      const db = new DatabaseSync(path, { readOnly: true });
      t.after(() => db.close());
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${sqliteText(revokeSessionsPastCap(SQLITE))}`).all() as {
        detail: string;
      }[];
      assert.ok(
        plan.some((step) => step.detail.includes(`USING INDEX ${LIVE_INDEX}`)),
        `plan: ${plan.map((step) => step.detail).join("; ")}`,
      );
    });
  } else {
    test("PostgreSQL: migration 8 finds the index built beforehand (CONCURRENTLY) and only records itself", async (t) => {
      const { admin, schema } = await openPostgresSchema(t, "session_index_prebuilt");
      await admin.query(`SET search_path TO ${schema}`);
      await admin.query(`DROP INDEX ${LIVE_INDEX}`);
      await admin.query("DELETE FROM schema_migrations WHERE version = 8");
      await admin.query(`CREATE INDEX CONCURRENTLY ${LIVE_INDEX} ON sessions (user_id, id) WHERE revoked_at IS NULL`);
      const url = process.env.POSTGRES_URL as string;
      const reopened = await openPostgresStore({ url, schema, poolSize: 1, timeoutMs: 10_000 });
      await reopened.close();
      const { rows } = await admin.query("SELECT count(*)::int AS n FROM schema_migrations WHERE version = 8");
      assert.deepEqual(rows, [{ n: 1 }]);
    });

    test("PostgreSQL: the query plan goes through sessions_live_by_user", async (t) => {
      const { store, admin, schema } = await openPostgresSchema(t, "session_index");
      const userId = await manyLogins(store);
      await admin.query(`SET search_path TO ${schema}`);
      // PostgreSQL reads a table of a few pages whole, index or not; with the revoked sessions a
      // busy account gathers in ten minutes it must not. Copies of a revoked row make the table that size.
      await admin.query(
        `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, refresh_token_hash,
                               refresh_expires_at, revoked_at)
         SELECT gen_random_uuid(), user_id, created_at, last_used_at, expires_at, 'copy-' || n, refresh_expires_at, revoked_at
         FROM sessions, generate_series(1, $2) AS n
         WHERE id = (SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NOT NULL LIMIT 1)`,
        [userId, 20_000],
      );
      await admin.query("ANALYZE sessions");
      await admin.query(`PREPARE past_cap (uuid, timestamptz, bigint) AS ${revokeSessionsPastCap(POSTGRES).text}`);
      const { rows } = await admin.query(`EXPLAIN EXECUTE past_cap('${userId}', now(), ${CAP})`);
      const plan = rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
      assert.match(plan, new RegExp(`Index (Only )?Scan (Backward )?using ${LIVE_INDEX}`), plan);
    });
  }
});

describe("the sessions table keeps only indexes that a query reads (migration 9)", () => {
  const EXPECTED = ["sessions_by_user_newest", LIVE_INDEX];
  if (process.env.TEST_BACKEND !== "postgres") {
    test("SQLite: sessions_by_expiry is gone; the cascade's and the live sessions' indexes stay", async (t) => {
      const { path } = sqliteStore(t);
      const db = new DatabaseSync(path, { readOnly: true });
      t.after(() => db.close());
      const named = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' AND sql IS NOT NULL")
        .all() as { name: string }[];
      assert.deepEqual(named.map((index) => index.name).sort(), EXPECTED);
    });

    test("SQLite: housekeeping's purge reads the table even where an index of expires_at exists", async (t) => {
      const { path } = sqliteStore(t);
      const db = new DatabaseSync(path);
      t.after(() => db.close());
      db.exec("CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at)");
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sqliteText(PURGE_SESSIONS)}`).all() as { detail: string }[]).map(
        (step) => step.detail,
      );
      assert.ok(
        plan.some((detail) => /^SCAN sessions\b/.test(detail)),
        `plan: ${plan.join("; ")}`,
      );
      assert.ok(!plan.some((detail) => detail.includes("sessions_by_expiry")), `plan: ${plan.join("; ")}`);
    });
  } else {
    test("PostgreSQL: sessions_by_expiry is gone; the primary key, the cascade's and the live sessions' indexes stay", async (t) => {
      const { admin, schema } = await openPostgresSchema(t, "session_indexes");
      const { rows } = await admin.query<{ indexname: string }>(
        "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'sessions' ORDER BY indexname",
        [schema],
      );
      assert.deepEqual(
        rows.map((row) => row.indexname),
        [...EXPECTED, "sessions_pkey"].sort(),
      );
    });
  }
});
