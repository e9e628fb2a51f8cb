// The migration lock on PostgreSQL: an instance whose start finds another
// instance migrating waits for it, longer than DB_TIMEOUT_MS (which bounds a
// request's statements, not a start), and then finds nothing left to apply;
// a service in another schema of the same database does not wait at all.
// Needs POSTGRES_URL: skipped with a message without it, except under
// CI=true, where that is a failure.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { migrations } from "../src/store/migrations.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { sharedStores } from "./postgres-fixture.ts";

const POSTGRES_URL = process.env.POSTGRES_URL;
const SKIP_MESSAGE = "migration lock tests need POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)";
if (!POSTGRES_URL && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires it`);

/** The key pair src/store/postgres.ts locks for a schema's migrations. */
const LOCK = "SELECT pg_advisory_lock(727001, hashtext($1))";
const UNLOCK = "SELECT pg_advisory_unlock(727001, hashtext($1))";
const DB_TIMEOUT_MS = 300;

describe("migrations on PostgreSQL", { skip: POSTGRES_URL ? false : SKIP_MESSAGE }, () => {
  test("a start waits for another instance's migrations beyond DB_TIMEOUT_MS, then applies nothing twice", async (t) => {
    const { admin, schema } = await sharedStores(t, POSTGRES_URL!);
    await admin.query(LOCK, [schema]);
    const startedAt = Date.now();
    const opening = openPostgresStore({ url: POSTGRES_URL!, schema, poolSize: 1, timeoutMs: DB_TIMEOUT_MS });
    // Held for ten times the statement bound: the old lock wait failed the start after DB_TIMEOUT_MS.
    await new Promise((resolve) => setTimeout(resolve, 10 * DB_TIMEOUT_MS));
    await admin.query(UNLOCK, [schema]);
    const store = await opening;
    t.after(() => store.close());
    assert.ok(Date.now() - startedAt >= 10 * DB_TIMEOUT_MS, "it waited for the lock");
    const { rows } = await admin.query(
      `SELECT version, count(*)::int AS n FROM ${schema}.schema_migrations GROUP BY version ORDER BY version`,
    );
    assert.deepEqual(
      rows,
      migrations.map((migration) => ({ version: migration.version, n: 1 })).sort((a, b) => a.version - b.version),
    );
  });

  test("a service in another schema migrates while one schema's lock is held", async (t) => {
    const held = await sharedStores(t, POSTGRES_URL!);
    const other = await sharedStores(t, POSTGRES_URL!);
    // Held until the test ends: the fixture's connection closes then, and the lock with it.
    await held.admin.query(LOCK, [held.schema]);
    const store = await openPostgresStore({
      url: POSTGRES_URL!,
      schema: other.schema,
      poolSize: 1,
      timeoutMs: DB_TIMEOUT_MS,
    });
    t.after(() => store.close());
    const { rows } = await other.admin.query(`SELECT count(*)::int AS n FROM ${other.schema}.schema_migrations`);
    assert.deepEqual(rows, [{ n: migrations.length }]);
    assert.deepEqual(
      (await held.admin.query(UNLOCK, [held.schema])).rows,
      [{ pg_advisory_unlock: true }],
      "still held",
    );
  });
});
