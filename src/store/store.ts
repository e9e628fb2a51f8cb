// The storage boundary. Routes and auth speak these domain verbs only; each
// backend owns its SQL, applies normalizeEmail in every verb, and maps its own
// unique-violation code to EmailTaken. openStore picks the backend from the
// parsed DATABASE_URL, never by guessing.
import type { DatabaseLocation } from "../config.ts";
import { openSqliteStore } from "./sqlite.ts";

export interface UserRecord {
  id: string;
  email: string;
  hashedPassword: string;
  createdAt: string;
  updatedAt: string;
}

export interface NewUser {
  email: string;
  hashedPassword: string;
}

export interface UserStore {
  /** The user whose normalised e-mail equals the normalised argument, if any. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  /** Inserts a user; throws EmailTaken when the normalised e-mail exists. */
  create(user: NewUser): Promise<UserRecord>;
  /** Replaces a stored hash (used when hashes are upgraded or passwords set). */
  setPassword(id: string, hashedPassword: string): Promise<void>;
  close(): Promise<void>;
}

export function openStore(location: DatabaseLocation): UserStore {
  switch (location.kind) {
    case "sqlite":
      return openSqliteStore(location.path);
  }
}
