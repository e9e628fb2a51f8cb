// Password reset and e-mail verification by link. A link token is 256
// random bits, stored only as its SHA-256, single use and short-lived; a
// newer link of the same kind spends the older ones, and so does a
// successful use. The token and the mail carrying it are written in one
// transaction (the outbox), and the sender is only woken: no request waits
// on SMTP. Requests that name an e-mail (reset, resend) do their lookup and
// writing after the response (see recovery/routes.ts), so the answer reveals
// nothing about which accounts exist, not even through its timing. A reset
// also proves the address: what that ends of the account is the rule of
// auth/address-proof.ts, applied in the reset's one transaction.
import { createHash, randomBytes } from "node:crypto";
import { HttpError } from "../errors.ts";
import type { Locale } from "../i18n/locales.ts";
import type { AccountMails } from "../mail/messages.ts";
import type { Notices } from "../mail/notices.ts";
import type { MailSender } from "../mail/sender.ts";
import type { AuditEntry, Redemption, UserChanges, UserRecord, UserStore } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";
import { endedEvents, passwordResetPlan } from "./address-proof.ts";
import type { PasswordPolicy } from "./password-policy.ts";
import type { PasswordHasher } from "./passwords.ts";
import type { ClientInfo } from "./sessions.ts";

export const INVALID_LINK = "This link is not valid: check that you copied the whole address, or ask for a new link";
export const EXPIRED_LINK = "This link has expired: ask for a new one";
export const USED_LINK = "This link was already used, or a newer one was sent: ask for a new one if you still need it";

export interface RecoverySettings {
  passwordResetTtlSeconds: number;
  emailVerificationTtlSeconds: number;
  verificationRequired: boolean;
}

export interface AccountRecovery {
  /** Queues a reset link when the e-mail belongs to an active account; does nothing otherwise. */
  requestPasswordReset(email: string, clientAddress: string | null, asked?: Locale): Promise<void>;
  /** Queues a reset link for this user, recording `event` with it (an admin's request, issue 35). */
  sendPasswordReset(user: UserRecord, event: AuditEntry): Promise<void>;
  /**
   * Sets the new password and ends every session, telling the account's address; throws 400 (bad link)
   * or 422 (password refused).
   */
  confirmPasswordReset(token: string, newPassword: string, client: ClientInfo): Promise<void>;
  /** Queues a verification link for the user's current address (`asked`: the request's language, mails.ts). */
  sendVerification(user: UserRecord, asked?: Locale): Promise<void>;
  /** Resend: queues a link when the e-mail belongs to an active account that is not verified yet. */
  requestVerification(email: string, asked?: Locale): Promise<void>;
  /** Verifies the address the link was sent to (taking it as the account's e-mail if it was a change). */
  confirmVerification(token: string, client: ClientInfo): Promise<UserRecord>;
  /**
   * The e-mail part of an update. With verification required, a user's own change waits for the new
   * address to confirm (the confirmation link goes out now) and nothing changes yet; otherwise the
   * address changes at once and becomes unverified.
   */
  emailChanges(target: UserRecord, email: string | undefined, bySelf: boolean, asked?: Locale): Promise<UserChanges>;
  /**
   * After an update: a changed address gets a verification link and the old one is told (with the
   * device and address of `client`, the account's owner; null when an admin made the change).
   */
  afterUpdate(before: UserRecord, after: UserRecord, client: ClientInfo | null): Promise<void>;
}

