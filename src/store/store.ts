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
  /** When the password last changed or the account was deactivated; older access tokens fail. */
  credentialsChangedAt: string | null;
}

export interface NewUser {
  email: string;
  hashedPassword: string;
  fullName?: string | null;
  isActive?: boolean;
  isAdmin?: boolean;
}

/** Only the fields present change; updatedAt is set by the store. */
export type UserChanges = Partial<
  Pick<UserRecord, "email" | "hashedPassword" | "fullName" | "isActive" | "isAdmin" | "credentialsChangedAt">
>;

/** A signed-in session: one family of refresh tokens, each spent when it is rotated. */
export interface SessionRecord {
  id: string;
  userId: string;
  createdAt: string;
  lastUsedAt: string;
  /** The absolute end of the session, whatever its refreshes. */
  expiresAt: string;
  revokedAt: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

export interface NewSession {
  userId: string;
  expiresAt: string;
  clientAddress: string | null;
  userAgent: string | null;
  /** The first refresh token of the session (its hash only). */
  tokenHash: string;
  tokenExpiresAt: string;
}

export type Rotation =
  | { outcome: "rotated"; session: SessionRecord }
  /** The token was already spent: a reuse, unless within the grace window of its rotation. */
  | { outcome: "spent"; sessionId: string; spentAt: string }
  /** Unknown, expired, or its session ended. */
  | { outcome: "invalid" };

export const AUDIT_EVENT_TYPES = [
  "signup",
  "login",
  "password_change",
  "role_change",
  "deactivation",
  "deletion",
  "session_revocation",
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** A security event: who, what, from where, how it ended. Never a password or a token. */
export interface AuditEvent {
  id: string;
  /** Null for a failed login with an e-mail that belongs to nobody. */
  userId: string | null;
  type: AuditEventType;
  outcome: string;
  clientAddress: string | null;
  createdAt: string;
}

export interface AuditQuery {
  userId: string;
  limit: number;
  /** Keyset pagination: only events whose id sorts after this one (ids are time-ordered). */
  after?: string;
  type?: AuditEventType;
  /** ISO timestamps, inclusive. */
  from?: string;
  to?: string;
}

export interface AuditStore {
  recordEvent(event: Omit<AuditEvent, "id" | "createdAt">): Promise<void>;
  listEvents(query: AuditQuery): Promise<AuditEvent[]>;
  /** Deletes up to `limit` events older than `before`; answers how many. */
  pruneEvents(before: string, limit: number): Promise<number>;
}

export interface SessionStore {
  createSession(session: NewSession): Promise<SessionRecord>;
  /**
   * Atomically spends a live refresh token and records its successor; only one of several
   * concurrent rotations of one token can win. `now` and the expiries are ISO timestamps.
   */
  rotateRefreshToken(
    tokenHash: string,
    successor: { tokenHash: string; expiresAt: string },
    now: string,
    client: { address: string | null; userAgent: string | null },
  ): Promise<Rotation>;
  /** The session a refresh token belongs to, whatever its state. */
  findSessionByToken(tokenHash: string): Promise<SessionRecord | undefined>;
  findSession(id: string): Promise<SessionRecord | undefined>;
  /** Live sessions of a user, newest first. */
  listSessions(userId: string, now: string): Promise<SessionRecord[]>;
  revokeSession(id: string, now: string): Promise<boolean>;
  revokeUserSessions(userId: string, now: string): Promise<number>;
  /** Deletes up to `limit` expired rows (sessions and refresh tokens); answers how many. */
  purgeExpired(now: string, limit: number): Promise<number>;
}

export interface UserQuery {
  limit: number;
  /** Keyset pagination: only users whose id sorts after this one. */
  after?: string;
  email?: string;
  isActive?: boolean;
  isAdmin?: boolean;
}

export interface UserStore extends SessionStore, AuditStore {
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
