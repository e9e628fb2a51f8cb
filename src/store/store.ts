// The storage boundary. Routes and auth speak these domain verbs only; each
// backend owns its SQL, applies normalizeEmail in every verb, maps its own
// unique-violation code to EmailTaken, and keeps the one invariant that
// needs a transaction: a change never removes the last active admin
// (LastActiveAdmin). openStore picks the backend from the parsed
// DATABASE_URL, never by guessing.
import type { DatabaseLocation } from "../config.ts";
import { openSqliteStore } from "./sqlite.ts";

export interface UserRecord {
  id: string;
  email: string;
  hashedPassword: string;
  fullName: string | null;
  isActive: boolean;
  isAdmin: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface NewUser {
  email: string;
  hashedPassword: string;
  fullName?: string | null;
  isActive?: boolean;
  isAdmin?: boolean;
}

/** Only the fields present change; updatedAt is set by the store. */
export type UserChanges = Partial<Pick<UserRecord, "email" | "hashedPassword" | "fullName" | "isActive" | "isAdmin">>;

export interface UserQuery {
  limit: number;
  /** Keyset pagination: only users whose id sorts after this one. */
  after?: string;
  email?: string;
  isActive?: boolean;
  isAdmin?: boolean;
}

export interface UserStore {
  /** The user whose normalised e-mail equals the normalised argument, if any. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  findById(id: string): Promise<UserRecord | undefined>;
  /** Users in id order (UUIDv7: creation order), filtered, at most `limit`. */
  list(query: UserQuery): Promise<UserRecord[]>;
  countActiveAdmins(): Promise<number>;
  /** Inserts a user; throws EmailTaken when the normalised e-mail exists. */
  create(user: NewUser): Promise<UserRecord>;
  /** Applies the changes; undefined when no such user. Throws EmailTaken or LastActiveAdmin. */
  update(id: string, changes: UserChanges): Promise<UserRecord | undefined>;
  /** Deletes; false when no such user. Throws LastActiveAdmin. */
  remove(id: string): Promise<boolean>;
  /** Resolves when the database answers; throws StoreUnavailable otherwise (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Opens the backend DATABASE_URL names and brings its schema up to date. */
export async function openStore(location: DatabaseLocation, clock: () => number = Date.now): Promise<UserStore> {
  switch (location.kind) {
    case "sqlite":
      return openSqliteStore(location.path, clock);
    case "postgres": {
      // Loaded only when used: an SQLite deployment never pays for the pg driver's memory.
      const { openPostgresStore } = await import("./postgres.ts");
      return openPostgresStore({
        url: location.url,
        poolSize: location.poolSize,
        timeoutMs: location.timeoutMs,
        clock,
      });
    }
  }
}
