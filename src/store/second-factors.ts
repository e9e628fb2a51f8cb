// Second factors (store.ts): the authenticator app (TOTP), recovery codes,
// passkeys (WebAuthn credentials, which also sign in on their own), and the
// challenges on the way (WebAuthn ceremonies, the token endpoint's
// mfa_token). One transaction each, the change with its audit events:
// - addPasskey, renamePasskey, removePasskey, recordPasskeyUse (addPasskey:
//   with a first factor's recovery codes, replacing any spent ones);
// - confirmTotp: the confirmation, the accepted time step, the new recovery
//   codes (replacing any old ones) and the events;
// - acceptTotpStep, useRecoveryCode, removeTotp, replaceRecoveryCodes,
//   resetSecondFactors.
import type { AuditEntry } from "./audit.ts";
import type { SignedInAs } from "./users.ts";

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

/** Everything a sign-in may ask for beside the password, and the challenges on the way. */
export interface SecondFactorVerbs {
  // Passkeys and WebAuthn challenges
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
  // The authenticator app, recovery codes and second-factor challenges
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
