// Sessions and their refresh tokens (store.ts): one row per signed-in
// session, holding only its current refresh generation's hash. One
// transaction each:
// - createSession: the session with its first refresh token, the ending of
//   the oldest sessions past the per-user cap, and the login event with one
//   event per session ended; the known device and its new-device notice;
// - rotateRefreshToken: spending the presented generation and storing the
//   next, with the session's last use; it answers with the owner, so no
//   read follows the commit;
// - revokeSession, revokeSessionByToken: the revocation and its event.
// Every verb that ends sessions (these, users' update with endSessions and
// remove, createSession past the cap, revokeConsent, removeClient, a proof
// of the address) ends the client sessions begun in an ended browser session
// too (each with its event), and queues the back-channel logouts owed
// (backchannel-logouts.ts), in the same transaction: sql/shared.ts,
// sessionsEnded.
import type { AuditEntry } from "./audit.ts";
import type { ClientSessionRecord } from "./clients.ts";
import type { NewOutboxMessage } from "./mail.ts";
import type { UserRecord } from "./users.ts";

/** A signed-in session: one family of refresh tokens; only its current generation is valid. */
/**
 * A client's session's binding: its client, scope and browser session, and, for a session an
 * authorization code starts, that code's hash, so that the code records what it issued (for a replay to
 * revoke) in the session's own transaction.
 */
export type ClientBinding = Omit<ClientSessionRecord, "sessionId"> & { fromCodeHash?: string };

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
  /** The DPoP key its refresh tokens are bound to (RFC 9449 section 5), null when none. */
  dpopJkt?: string | null;
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
  /** Binds the session's refresh tokens to this DPoP key's thumbprint (RFC 9449 section 5). */
  dpopJkt?: string | undefined;
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
  | { outcome: "invalid" }
  /**
   * The current token of a session bound to a DPoP key, without a proof by that key (`proofSent`:
   * with a proof by another key): left as it is, for its holder of the key.
   */
  | { outcome: "unproven"; proofSent: boolean };

export interface SessionPage {
  limit: number;
  /** Keyset pagination, newest first: only sessions whose id sorts before this one. */
  before?: string;
}

/** Sign-ins and their refresh tokens. */
export interface SessionVerbs {
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
      client?: ClientBinding;
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
    /** The thumbprint of the request's DPoP proof key, if it sent one. */
    proofKey?: string,
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
