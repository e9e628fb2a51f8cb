// Fills an SQLite database with many users fast: the schema comes from the
// service's own migrations (openSqliteStore), then rows go in through one
// prepared statement inside one transaction, all sharing one real Argon2id
// hash. A million rows take seconds, not the hours a million sign-ups would.
import { DatabaseSync } from "node:sqlite";
import { newId } from "../src/store/ids.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";

export async function seedUsers(path: string, count: number, hashedPassword: string): Promise<void> {
  await (await openSqliteStore(path)).close();
  const db = new DatabaseSync(path);
  const insert = db.prepare(
    "INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at) VALUES (?, ?, ?, NULL, 1, 0, ?, ?)",
  );
  const stamp = new Date().toISOString();
  db.exec("BEGIN");
  for (let i = 0; i < count; i++) insert.run(newId(), `seed${i}@example.com`, hashedPassword, stamp, stamp);
  db.exec("COMMIT");
  db.close();
}
