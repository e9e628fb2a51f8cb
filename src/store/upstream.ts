// Upstream identities (store.ts, issue 25): identities keyed by (issuer,
// subject), never by e-mail; pending sign-ins, tickets and mailed links, each
// spent by one conditional UPDATE, so of two callbacks (or two instances)
// presenting one state or ticket exactly one wins and the other finds
// nothing.
import type { NewOutboxMessage } from "./mail.ts";
import type { SignedInAs } from "./users.ts";

/** An account's identity at an upstream provider (issue 25): (issuer, subject), never the e-mail. */
export interface UpstreamIdentityRecord {
  id: string;
  userId: string;
  /** The configured provider's name (google, github, ...). */
  provider: string;
  issuer: string;
  subject: string;
  /** The address the provider last gave (information only: never used to find the account). */
  email: string | null;
  createdAt: string;
  lastUsedAt: string;
}

export interface NewUpstreamIdentity extends Omit<UpstreamIdentityRecord, "lastUsedAt"> {
  /** The upstream tokens, sealed, when UPSTREAM_KEEP_TOKENS asks for them; null otherwise. */
  sealedTokens: string | null;
}

/** A redirect to a provider not yet answered: what the callback checks. */
export interface UpstreamPendingRecord {
  stateHash: string;
  provider: string;
  /** SHA-256 of the cookie that binds the sign-in to the browser that started it. */
  bindingHash: string;
  nonce: string;
  codeVerifier: string;
  /** The authorization request to go back to, if any. */
  continueTo: string | null;
  /** Set when a signed-in user links another identity. */
  linkUserId: string | null;
  createdAt: string;
  expiresAt: string;
}

/** A finished upstream sign-in (kind sign_in, with its user) or a link awaiting the account's password. */
export interface UpstreamTicketRecord {
  ticketHash: string;
  kind: "sign_in" | "link";
  bindingHash: string;
  userId: string | null;
  provider: string;
  issuer: string;
  subject: string;
  email: string | null;
  sealedTokens: string | null;
  createdAt: string;
  expiresAt: string;
}

/**
 * A link to an existing account waiting for the link mailed to the account's address: the identity it
 * will link, the account, and the browser (binding) and authorization request it belongs to.
 */
export interface UpstreamLinkMailRecord {
  tokenHash: string;
  userId: string;
  bindingHash: string;
  provider: string;
  issuer: string;
  subject: string;
  /** The account's address the link was mailed to. */
  email: string;
  sealedTokens: string | null;
  continueTo: string | null;
  createdAt: string;
  expiresAt: string;
}

/** Sign-in with upstream providers: identities, pending sign-ins, tickets and mailed links. */
export interface UpstreamVerbs {
  savePendingUpstream(pending: UpstreamPendingRecord): Promise<void>;
  /** Spends the pending sign-in of this state at once; undefined when unknown, spent or expired. */
  takePendingUpstream(stateHash: string, at: string): Promise<UpstreamPendingRecord | undefined>;
  saveUpstreamTicket(ticket: UpstreamTicketRecord): Promise<void>;
  /** Spends the ticket at once; undefined when unknown, of another kind, spent or expired. */
  takeUpstreamTicket(
    ticketHash: string,
    kind: UpstreamTicketRecord["kind"],
    at: string,
  ): Promise<UpstreamTicketRecord | undefined>;
  findIdentity(issuer: string, subject: string): Promise<UpstreamIdentityRecord | undefined>;
  listIdentities(userId: string): Promise<UpstreamIdentityRecord[]>;
  /**
   * Links the identity; undefined when (issuer, subject) is linked already (to this user or another).
   * With `signedIn` (a user linking for himself), only while that sign-in is live (else
   * CredentialsChanged, nothing written).
   */
  linkIdentity(identity: NewUpstreamIdentity, signedIn?: SignedInAs): Promise<UpstreamIdentityRecord | undefined>;
  /** Records a sign-in with the identity (its current address, and new sealed tokens when kept). */
  touchIdentity(id: string, email: string | null, sealedTokens: string | null, at: string): Promise<void>;
  unlinkIdentity(userId: string, id: string): Promise<boolean>;
  /**
   * One transaction: the mailed link and its mail in the outbox; the user's older live mailed links
   * are spent (a newer link replaces them).
   */
  issueUpstreamLinkMail(link: UpstreamLinkMailRecord, mail: NewOutboxMessage): Promise<void>;
  /**
   * Spends the mailed link when presented from its browser (binding); undefined when unknown, spent,
   * expired or from another browser, which leaves it unspent for its own browser.
   */
  takeUpstreamLinkMail(tokenHash: string, bindingHash: string, at: string): Promise<UpstreamLinkMailRecord | undefined>;
  /** Deletes up to `limit` pending sign-ins, tickets and mailed links each that expired before `before`. */
  purgeUpstreamPending(before: string, limit: number): Promise<number>;
}
