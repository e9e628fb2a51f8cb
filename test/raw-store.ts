// A store whose database the test also reads behind its back, to see what a
// copy of it gives away: every row of every table as JSON text, and on SQLite
// the database and WAL files byte for byte (a file in a temporary directory,
// removed afterwards). On PostgreSQL a fresh schema (TEST_BACKEND=postgres).
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { TestContext } from "node:test";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { UserStore } from "../src/store/store.ts";
import { openPostgresSchema } from "./helpers.ts";

export interface RawStore {
  store: UserStore;
  /** Every row of every table, as JSON text. */
  dump(): Promise<string>;
  /** The database's files as bytes (SQLite only; empty on PostgreSQL). */
  files(): Buffer[];
}

export async function rawStore(t: TestContext, clock: () => number): Promise<RawStore> {
  if (process.env.TEST_BACKEND === "postgres") {
    const { store, admin, schema } = await openPostgresSchema(t, "raw", clock);
    return {
      store,
      async dump() {
        const tables = await admin.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
          [schema],
        );
        const rows = [];
        for (const { table_name } of tables.rows) {
          rows.push(...(await admin.query(`SELECT * FROM ${schema}.${table_name}`)).rows);
        }
        return JSON.stringify(rows);
      },
      files: () => [],
    };
  }
  const dir = mkdtempSync(join(tmpdir(), "second-factor-storage-"));
  const path = join(dir, "users.db");
  const store = openSqliteStore(path, clock);
  const raw = new DatabaseSync(path);
  t.after(async () => {
    raw.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    store,
    async dump() {
      const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      return JSON.stringify(tables.flatMap(({ name }) => raw.prepare(`SELECT * FROM "${name}"`).all()));
    },
    files: () => [path, `${path}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file)),
  };
}
