// The storage boundary. Routes and auth speak these domain verbs only.
// sql-store.ts writes each verb once, over either database (db.ts): it
// applies normalizeEmail in every verb and keeps the one invariant that
// needs a transaction: a change never removes the last active admin
// (LastActiveAdmin); each backend (sqlite.ts, postgres.ts) maps its own
// unique-violation code to EmailTaken. open.ts picks the backend from the
// parsed DATABASE_URL, never by guessing.
//
// Every verb that writes more than one row is one transaction, so a crash,
// a cut connection or a failed statement leaves all of it or none of it:
// - create: the user and its sign-up event;
// - update: the changes, with endSessions the new credential stamp, the
//   credentials-changed time and the revocation of every session (password
//   change, reset, deactivation, operator actions), and its audit events
//   (role change, deactivation, password change);
// - remove: the user, its sessions (cascade) and its deletion event;
// - createSession: the session with its first refresh token, the ending of
//   the oldest sessions past the per-user cap, and the login event with one
//   event per session ended; the known device and its new-device notice;
// - any verb's audit event that carries a notice: the event and its mail;
// - rotateRefreshToken: spending the presented generation and storing the
//   next, with the session's last use; it answers with the owner, so no
//   read follows the commit;
// - revokeSession, revokeSessionByToken: the revocation and its event;
// - every verb that ends sessions (the two above, update with endSessions,
//   remove, createSession past the cap, revokeConsent, removeClient): the
//   client sessions begun in an ended browser session end too (each with
//   its event), and the back-channel logouts owed are queued
//   (store/backchannel-logouts.ts), in the same transaction;
// - addPasskey, renamePasskey, removePasskey, recordPasskeyUse: the change
//   to the passkey and its audit event (addPasskey: with a first factor's
//   recovery codes, replacing any spent ones);
// - confirmTotp: the confirmation, the accepted time step, the new recovery
//   codes (replacing any old ones) and the events;
// - acceptTotpStep, useRecoveryCode, removeTotp, replaceRecoveryCodes,
//   resetSecondFactors: the change and its events.
// - proveAddress: what a proof of the address ends of an account (password,
//   passkeys, second factors, upstream identities, apps' consents, pending
//   e-mail changes, sessions with their back-channel logouts, the credential
//   stamp), the verification, the identity it links, and its audit events.
// - createWebhookEndpoint, updateWebhookEndpoint, rotateWebhookSecret,
//   removeWebhookEndpoint: the change and its audit events;
//   completeWebhookMessage: the attempt's log entry and its outcome.
// Every write that records audit events also writes, in its transaction,
// the webhook events they name (webhooks/events.ts) for each enabled,
// subscribed endpoint (store/webhook-events.ts): the webhook outbox.
// A verb that has committed answers from what it wrote: nothing after the
// commit can turn its success into a failure.

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
}

export interface NewUser {
  email: string;
  hashedPassword: string;
  fullName?: string | null;
  isActive?: boolean;
  isAdmin?: boolean;
  emailVerifiedAt?: string | null;
}

/** Only the fields present change; updatedAt (and the credential stamp on an e-mail change) are set by the store. */
export type UserChanges = Partial<
  Pick<UserRecord, "email" | "hashedPassword" | "fullName" | "isActive" | "isAdmin" | "emailVerifiedAt">
>;

/** An audit event written in the same transaction as the change it describes. */
export interface AuditEntry {
  type: AuditEventType;
  outcome: string;
  clientAddress: string | null;
  /** Defaults to the user the write is about (created, changed, removed, or the session's owner). */
  userId?: string | null;
  /** A security notification about this event, queued in the outbox in the same transaction. */
  notice?: NewOutboxMessage;
}

export interface WriteOptions {
  /**
   * Ends every session of the user and every access token issued to it so far, in the same
   * transaction as the changes: a new credential stamp, credentials-changed time now, all sessions
   * revoked, pending second-factor challenges (mfa_token) deleted.
   */
  endSessions?: boolean;
  events?: readonly AuditEntry[];
}

/** A signed-in session: one family of refresh tokens; only its current generation is valid. */
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
  /** How the user authenticated (RFC 8176 values); ["pwd"] for sessions from before second factors. */
  amr: string[];
}

