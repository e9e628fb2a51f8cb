// Security notifications: the mails that tell a person something happened to
// their account (a password changed, a new device signed in, a second factor
// removed...), so that someone else's doing does not go unnoticed. Each is
// queued in the same transaction as the change it reports (on its audit
// event, see store/audit.ts AuditEntry.notice), rendered when sent like every mail,
// and switchable by the operator (SECURITY_NOTIFICATIONS). A notice carries
// the time, the device (browser and system from the User-Agent) and the
// client address where they help the person judge, and what to do if it was
// not them; never a secret, a token or a link that acts on its own.
import { describeDevice } from "../auth/user-agent.ts";
import type { NewOutboxMessage, NoticeKind } from "../store/store.ts";

/** Where the "if it was not you" link of a notice points, under the mails' link base. */
export const REVIEW_PAGE_PATH = "/account/security";

/** What a notice's payload holds: when, from what and where (null when not worth showing), and details. */
export interface NoticeFacts {
  at: string;
  device: string | null;
  address: string | null;
  /** The change was an administrator's: the admin's device and address are not the person's business. */
  byAdmin?: boolean;
}

/** The request a notice reports on, as the route sees it (Fastify's client address honours TRUST_PROXY). */
export interface NoticeClient {
  address: string | null;
  userAgent: string | null;
}

export interface NoticeContent {
  subject: string;
  /** What happened. */
  summary: string;
  /** The advice when it was not the person's doing; `review` adds the link to the security page. */
  advice: string;
  review: boolean;
}

const SECURE_ACCOUNT =
  "If this was not you, someone else may be able to sign in to your account: sign in, change your password, " +
  "and check your second factors, passkeys and signed-in sessions on your account's security page. If you " +
  "can no longer sign in, contact the people who run this service.";
const LOCKED_OUT =
  "If this was not you, someone else has your account: contact the people who run this service at once.";
const ASK_OPERATORS = "If you think this is a mistake, contact the people who run this service.";

/** The words of each notice; undefined for the kinds that are not notices. */
export function noticeContent(kind: string, facts: NoticeFacts): NoticeContent | undefined {
  switch (kind as NoticeKind) {
    case "password_changed":
      return {
        subject: "Your password was changed",
        summary: facts.byAdmin
          ? "An administrator set a new password for your account, and every signed-in session was ended."
          : "The password of your account was changed, and every signed-in session was ended.",
        advice: facts.byAdmin ? ASK_OPERATORS : LOCKED_OUT,
        review: false,
      };
    case "password_reset_completed":
      return {
        subject: "Your password was reset",
        summary:
          "The password of your account was reset with a link sent to this address, and every signed-in session " +
          "was ended.",
        advice: LOCKED_OUT,
        review: false,
      };
    case "new_device":
      return {
        subject: "A new sign-in to your account",
        summary: "Your account was signed in to from a device or app it had not been used from before.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "second_factor_added":
      return {
        subject: "An authenticator app was added to your account",
        summary: "An authenticator app was set up as a second factor of your account.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "second_factor_removed":
      return facts.byAdmin
        ? {
            subject: "The second factors of your account were removed",
            summary:
              "An administrator removed every second factor of your account (authenticator app, recovery codes " +
              "and passkeys): your password alone signs in until you set up a new one.",
            advice: ASK_OPERATORS,
            review: true,
          }
        : {
            subject: "An authenticator app was removed from your account",
            summary: "The authenticator app of your account was turned off.",
            advice: SECURE_ACCOUNT,
            review: true,
          };
    case "passkey_added":
      return {
        subject: "A passkey was added to your account",
        summary: "A passkey was added to your account: it can now sign in.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "passkey_removed":
      return {
        subject: "A passkey was removed from your account",
        summary: "A passkey was removed from your account: it no longer signs in.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "recovery_code_used":
      return {
        subject: "A recovery code was used",
        summary: "One of your recovery codes was used to sign in to your account. It will not work again.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "recovery_codes_regenerated":
      return {
        subject: "New recovery codes were made",
        summary: "New recovery codes were made for your account; the previous ones no longer work.",
        advice: SECURE_ACCOUNT,
        review: true,
      };
    case "account_deactivated":
      return {
        subject: "Your account was deactivated",
        summary: "An administrator deactivated your account: it no longer signs in, and every session was ended.",
        advice: ASK_OPERATORS,
        review: false,
      };
    default:
      return undefined;
  }
}

/** The facts as lines of the mail: when, device, origin. */
export function factLines(facts: NoticeFacts): string[] {
  const when = new Date(facts.at).toUTCString().replace("GMT", "UTC");
  return [
    `When: ${when}`,
    ...(facts.device ? [`Device: ${facts.device}`] : []),
    ...(facts.address
      ? [`From the network address: ${facts.address} (approximate: it may be a provider's or a proxy's)`]
      : []),
  ];
}

export interface Notices {
  /**
   * The mail telling the user about `kind`, to attach to the change's audit event (or to queue with it);
   * undefined when the operator switched this kind off. `client` is who did it (null when not shown).
   */
  about(
    kind: NoticeKind,
    user: { id: string; email: string },
    client: NoticeClient | null,
    details?: Pick<NoticeFacts, "byAdmin">,
  ): NewOutboxMessage | undefined;
  /** The notice to the previous address of a changed e-mail; undefined when switched off. */
  emailChanged(
    previousEmail: string,
    user: { id: string; email: string },
    client: NoticeClient | null,
  ): NewOutboxMessage | undefined;
  /** Tells the mail sender to look at the outbox now, after a write that queued a notice committed. */
  wake(): void;
}

export interface NoticeOptions {
  enabled: ReadonlySet<NoticeKind>;
  /** Builds the outbox message (mail/messages.ts). */
  message: (kind: NoticeKind, recipient: string, userId: string, facts: NoticeFacts) => NewOutboxMessage;
  /** Builds the e-mail-changed message, which also names the new address, masked (mail/messages.ts). */
  emailChanged: (previousEmail: string, user: { id: string; email: string }, facts: NoticeFacts) => NewOutboxMessage;
  wake: () => void;
  clock: () => number;
}

export function createNotices({ enabled, message, emailChanged, wake, clock }: NoticeOptions): Notices {
  // An administrator's device and address are not shown to the person the admin acted on.
  const factsOf = (client: NoticeClient | null, details: Pick<NoticeFacts, "byAdmin">): NoticeFacts => {
    const shown = details.byAdmin ? null : client;
    return {
      at: new Date(clock()).toISOString(),
      device: shown ? describeDevice(shown.userAgent) : null,
      address: shown?.address ?? null,
      ...details,
    };
  };
  return {
    about(kind, user, client, details = {}) {
      return enabled.has(kind) ? message(kind, user.email, user.id, factsOf(client, details)) : undefined;
    },
    emailChanged(previousEmail, user, client) {
      return enabled.has("email_changed") ? emailChanged(previousEmail, user, factsOf(client, {})) : undefined;
    },
    wake,
  };
}
