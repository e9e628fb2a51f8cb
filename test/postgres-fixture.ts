// A fresh PostgreSQL schema (and Redis key prefix) for one test that runs
// real service processes, dropped afterwards; withSchema() points a
// connection URL at it.
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import pg from "pg";

export async function sharedStores(t: TestContext, postgresUrl: string) {
  const schema = `scale_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  t.after(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  const withSchema = (url: string) =>
    `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return { schema, admin, withSchema, prefix: `test:${schema}:` };
}
