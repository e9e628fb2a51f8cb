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
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;
    `,
  },
];
