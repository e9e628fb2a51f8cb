// Sign-in by mail without a password (issue 37): one row per attempt, named
// by its opaque id (the `attempt` the asking page holds). Only hashes are
// kept: of the link's token (SHA-256), of the 6-digit code (an HMAC keyed
// from the signing material and the attempt id, so a copy of the database
// alone cannot try the million codes), and of the cookie that binds the
// attempt to the browser that asked. Its life is conditional UPDATEs, so of
// two redemptions (or two instances) exactly one wins: every code or token
// compared takes a try first (wrong_codes; five end the attempt, however many
// requests arrive at once); a right one gives it back and spends the attempt
// (used_at), once.
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
  /**
   * Takes one try of a live attempt (unused, unexpired, fewer than `maxTries` tries counted) before its
   * code or token is compared, in one conditional UPDATE: however many requests arrive at once, at most
   * `maxTries` answers are ever compared. Undefined when the attempt is not live.
   */
  tryMailSignIn(id: string, now: string, maxTries: number): Promise<MailSignInRecord | undefined>;
  /** A right answer: spends the attempt and gives its try back; undefined when another redemption won. */
  useMailSignIn(id: string, now: string): Promise<MailSignInRecord | undefined>;
  /** Gives a try back without spending the attempt (a right link waiting for its confirmation). */
  releaseMailSignInTry(id: string): Promise<void>;
  /** Deletes up to `limit` attempts that expired before `before`. */
  purgeMailSignIns(before: string, limit: number): Promise<number>;
}
