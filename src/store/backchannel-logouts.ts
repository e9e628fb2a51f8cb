// The back-channel logout outbox (store.ts; OpenID Connect Back-Channel
// Logout 1.0): the logout tokens owed to relying parties, queued by every
// ending of sessions in its transaction (sessions.ts), delivered by
// oidc/backchannel-logout.ts.
import type { DeliveryOutcome, MailStatus } from "./mail.ts";

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
export interface BackchannelLogoutVerbs {
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
