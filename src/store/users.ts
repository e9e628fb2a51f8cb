// The accounts (store.ts): the users table, its one invariant that needs a
// transaction (a change never removes the last active admin:
// LastActiveAdmin), and the feed that tells caches of a change. One
// transaction each:
// - create: the user and its sign-up event;
// - update: the changes, with endSessions the new credential stamp, the
//   credentials-changed time and the revocation of every session (password
//   change, reset, deactivation, operator actions), and its audit events
//   (role change, deactivation, password change);
// - remove: the user, its sessions (cascade) and its deletion event.
import type { Locale } from "../i18n/locales.ts";
import type { AuditEntry } from "./audit.ts";

export interface UserRecord {
  id: string;
  email: string;
  hashedPassword: string;
  fullName: string | null;
  isActive: boolean;
  isAdmin: boolean;
  createdAt: string;
  updatedAt: string;
  /** When the password last changed or the account's sessions were last ended (information only). */
  credentialsChangedAt: string | null;
  /** Random; replaced by every credential change and e-mail change. Access tokens carry it (guard.ts). */
  credentialStamp: string;
  /** When the owner of the current e-mail proved it (a verification or reset link); null while unverified. */
  emailVerifiedAt: string | null;
  /** The language the user chose for pages and mails (issue 37); null when never chosen. */
  locale: Locale | null;
}

export interface NewUser {
  email: string;
  hashedPassword: string;
  fullName?: string | null;
  isActive?: boolean;
  isAdmin?: boolean;
  emailVerifiedAt?: string | null;
  locale?: Locale | null;
}

/** Only the fields present change; updatedAt (and the credential stamp on an e-mail change) are set by the store. */
export type UserChanges = Partial<
  Pick<UserRecord, "email" | "hashedPassword" | "fullName" | "isActive" | "isAdmin" | "emailVerifiedAt" | "locale">
>;

export interface WriteOptions {
  /**
   * Ends every session of the user and every access token issued to it so far, in the same
   * transaction as the changes: a new credential stamp, credentials-changed time now, all sessions
   * revoked, pending second-factor challenges (mfa_token) deleted.
   */
  endSessions?: boolean;
  events?: readonly AuditEntry[];
}

/**
 * The sign-in a write that adds a way in speaks for (sql/signed-in.ts): the credential stamp its
 * access token carried, or, for a sign-in begun then and finished later (a link started from the
 * security page), the time it began (no ending of every session since).
 */
export type SignedInAs = { credentialStamp: string } | { unchangedSince: string };

export interface UserQuery {
  limit: number;
  /** Keyset pagination: only users whose id sorts after this one. */
  after?: string;
  email?: string;
  isActive?: boolean;
  isAdmin?: boolean;
  /** Issue 35: users whose normalised e-mail begins with this (any case), found as a range, not a LIKE. */
  emailPrefix?: string;
  /** Users whose full name contains this, ignoring ASCII case. */
  name?: string;
  /** Users whose address is verified (true) or not (false). */
  isVerified?: boolean;
  /** Users with (true) or without (false) a confirmed authenticator app or a passkey. */
  hasSecondFactor?: boolean;
  /** Users with an identity linked at this upstream provider. */
  upstreamProvider?: string;
}

/**
 * Tells who listens when a user's record changes, so that a cache of users (the token check's) can
 * drop what went stale. Changes made through this store are told synchronously after their commit;
 * changes made by other processes (other instances, the CLI) arrive through the backend's own channel
 * (PostgreSQL's LISTEN/NOTIFY; SQLite's data_version). While that channel is not known to work,
 * usable() is false and a cache must not be used.
 */
export interface UserChangeFeed {
  /** Whether every committed change reaches the listeners now. May tell listeners "anything changed" first. */
  usable(): boolean;
  /** The listener gets the id of the user that changed, or null when anything may have changed. */
  subscribe(listener: (userId: string | null) => void): void;
}

/** The accounts themselves; normalizeEmail applies in every verb that takes an address. */
export interface UserVerbs {
  /** Changes to users, for caches (see UserChangeFeed). */
  readonly userChanges: UserChangeFeed;
  /** The user whose normalised e-mail equals the normalised argument, if any. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  findById(id: string): Promise<UserRecord | undefined>;
  /** Users in id order (UUIDv7: creation order), filtered, at most `limit`. */
  list(query: UserQuery): Promise<UserRecord[]>;
  countActiveAdmins(): Promise<number>;
  /** Inserts a user (with its events); throws EmailTaken when the normalised e-mail exists. */
  create(user: NewUser, options?: Pick<WriteOptions, "events">): Promise<UserRecord>;
  /** Applies the changes; undefined when no such user. Throws EmailTaken or LastActiveAdmin. */
  update(id: string, changes: UserChanges, options?: WriteOptions): Promise<UserRecord | undefined>;
  /** Deletes (with its events); false when no such user. Throws LastActiveAdmin. */
  remove(id: string, options?: Pick<WriteOptions, "events">): Promise<boolean>;
}
