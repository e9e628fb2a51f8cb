// Account recovery (store.ts): the single-use links mailed to an address
// (reset, verification), each stored as its hash and issued with its mail in
// one transaction, and proveAddress: what a proof of the address ends of the
// account (password, passkeys, second factors, upstream identities, apps'
// consents, pending e-mail changes, sessions with their back-channel
// logouts, the credential stamp), the verification, the identity it links
// and its audit events, in one transaction.
import type { AuditEntry } from "./audit.ts";
import type { NewOutboxMessage } from "./mail.ts";
import type { NewUpstreamIdentity } from "./upstream.ts";
import type { UserRecord } from "./users.ts";

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

export type Redemption =
  | { outcome: "redeemed"; token: AccountTokenRecord; user: UserRecord }
  | { outcome: "spent" | "expired" | "invalid" };

/**
 * What a proof of the address (a password reset, a link mailed to the address) does to the account:
 * decided by auth/address-proof.ts on the account as the proving transaction reads it.
 */
export interface AddressProofPlan {
  /** The new password hash ("" for none, which matches no password); undefined keeps the password. */
  hashedPassword?: string;
  /** The address becomes verified now. */
  markVerified: boolean;
  /**
   * Ends every session (with their apps' sessions and back-channel logouts), every access token issued
   * so far (a new credential stamp), as update's endSessions does; also pending second-factor challenges,
   * upstream sign-in tickets and links started from the security page.
   */
  endSessions: boolean;
  /**
   * Passkeys, upstream identities and apps' consents created (granted) before this time end; "all":
   * every one; null: none.
   */
  endWaysInBefore: string | "all" | null;
  /** The authenticator app (pending or confirmed) and the recovery codes end. */
  endSecondFactors: boolean;
  /** Pending e-mail changes end: live verification links to another address than the account's. */
  endEmailChanges: boolean;
}

/** What a proof ended, for its audit event. */
export interface EndedWaysIn {
  /** A password was there and is gone (not when a reset replaced it). */
  password: boolean;
  passkeys: number;
  identities: number;
  /** Consents given to OpenID Connect apps. */
  consents: number;
  /** An authenticator app or recovery codes were there and are gone. */
  secondFactors: boolean;
  emailChanges: number;
  sessions: number;
}

export type AddressProofResult =
  | { outcome: "proven"; user: UserRecord; ended: EndedWaysIn }
  /** No such user, or the plan said no (the address is no longer the account's, the account inactive): nothing written. */
  | { outcome: "refused" }
  /** The identity to link belongs to another account: nothing written. */
  | { outcome: "elsewhere" };

/** Reset and verification links, and what a proof of the address does to the account. */
export interface RecoveryVerbs {
  /**
   * One transaction: spends the user's live tokens of the same purpose (a newer link replaces older
   * ones), stores the new token, queues the mail that carries it and records `events` (the request).
   */
  issueAccountToken(token: NewAccountToken, mail: NewOutboxMessage, events?: readonly AuditEntry[]): Promise<void>;
  findAccountToken(tokenHash: string): Promise<AccountTokenRecord | undefined>;
  /**
   * One transaction: spends a live token of this purpose together with every other live token of its
   * user and purpose. Only one of several concurrent redemptions of a token wins.
   */
  redeemAccountToken(tokenHash: string, purpose: AccountTokenPurpose, now: string): Promise<Redemption>;
  /**
   * One transaction: redeems a verification token, makes its address the user's verified e-mail,
   * queues `notice(previous e-mail)` (when there is one) if the address changed, and records `event(changed)`.
   * Throws EmailTaken.
   */
  confirmEmail(
    tokenHash: string,
    now: string,
    notice: (previousEmail: string, user: UserRecord) => NewOutboxMessage | undefined,
    event: (emailChanged: boolean) => AuditEntry,
  ): Promise<Redemption>;
  /**
   * One transaction, under the user's row lock: `decide` reads the account as it is now and answers
   * the plan (or undefined to refuse); then the plan's endings, the password and verification, the
   * credential stamp, `link` (an upstream identity, kept whatever the plan ends) and `events(ended)`.
   */
  proveAddress(
    userId: string,
    decide: (user: UserRecord) => AddressProofPlan | undefined,
    options: { link?: NewUpstreamIdentity; events: (ended: EndedWaysIn, user: UserRecord) => readonly AuditEntry[] },
  ): Promise<AddressProofResult>;
}
