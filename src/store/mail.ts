// The mail outbox (store.ts): every message a write sends (a link, a
// security notice) is queued in that write's transaction and delivered later
// by the outbox worker (outbox/worker.ts, mail/sender.ts), which claims due
// messages under a lease. The other aggregates import its types, never the
// reverse: any audit entry may carry a notice; DeliveryOutcome is every
// outbox's.
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

export type MailKind = "password_reset" | "email_verification" | "upstream_link" | "mail_sign_in" | NoticeKind;
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

/** How a claimed delivery ended: sent, to be tried again later, or given up. */
export type DeliveryOutcome =
  | { status: "sent"; at: string }
  | { status: "pending"; nextAttemptAt: string; error: string }
  | { status: "failed"; error: string };

/** The mail outbox: each message written in the transaction of the change it tells of. */
export interface MailVerbs {
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
