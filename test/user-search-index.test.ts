// GET /users?email_prefix= (issue 35) is answered from an index on both backends, not by reading the
// users table: the prefix is a byte-order range on email (src/store/sql/user-search.ts). SQLite walks its
// unique index on email; PostgreSQL walks users_email_bytewise (migration 130: lower(email) in the "C"
// collation, an expression with statistics of its own), which the range names through the dialect's
// `bytewiseEmail`. A prefix that finds most users is better answered by walking the ids: the planner
// still may. With TEST_BACKEND=postgres the PostgreSQL plan is
// checked, otherwise SQLite's.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, test } from "node:test";
import { POSTGRES } from "../src/store/postgres.ts";
import { filtered } from "../src/store/sql/shared.ts";
import { withSearch } from "../src/store/sql/user-search.ts";
import { openSqliteStore, SQLITE, sqliteText } from "../src/store/sqlite.ts";
import { openPostgresSchema } from "./helpers.ts";

const USERS = 20_000;

/** The list's statement for a prefix, as the store builds it (users.ts: filtered, then withSearch). */
function prefixQuery(emailKey: string) {
  const [sql, params] = filtered("SELECT * FROM users", [["id >", undefined]], "id", 21);
  return withSearch(sql, [...params], { limit: 21, emailPrefix: "user1234" }, emailKey);
}

describe("the e-mail prefix search reads an index", () => {
  if (process.env.TEST_BACKEND !== "postgres") {
    test("SQLite: the range goes through the unique index on email", async (t) => {
      const dir = mkdtempSync(join(tmpdir(), "user-search-"));
      const path = join(dir, "service.db");
      const store = openSqliteStore(path);
      t.after(async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      });
      const db = new DatabaseSync(path);
      t.after(() => db.close());
      db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${USERS})
        INSERT INTO users (id, email, hashed_password, created_at, updated_at, credential_stamp)
        SELECT printf('01900000-0000-7000-8000-%012d', i), 'user' || i || '@example.com', 'x',
               '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 's' FROM n`);
      // No ANALYZE: a database that never ran it plans the same way.

      const [sql, params] = prefixQuery(SQLITE.bytewiseEmail);
      assert.deepEqual(params, ["user1234", "user1235", 21]);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sqliteText(sql)}`).all(...params) as { detail: string }[])
        .map((step) => step.detail)
        .join("; ");
      assert.match(plan, /SEARCH users USING INDEX sqlite_autoindex_users_\d+ \(email>\? AND email<\?\)/, plan);
      const rows = db.prepare(sqliteText(sql)).all(...params) as { email: string }[];
      assert.equal(rows.length, 11, "user1234 and user12340 to user12349");
    });
  } else {
    test("PostgreSQL: the range goes through users_email_bytewise", async (t) => {
      const { admin, schema } = await openPostgresSchema(t, "user_search");
      await admin.query(`SET search_path TO ${schema}`);
      await admin.query(
        `INSERT INTO users (id, email, hashed_password, created_at, updated_at, credential_stamp)
         SELECT gen_random_uuid(), 'user' || n || '@example.com', 'x', now(), now(), 's'
         FROM generate_series(1, $1) AS n`,
        [USERS],
      );
      await admin.query("ANALYZE users");
      const [sql, params] = prefixQuery(POSTGRES.bytewiseEmail);
      await admin.query(`PREPARE by_prefix (text, text, bigint) AS ${sql}`);
      const { rows } = await admin.query(`EXPLAIN EXECUTE by_prefix('user1234', 'user1235', 21)`);
      const plan = rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
      assert.match(plan, /(Index|Bitmap Index) Scan using users_email_bytewise/, plan);
      const found = await admin.query(sql, params);
      assert.equal(found.rows.length, 11, "user1234 and user12340 to user12349");
    });
  }
});
