// Versioned schema changes, applied in order and recorded in
// schema_migrations. A migration is never edited once released: add a new one.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: "create users",
    sql: `
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        hashed_password TEXT NOT NULL,
        full_name TEXT,
        is_active INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
        is_admin INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;
      CREATE INDEX users_active_admins ON users (is_admin, is_active);
    `,
  },
];
