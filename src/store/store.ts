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
  /** When the owner of the current e-mail proved it (a verification or reset link); null while unverified. */
  emailVerifiedAt: string | null;
}

export interface NewUser {
  email: string;
  hashedPassword: string;
  fullName?: string | null;
  isActive?: boolean;
  isAdmin?: boolean;
  emailVerifiedAt?: string | null;
}

/** Only the fields present change; updatedAt is set by the store. */
export type UserChanges = Partial<
  Pick<
    UserRecord,
    "email" | "hashedPassword" | "fullName" | "isActive" | "isAdmin" | "credentialsChangedAt" | "emailVerifiedAt"
  >
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
  "password_reset",
  "email_verification",
  "email_change",
  "mail",
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

export type AccountTokenPurpose = "password_reset" | "email_verification";

/** A single-use link token (reset or verification), stored only as its hash. */
export interface AccountTokenRecord {
  tokenHash: string;
  userId: string;
  purpose: AccountTokenPurpose;
  /** The address the link was sent to: for a verification, the address it proves (maybe a new one). */
  email: string;
  createdAt: string;
  expiresAt: string;
  spentAt: string | null;
}

export type NewAccountToken = Omit<AccountTokenRecord, "createdAt" | "spentAt">;

export type MailKind = "password_reset" | "email_verification" | "email_changed";
export type MailStatus = "pending" | "sent" | "failed";

export interface NewOutboxMessage {
  kind: MailKind;
  recipient: string;
  userId: string | null;
  /** What the template needs, as JSON; a link token in it is sealed (see mail/seal.ts), never in clear. */
  payload: string;
  /** The right-hand side of the Message-ID the store makes from the message's id: `<id@domain>`. */
  messageDomain: string;
}

export interface OutboxMessage extends Omit<NewOutboxMessage, "messageDomain"> {
  id: string;
  /** Stable across retries, so that a receiver can tell a repeat from a new message. */
  messageId: string;
  status: MailStatus;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  sentAt: string | null;
}

export type Redemption =
  | { outcome: "redeemed"; token: AccountTokenRecord; user: UserRecord }
  | { outcome: "spent" | "expired" | "invalid" };

/** How a claimed delivery ended: sent, to be tried again later, or given up. */
export type DeliveryOutcome =
  | { status: "sent"; at: string }
  | { status: "pending"; nextAttemptAt: string; error: string }
  | { status: "failed"; error: string };

export interface AccountTokenStore {
  /**
   * One transaction: spends the user's live tokens of the same purpose (a newer link replaces older
   * ones), stores the new token and queues the mail that carries it.
   */
  issueAccountToken(token: NewAccountToken, mail: NewOutboxMessage): Promise<void>;
  findAccountToken(tokenHash: string): Promise<AccountTokenRecord | undefined>;
  /**
   * One transaction: spends a live token of this purpose together with every other live token of its
   * user and purpose. Only one of several concurrent redemptions of a token wins.
   */
  redeemAccountToken(tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption>;
  /**
   * One transaction: redeems a verification token, makes its address the user's verified e-mail, and
   * queues `notice(previous e-mail)` when the address changed. Throws EmailTaken.
   */
  confirmEmail(
    tokenHash: string,
    now: string,
    notice: (previousEmail: string, user: UserRecord) => NewOutboxMessage,
  ): Promise<Redemption>;
}

export interface OutboxStore {
  enqueueMail(mail: NewOutboxMessage): Promise<void>;
  /**
   * Claims up to `limit` due messages for `owner` until `leaseUntil`, counting an attempt on each.
   * A message claimed by one sender (in any instance) is not claimed by another until the lease ends.
   */
  claimMail(owner: string, now: string, leaseUntil: string, limit: number): Promise<OutboxMessage[]>;
  /** Records the end of a delivery, only if `owner` still holds the lease. */
  completeMail(id: string, owner: string, outcome: DeliveryOutcome): Promise<void>;
  /** Newest first. */
  listMail(query: { status?: MailStatus; limit: number }): Promise<OutboxMessage[]>;
  /** Puts failed messages (one, or all when id is undefined) back in the queue, due now; answers how many. */
  retryFailedMail(id: string | undefined, now: string): Promise<number>;
  /**
   * Deletes up to `limit` link tokens that expired before `tokensBefore` and sent messages sent before
   * `sentBefore` (failed ones stay until an operator acts); answers how many.
   */
  pruneAccountRecords(tokensBefore: string, sentBefore: string, limit: number): Promise<number>;
}

export interface UserQuery {
  limit: number;
  /** Keyset pagination: only users whose id sorts after this one. */
  after?: string;
  email?: string;
  isActive?: boolean;
  isAdmin?: boolean;
}

export interface UserStore extends SessionStore, AuditStore, AccountTokenStore, OutboxStore {
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