export interface NewSession {
  /** Chosen by the caller, because the first refresh token names it. */
  id: string;
  userId: string;
  expiresAt: string;
  clientAddress: string | null;
  userAgent: string | null;
  /** The first refresh token of the session (generation 0; its hash only). */
  tokenHash: string;
  tokenExpiresAt: string;
  /** How the user authenticated; ["pwd"] when left out. */
  amr?: readonly string[];
}

/**
 * The device a sign-in comes from (auth/devices.ts), checked in the session's transaction against the
 * user's known devices: one indexed read for a known one, written again only when its last-seen time is
 * older than `refreshBefore`; a new one is remembered (the least recently seen past `maxPerUser` are
 * forgotten) and, when the user already had known devices, `notice` is queued.
 */
export interface DeviceSighting {
  /** The device's keyed hashes, one per key in use; the first is the current key's, the one stored. */
  hashes: readonly string[];
  refreshBefore: string;
  maxPerUser: number;
  notice?: NewOutboxMessage;
}

/** What a presented refresh token claims to be: a generation of a session, and its hash. */
export interface PresentedRefreshToken {
  sessionId: string;
  generation: number;
  tokenHash: string;
}

export type Rotation =
  | { outcome: "rotated"; session: SessionRecord; user: UserRecord }
  /**
   * An older generation of a live session: a reuse, unless within the grace window of its rotation.
   * spentAt is when the presented generation was replaced (the epoch when that is no longer known).
   */
  | { outcome: "spent"; sessionId: string; userId: string; spentAt: string }
  /** Unknown, expired, not the current hash, or its session ended. */
  | { outcome: "invalid" };

