// Sign-in by mail without a password (issue 37): one row per attempt, named
// by its opaque id (the `attempt` the asking page holds). Only hashes are
// kept: of the link's token (SHA-256), of the 6-digit code (an HMAC keyed
// from the signing material and the attempt id, so a copy of the database
// alone cannot try the million codes), and of the cookie that binds the
// attempt to the browser that asked. Its life is conditional UPDATEs, so of
// two redemptions (or two instances) exactly one wins: a wrong code counts
// (five end the attempt); a right one spends it (used_at), once.
import type { NewOutboxMessage } from "./mail.ts";

export interface MailSignInRecord {
  id: string;
  /** The address asked for, normalised; it may belong to no account. */
  email: string;
  bindingHash: string;
  tokenHash: string;
  codeHash: string;
  wrongCodes: number;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

export type NewMailSignIn = Omit<MailSignInRecord, "wrongCodes" | "createdAt" | "usedAt">;

export interface MailSignInVerbs {
  /** One transaction: the attempt and, when there is one, the mail that carries its link and code. */
  createMailSignIn(attempt: NewMailSignIn, mail: NewOutboxMessage | undefined): Promise<void>;
  findMailSignIn(id: string): Promise<MailSignInRecord | undefined>;
  /** Counts a wrong code (or token) against a live attempt; answers the new count (undefined: not live). */
  countWrongMailSignIn(id: string): Promise<number | undefined>;
  /**
   * Spends a live attempt (unused, unexpired, fewer than `maxWrong` wrong codes) in one conditional
   * UPDATE; undefined when another redemption won, or it is no longer live.
   */
  useMailSignIn(id: string, now: string, maxWrong: number): Promise<MailSignInRecord | undefined>;
  /** Deletes up to `limit` attempts that expired before `before`. */
  purgeMailSignIns(before: string, limit: number): Promise<number>;
}