export function hashLinkToken(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

function refused(redemption: Exclude<Redemption["outcome"], "redeemed">): HttpError {
  return new HttpError(
    400,
    redemption === "expired" ? EXPIRED_LINK : redemption === "spent" ? USED_LINK : INVALID_LINK,
  );
}

export interface RecoveryOptions {
  store: UserStore;
  passwords: PasswordHasher;
  policy: PasswordPolicy;
  mails: AccountMails;
  sender: MailSender;
  notices: Notices;
  settings: RecoverySettings;
  clock: () => number;
}

export function createAccountRecovery({
  store,
  passwords,
  policy,
  mails,
  sender,
  notices,
  settings,
  clock,
}: RecoveryOptions): AccountRecovery {
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();
  const newToken = () => randomBytes(32).toString("base64url");

  async function issueVerification(
    user: UserRecord,
    email: string,
    change: boolean,
    events: readonly AuditEntry[] = [],
    asked?: Locale,
  ): Promise<void> {
    const token = newToken();
    await store.issueAccountToken(
      {
        tokenHash: hashLinkToken(token),
        userId: user.id,
        purpose: "email_verification",
        email,
        expiresAt: iso(settings.emailVerificationTtlSeconds),
      },
      mails.verification(user, email, token, change, asked),
      events,
    );
    sender.wake();
  }

  async function sendPasswordReset(user: UserRecord, event: AuditEntry, asked?: Locale): Promise<void> {
    const token = newToken();
    await store.issueAccountToken(
      {
        tokenHash: hashLinkToken(token),
        userId: user.id,
        purpose: "password_reset",
        email: user.email,
        expiresAt: iso(settings.passwordResetTtlSeconds),
      },
      mails.passwordReset(user, token, asked),
      [event],
    );
    sender.wake();
  }

  return {
    // An admin's request (issue 35) takes no request language: the admin's is not the user's.
    sendPasswordReset: (user, event) => sendPasswordReset(user, event),
    async requestPasswordReset(email, clientAddress, asked) {
      const user = await store.findByEmail(email);
      if (!user?.isActive) return;
      await sendPasswordReset(user, { type: "password_reset", outcome: "requested", clientAddress }, asked);
    },

    async confirmPasswordReset(token, newPassword, client) {
      const tokenHash = hashLinkToken(token);
      const found = await store.findAccountToken(tokenHash);
      const now = iso();
      if (found?.purpose !== "password_reset") throw refused("invalid");
      if (found.spentAt !== null) throw refused("spent");
      if (found.expiresAt <= now) throw refused("expired");
      const user = await store.findById(found.userId);
      if (!user?.isActive) throw refused("invalid");
      // Checked before the token is spent, so a refused password does not cost the user the link.
      policy.check(newPassword, user.email);
      const hashedPassword = await passwords.hash(newPassword);
      const redemption = await store.redeemAccountToken(tokenHash, "password_reset", iso());
      if (redemption.outcome !== "redeemed") throw refused(redemption.outcome);
      // The password, the end of every session and access token and, when the link reached the inbox of
      // the account's address, what that proof ends (auth/address-proof.ts), in one transaction.
      const notice = notices.about("password_reset_completed", user, client);
      await store.proveAddress(
        user.id,
        (account) => passwordResetPlan(account, redemption.token.email, hashedPassword),
        {
          events: (ended) => [
            { type: "password_reset", outcome: "success", clientAddress: client.address, notice },
            ...endedEvents("password_reset", ended, client.address),
          ],
        },
      );
      sender.wake();
    },

    sendVerification: (user, asked) => issueVerification(user, user.email, false, [], asked),

    async requestVerification(email, asked) {
      const user = await store.findByEmail(email);
      if (!user?.isActive || user.emailVerifiedAt !== null) return;
      await issueVerification(user, user.email, false, [], asked);
    },

    async confirmVerification(token, client) {
      const clientAddress = client.address;
      let changed = false;
      const redemption = await store.confirmEmail(
        hashLinkToken(token),
        iso(),
        (previousEmail, user) => {
          changed = true;
          return notices.emailChanged(previousEmail, user, client);
        },
        // In the confirming transaction: a confirmed address always has its event.
        (emailChanged) =>
          emailChanged
            ? { type: "email_change", outcome: "confirmed", clientAddress }
            : { type: "email_verification", outcome: "verified", clientAddress },
      );
      if (redemption.outcome !== "redeemed") throw refused(redemption.outcome);
      if (changed) sender.wake();
      // The user as the confirming transaction wrote it: no read after the commit.
      return redemption.user;
    },

    async emailChanges(target, email, bySelf, asked) {
      if (email === undefined || normalizeEmail(email) === target.email) return {};
      if (settings.verificationRequired && bySelf) {
        if (await store.findByEmail(email)) return { email }; // the store answers 409, as for any taken address
        await issueVerification(
          target,
          normalizeEmail(email),
          true,
          [{ type: "email_change", outcome: "requested", clientAddress: null }],
          asked,
        );
        return {};
      }
      return { email, emailVerifiedAt: null };
    },

    async afterUpdate(before, after, client) {
      if (before.email === after.email) return;
      const notice = notices.emailChanged(before.email, after, client);
      if (notice !== undefined) await store.enqueueMail(notice);
      await issueVerification(after, after.email, false, [], client?.locale);
    },
  };
}