export interface SessionPage {
  limit: number;
  /** Keyset pagination, newest first: only sessions whose id sorts before this one. */
  before?: string;
}

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
  "passkey",
  "second_factor",
  "webhook",
  // An OAuth client registered, changed, given a new secret or deleted; about the admin who did it.
  "oauth_client",
  "oidc",
  // Sign-in with an upstream provider (issue 25): sign-ins, links and unlinks of identities.
  "upstream",
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
  /**
   * Starts a session; when the user then has more than `maxPerUser` live sessions, the oldest end
   * (each recorded as a session_revocation with outcome session_limit). With `device`, the device is
   * checked and remembered (see DeviceSighting); newDeviceNoticed says a notice was queued. With
   * `client`, the session is an OpenID Connect client's (bound to it here), and the cap counts only
   * that client's sessions of the user; without, only the user's sessions of no client. One
   * transaction.
   */
  createSession(
    session: NewSession,
    options: {
      maxPerUser: number;
      events?: readonly AuditEntry[];
      device?: DeviceSighting;
      client?: Omit<ClientSessionRecord, "sessionId">;
    },
  ): Promise<SessionRecord & { newDeviceNoticed?: boolean }>;
  /**
   * Atomically replaces the presented generation with its successor (generation + 1); only one of
   * several concurrent rotations of one token can win. `now` and the expiries are ISO timestamps.
   */
  rotateRefreshToken(
    presented: PresentedRefreshToken,
    successor: { tokenHash: string; expiresAt: string },
    now: string,
    client: { address: string | null; userAgent: string | null },
  ): Promise<Rotation>;
  findSession(id: string): Promise<SessionRecord | undefined>;
  /** Live sessions of a user (not revoked, not expired, not idle past their refresh), newest first. */
  listSessions(userId: string, now: string, page: SessionPage): Promise<SessionRecord[]>;
  /** Revokes a live session; false when it was not live. */
  revokeSession(id: string, now: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /** Revokes the session whose current refresh token this is; its owner's id, or undefined when none. */
  revokeSessionByToken(
    presented: PresentedRefreshToken,
    now: string,
    events?: readonly AuditEntry[],
  ): Promise<string | undefined>;
  /**
   * Deletes up to `limit` sessions that have ended (expired, idle or revoked), and as many expired
   * second-factor challenges and WebAuthn challenges; answers how many.
   */
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

/**
 * The security notifications (mail/notices.ts): each tells a person that something happened to their
 * account, and each can be switched off by the operator (SECURITY_NOTIFICATIONS). email_changed goes to
 * the previous address.
 */
export const NOTICE_KINDS = [
  "password_changed",
  "password_reset_completed",
  "email_changed",
  "new_device",
  "second_factor_added",
  "second_factor_removed",
  "passkey_added",
  "passkey_removed",
  "recovery_code_used",
  "recovery_codes_regenerated",
  "account_deactivated",
] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

export type MailKind = "password_reset" | "email_verification" | "upstream_link" | NoticeKind;
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

/**
 * The sign-in a write that adds a way in speaks for (store/signed-in.ts): the credential stamp its
 * access token carried, or, for a sign-in begun then and finished later (a link started from the
 * security page), the time it began (no ending of every session since).
 */
export type SignedInAs = { credentialStamp: string } | { unchangedSince: string };

/** A passkey (WebAuthn credential) of a user. */
export interface PasskeyRecord {
  /** Ours: a UUIDv7, the id in /me/passkeys/{id}. */
  id: string;
  userId: string;
  /** The authenticator's credential id, base64url; unique across all users. */
  credentialId: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  /** The signature counter last seen (0 for authenticators that do not count). */
  counter: number;
  transports: string[];
  name: string;
  /** "singleDevice" or "multiDevice" (synced passkeys). */
  deviceType: string;
  backedUp: boolean;
  aaguid: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export type NewPasskey = Omit<PasskeyRecord, "id" | "createdAt" | "lastUsedAt">;

/** What a stored WebAuthn challenge is for: adding a passkey, signing in with one, or a second factor. */
export type WebAuthnPurpose = "registration" | "login" | "second_factor";

export interface WebAuthnChallengeRecord {
  id: string;
  /** SHA-256 of the challenge, base64url: the challenge itself is never stored. */
  challengeHash: string;
  purpose: WebAuthnPurpose;
  /** Whose ceremony it is (registration, second factor); null for a discoverable sign-in. */
  userId: string | null;
  createdAt: string;
  expiresAt: string;
}

export interface PasskeyStore {
  /**
   * Stores a passkey with its events (one transaction) and, when `recoveryCodeHashes` is given, the
   * user's recovery codes become exactly these in the same transaction; undefined, with nothing written,
   * when its credential id is registered already (to this user or another). With `signedIn`, only while
   * that sign-in is live (else CredentialsChanged, nothing written).
   */
  addPasskey(
    passkey: NewPasskey,
    events?: readonly AuditEntry[],
    recoveryCodeHashes?: readonly string[],
    signedIn?: SignedInAs,
  ): Promise<PasskeyRecord | undefined>;
  /** A user's passkeys, oldest first. */
  listPasskeys(userId: string): Promise<PasskeyRecord[]>;
  countPasskeys(userId: string): Promise<number>;
  findPasskeyByCredentialId(credentialId: string): Promise<PasskeyRecord | undefined>;
  /** Renames one of the user's passkeys (with its events); undefined when the user has no such passkey. */
  renamePasskey(
    userId: string,
    id: string,
    name: string,
    events?: readonly AuditEntry[],
  ): Promise<PasskeyRecord | undefined>;
  /** Removes one of the user's passkeys (with its events); false when the user has no such passkey. */
  removePasskey(userId: string, id: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /**
   * Records a verified use: the new counter and backup state, last used `at`, and the events, in one
   * transaction, only if the stored counter is still `previousCounter` (compare and set): false, with
   * nothing written, when another use got there first (a cloned authenticator racing the original).
   */
  recordPasskeyUse(
    id: string,
    use: { previousCounter: number; counter: number; backedUp: boolean; at: string },
    events?: readonly AuditEntry[],
  ): Promise<boolean>;
  saveWebAuthnChallenge(challenge: Omit<WebAuthnChallengeRecord, "createdAt">): Promise<void>;
  /**
   * Spends a challenge: deletes it and answers it, once (of concurrent takers only one gets it);
   * undefined when unknown, spent, expired at `now`, or of another purpose.
   */
  takeWebAuthnChallenge(
    key: { id: string } | { challengeHash: string },
    purpose: WebAuthnPurpose,
    now: string,
  ): Promise<WebAuthnChallengeRecord | undefined>;
}

/** A user's authenticator-app factor: pending until confirmed with a valid code. */
export interface TotpFactor {
  userId: string;
  /** The base32 secret, sealed (auth/mfa-keys.ts); never stored in clear. */
  sealedSecret: string;
  createdAt: string;
  confirmedAt: string | null;
  /** The RFC 6238 time step of the last accepted code; codes at or before it are refused. */
  lastStep: number | null;
}

/** Which second factors a user has: the token endpoint asks for one when any of them is there. */
export interface SecondFactors {
  /** A confirmed authenticator app. */
  totp: boolean;
  recoveryCodesRemaining: number;
  /** Registered passkeys; the token endpoint asks for a second factor when this is above 0. */
  passkeys: number;
}

/** A pending second-factor challenge (the mfa_token of the token endpoint), stored only as its hash. */
export interface MfaChallenge {
  tokenHash: string;
  userId: string;
  createdAt: string;
  expiresAt: string;
  spentAt: string | null;
  failures: number;
  /** RFC 8176: "pwd" (the password grant) or "fed" (an upstream sign-in). */
  firstFactor: string;
}

export interface SecondFactorStore {
  secondFactorsOf(userId: string): Promise<SecondFactors>;
  findTotp(userId: string): Promise<TotpFactor | undefined>;
  /**
   * Starts (or restarts) a pending enrolment with a new sealed secret; false, changing nothing, when
   * the user already has a confirmed one.
   */
  startTotp(userId: string, sealedSecret: string): Promise<boolean>;
  /**
   * One transaction: confirms the pending factor with the step of the code that proved it and,
   * when `recoveryCodeHashes` is given, replaces the user's recovery codes with them; records the
   * events. False, changing nothing, when there is no pending factor or the step is not after the last.
   */
  confirmTotp(
    userId: string,
    step: number,
    recoveryCodeHashes: readonly string[] | undefined,
    events?: readonly AuditEntry[],
  ): Promise<boolean>;
  /**
   * Atomically moves the confirmed factor's last step to `step` if it is later (one of several
   * concurrent uses of one code wins; a replay loses), with the events. False when it is not.
   */
  acceptTotpStep(userId: string, step: number, events?: readonly AuditEntry[]): Promise<boolean>;
  /** One transaction: deletes the TOTP factor (and, with dropRecoveryCodes, the recovery codes), with the events. */
  removeTotp(userId: string, options: { dropRecoveryCodes: boolean; events?: readonly AuditEntry[] }): Promise<boolean>;
  /** One transaction: the user's recovery codes become exactly these (hashes), with the events. */
  replaceRecoveryCodes(userId: string, codeHashes: readonly string[], events?: readonly AuditEntry[]): Promise<void>;
  /**
   * Spends the unused recovery code whose hash is one of `candidateHashes` (one per key in use),
   * with the events; false when none is there unused. Only one of concurrent uses wins.
   */
  useRecoveryCode(
    userId: string,
    candidateHashes: readonly string[],
    now: string,
    events?: readonly AuditEntry[],
  ): Promise<boolean>;
  /**
   * One transaction: deletes every second factor of the user (TOTP, recovery codes; the passkeys
   * credentials) and pending challenges, with the events. The admin reset.
   */
  resetSecondFactors(userId: string, events?: readonly AuditEntry[]): Promise<void>;
  createMfaChallenge(challenge: {
    tokenHash: string;
    userId: string;
    expiresAt: string;
    firstFactor?: string;
  }): Promise<void>;
  findMfaChallenge(tokenHash: string): Promise<MfaChallenge | undefined>;
  /** Counts a wrong code against a live challenge and spends it at `maxFailures`; answers the count. */
  failMfaChallenge(tokenHash: string, maxFailures: number, now: string): Promise<number>;
  /** Spends a live challenge (unspent, not expired); its user's id, or undefined when another use won. */
  spendMfaChallenge(tokenHash: string, now: string): Promise<string | undefined>;
  /** For `mfa reseal`: every sealed TOTP secret. */
  listTotpSecrets(): Promise<{ userId: string; sealedSecret: string }[]>;
  /** For `mfa reseal`: replaces a sealed secret if it is still `previous`; false otherwise. */
  replaceTotpSecret(userId: string, previous: string, next: string): Promise<boolean>;
}

/** How a client authenticates at the token endpoint (RFC 7591 section 2); `none`: a public client. */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

/** A registered OAuth client (relying party): its RFC 7591 metadata and its secrets' hashes. */
export interface ClientRecord {
  /** The client_id: a UUIDv7. */
  id: string;
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  responseTypes: string[];
  tokenEndpointAuthMethod: ClientAuthMethod;
  /** Space-separated scopes the client may ask for. */
  scope: string;
  backchannelLogoutUri: string | null;
  /** The service's own app: no consent screen. */
  firstParty: boolean;
  /**
   * RFC 8707 resource indicators (absolute URIs) the client's access tokens may name as their
   * audience: the resource servers it may call. Set by admins only.
   */
  resources: string[];
  /** A resource server: may introspect every token (RFC 7662 section 4), as INTROSPECTION_CLIENTS do. Admins only. */
  resourceServer: boolean;
  /** By an admin (/clients, the CLI) or through dynamic registration (RFC 7591). */
  registeredBy: "admin" | "dynamic";
  /** SHA-256 of the secret, base64url; null for a public client. */
  secretHash: string | null;
  /** The secret before the last rotation, valid until previousSecretExpiresAt. */
  previousSecretHash: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type ClientMetadataRecord = Pick<
  ClientRecord,
  | "name"
  | "redirectUris"
  | "postLogoutRedirectUris"
  | "grantTypes"
  | "responseTypes"
  | "tokenEndpointAuthMethod"
  | "scope"
  | "backchannelLogoutUri"
  | "firstParty"
  | "resources"
  | "resourceServer"
>;

export type NewClient = ClientMetadataRecord & Pick<ClientRecord, "registeredBy" | "secretHash">;

export interface ClientStore {
  /** Inserts a client (a new id) with its events. */
  createClient(client: NewClient, events?: readonly AuditEntry[]): Promise<ClientRecord>;
  findClient(id: string): Promise<ClientRecord | undefined>;
  /** Clients in id order (creation order), at most `limit`; `publicOnly`: those without a secret. */
  listClients(query: { limit: number; after?: string; publicOnly?: boolean }): Promise<ClientRecord[]>;
  /** Sets the metadata given (with its events); undefined when no such client. */
  updateClient(
    id: string,
    changes: Partial<ClientMetadataRecord>,
    events?: readonly AuditEntry[],
  ): Promise<ClientRecord | undefined>;
  /**
   * A confidential client's new secret: the current one becomes the previous one, valid until
   * `previousExpiresAt` (null: it stops at once). Undefined when no such client or it has no secret.
   */
  rotateClientSecret(
    id: string,
    secretHash: string,
    previousExpiresAt: string | null,
    events?: readonly AuditEntry[],
  ): Promise<ClientRecord | undefined>;
  /**
   * Deletes (with its events), forgetting its consents and ending its sessions (each a
   * session_revocation with outcome client_deleted, and its logout token), in one transaction;
   * false when no such client.
   */
  removeClient(id: string, events?: readonly AuditEntry[]): Promise<boolean>;
}

export interface UserQuery {
  limit: number;
  /** Keyset pagination: only users whose id sorts after this one. */
  after?: string;
  email?: string;
  isActive?: boolean;
  isAdmin?: boolean;
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

/** A webhook endpoint (issue 26). Its secrets are sealed (webhooks/secrets.ts), never stored in clear. */
export interface WebhookEndpointRecord {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  enabled: boolean;
  /** Why the service turned it off (deliveries kept failing); null when enabled or turned off by an admin. */
  disabledReason: string | null;
  sealedSecret: string;
  /** The secret before the last rotation, which still signs until previousSecretUntil. */
  previousSealedSecret: string | null;
  previousSecretUntil: string | null;
  createdAt: string;
  updatedAt: string;
}

export type NewWebhookEndpoint = Pick<
  WebhookEndpointRecord,
  "url" | "description" | "eventTypes" | "enabled" | "sealedSecret"
>;

/** Only the fields present change; enabling clears disabledReason. */
export type WebhookEndpointChanges = Partial<
  Pick<WebhookEndpointRecord, "url" | "description" | "eventTypes" | "enabled" | "disabledReason">
>;

/** An event that a write publishes: written in the write's transaction, for each subscribed endpoint. */
export interface WebhookEvent {
  id: string;
  type: string;
  userId: string;
  /** The exact body every delivery of it sends. */
  payload: string;
}

export type WebhookMessageStatus = "pending" | "delivered" | "failed";

/** One event on its way to one endpoint (the webhook outbox). */
export interface WebhookMessage {
  endpointId: string;
  eventId: string;
  userId: string;
  type: string;
  payload: string;
  status: WebhookMessageStatus;
  /** Attempts so far, this claim included. */
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** One delivery attempt, as the delivery log shows it. Never the secret or the signature. */
export interface WebhookAttempt {
  id: string;
  endpointId: string;
  eventId: string;
  type: string;
  attempt: number;
  /** The receiver's status code; null when no answer came (refused address, timeout, connection error). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  createdAt: string;
}

export interface WebhookStore {
  createWebhookEndpoint(endpoint: NewWebhookEndpoint, events?: readonly AuditEntry[]): Promise<WebhookEndpointRecord>;
  /** In id (creation) order, keyset pagination after `after`. */
  listWebhookEndpoints(page: { limit: number; after?: string }): Promise<WebhookEndpointRecord[]>;
  findWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** Applies the changes with their events; undefined when no such endpoint. */
  updateWebhookEndpoint(
    id: string,
    changes: WebhookEndpointChanges,
    events?: readonly AuditEntry[],
  ): Promise<WebhookEndpointRecord | undefined>;
  /** The new sealed secret signs; the current one keeps signing until `previousUntil`. */
  rotateWebhookSecret(
    id: string,
    sealedSecret: string,
    previousUntil: string,
    events?: readonly AuditEntry[],
  ): Promise<WebhookEndpointRecord | undefined>;
  /** Deletes the endpoint, its queued events and its log (with the events); false when no such endpoint. */
  removeWebhookEndpoint(id: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /**
   * Claims up to `limit` due messages of enabled endpoints for `owner` until `leaseUntil`, counting an
   * attempt on each; never a message while an earlier one of the same user for the same endpoint is
   * still pending (delivery in order per user). Exclusive across instances, like claimMail.
   */
  claimWebhookMessages(owner: string, now: string, leaseUntil: string, limit: number): Promise<WebhookMessage[]>;
  /** Records an attempt in the log and, if `owner` still holds the lease, its outcome. One transaction. */
  completeWebhookMessage(
    message: Pick<WebhookMessage, "endpointId" | "eventId">,
    owner: string,
    outcome: DeliveryOutcome,
    attempt: Omit<WebhookAttempt, "id" | "createdAt" | "endpointId" | "eventId">,
  ): Promise<void>;
  /** The attempts of one endpoint, newest first; keyset pagination before `before`. */
  listWebhookAttempts(endpointId: string, page: { limit: number; before?: string }): Promise<WebhookAttempt[]>;
  /** Puts one event back in the endpoint's queue, due now, with its attempts reset; undefined when unknown. */
  redeliverWebhookEvent(endpointId: string, eventId: string, now: string): Promise<WebhookMessage | undefined>;
  /** Deletes up to `limit` delivered messages and attempts older than `before`; answers how many. */
  pruneWebhookRecords(before: string, limit: number): Promise<number>;
}

/** An authorization code as stored (its hash only), bound to everything the token request must match. */
export interface AuthorizationCodeRecord {
  codeHash: string;
  clientId: string;
  userId: string;
  /** The browser session the user approved in; the code dies with it. */
  browserSessionId: string;
  redirectUri: string;
  /** The PKCE S256 challenge. */
  codeChallenge: string;
  nonce: string | null;
  /** Space-separated granted scopes. */
  scope: string;
  createdAt: string;
  expiresAt: string;
  redeemedAt: string | null;
  /** The session the redemption started, revoked when the code is presented again. */
  issuedSessionId: string | null;
}

export type NewAuthorizationCode = Omit<AuthorizationCodeRecord, "redeemedAt" | "issuedSessionId">;

export type CodeRedemption =
  | { outcome: "redeemed"; code: AuthorizationCodeRecord }
  /** Presented before: what its first redemption issued, to revoke. */
  | { outcome: "replayed"; code: AuthorizationCodeRecord }
  | { outcome: "unknown" };

/** A session started by a client's code grant: its refresh token is that client's only. */
export interface ClientSessionRecord {
  sessionId: string;
  clientId: string;
  scope: string;
  browserSessionId: string;
}

export interface ConsentRecord {
  clientId: string;
  /** Space-separated scopes granted so far. */
  scope: string;
  grantedAt: string;
}

/** OpenID Connect (issue 24): codes, consents and client-bound sessions. */
export interface OidcStore {
  saveAuthorizationCode(code: NewAuthorizationCode): Promise<void>;
  /** Spends the code at once, whatever the caller then finds wrong with it: a code works once. */
  redeemAuthorizationCode(codeHash: string, at: string): Promise<CodeRedemption>;
  /** Records what the redemption issued (the client session), for a replay to revoke. */
  recordCodeIssue(codeHash: string, sessionId: string): Promise<void>;
  findClientSession(sessionId: string): Promise<ClientSessionRecord | undefined>;
  findConsent(userId: string, clientId: string): Promise<ConsentRecord | undefined>;
  /** Remembers the scopes (replacing the earlier grant's, which the caller merged in). */
  grantConsent(userId: string, clientId: string, scope: string, at: string): Promise<void>;
  listConsents(userId: string): Promise<ConsentRecord[]>;
  /**
   * Forgets the grant and ends the client's sessions of this user (each a session_revocation with
   * outcome consent_revoked, and its logout token), with `events`, in one transaction; false when
   * there was no grant.
   */
  revokeConsent(userId: string, clientId: string, at: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /** Deletes up to `limit` codes that expired before `before`. */
  purgeAuthorizationCodes(before: string, limit: number): Promise<number>;
}

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

export interface UpstreamStore {
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

export interface AddressProofStore {
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

/** A logout token owed to a relying party (OpenID Connect Back-Channel Logout 1.0), as queued. */
export interface BackchannelLogoutMessage {
  id: string;
  clientId: string;
  /** The token's sub. */
  userId: string;
  /** The token's sid: the browser session that ended, or in which the client's session began. */
  sid: string;
  /** The client's backchannel_logout_uri when the session ended. */
  uri: string;
  /** How the client was registered: a dynamically registered one never reaches a private address. */
  registeredBy: "admin" | "dynamic";
  status: MailStatus;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  sentAt: string | null;
}

/**
 * The back-channel logout outbox. Logouts are queued by the verbs that end sessions, in their
 * transaction (revokeSession, revokeSessionByToken, update with endSessions, remove, createSession
 * past the cap, revokeConsent, removeClient): one per client with a backchannel_logout_uri and sid.
 */
export interface BackchannelLogoutStore {
  /** As claimMail. */
  claimBackchannelLogouts(
    owner: string,
    now: string,
    leaseUntil: string,
    limit: number,
  ): Promise<BackchannelLogoutMessage[]>;
  /** As completeMail. */
  completeBackchannelLogout(id: string, owner: string, outcome: DeliveryOutcome): Promise<void>;
  /** Newest first. */
  listBackchannelLogouts(query: { status?: MailStatus; limit: number }): Promise<BackchannelLogoutMessage[]>;
  /** Deletes up to `limit` logouts sent or given up before `before`; answers how many. */
  pruneBackchannelLogouts(before: string, limit: number): Promise<number>;
  /** Calls `listener` shortly after this store queued logouts (to wake the delivery worker). */
  onBackchannelLogouts(listener: () => void): void;
}

export interface UserStore
  extends SessionStore,
    BackchannelLogoutStore,
    OidcStore,
    UpstreamStore,
    AddressProofStore,
    AuditStore,
    AccountTokenStore,
    OutboxStore,
    SecondFactorStore,
    PasskeyStore,
    WebhookStore,
    ClientStore {
  /** Changes to users, for caches (see UserChangeFeed). */
  readonly userChanges: UserChangeFeed;
  /** Calls `listener` shortly after this store published webhook events (to wake the delivery worker). */
  onWebhookEvents(listener: () => void): void;
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
  /** Resolves when the database answers; throws StoreUnavailable otherwise (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
