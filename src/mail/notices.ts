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
import type { Locale } from "../i18n/locales.ts";
import type { Translator } from "../i18n/translate.ts";
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
  /** The language the request asked for (ui_locales, the language cookie, Accept-Language), if any. */
  locale?: Locale | undefined;
}

/** Whose saved language a message follows. */
export interface ReaderOf {
  id: string;
  locale?: Locale | null | undefined;
}

/** The person a notice goes to: its saved language, when chosen, wins over the request's. */
export interface NoticeReader {
  id: string;
  email: string;
  locale?: Locale | null | undefined;
}

/**
 * The catalogue keys of a notice (the `mail` area, src/i18n/catalogues/mail/): what happened, and the
 * advice when it was not the person's doing; `review` adds the link to the security page.
 */
export interface NoticeContent {
  subject: string;
  summary: string;
  advice: string;
  review: boolean;
}

const SECURE_ACCOUNT = "mail.advice.secureAccount";
const LOCKED_OUT = "mail.advice.lockedOut";
const ASK_OPERATORS = "mail.advice.askOperators";

/** The catalogue keys of each notice; undefined for the kinds that are not notices. */
export function noticeContent(kind: string, facts: NoticeFacts): NoticeContent | undefined {
  const keys = (name: string, advice: string, review: boolean, summary = name): NoticeContent => ({
    subject: `mail.notice.${name}.subject`,
    summary: `mail.notice.${summary}.summary`,
    advice,
    review,
  });
  switch (kind as NoticeKind) {
    case "password_changed":
      return facts.byAdmin
        ? keys("passwordChanged", ASK_OPERATORS, false, "passwordChangedByAdmin")
        : keys("passwordChanged", LOCKED_OUT, false);
    case "password_reset_completed":
      return keys("passwordResetCompleted", LOCKED_OUT, false);
    case "new_device":
      return keys("newDevice", SECURE_ACCOUNT, true);
    case "second_factor_added":
      return keys("secondFactorAdded", SECURE_ACCOUNT, true);
    case "second_factor_removed":
      return facts.byAdmin
        ? keys("secondFactorsRemovedByAdmin", ASK_OPERATORS, true)
        : keys("secondFactorRemoved", SECURE_ACCOUNT, true);
    case "passkey_added":
      return keys("passkeyAdded", SECURE_ACCOUNT, true);
    case "passkey_removed":
      return keys("passkeyRemoved", SECURE_ACCOUNT, true);
    case "recovery_code_used":
      return keys("recoveryCodeUsed", SECURE_ACCOUNT, true);
    case "recovery_codes_regenerated":
      return keys("recoveryCodesRegenerated", SECURE_ACCOUNT, true);
    case "account_deactivated":
      return keys("accountDeactivated", ASK_OPERATORS, false);
    default:
      return undefined;
  }
}

const dateTimeFormats = new Map<Locale, Intl.DateTimeFormat>();

/**
 * A time as a mail shows it, in its reader's language: the reader's time zone is unknown to a mail,
 * so it is UTC, and the message names the zone.
 */
export function mailTime(at: string, locale: Locale): string {
  let format = dateTimeFormats.get(locale);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(locale, { dateStyle: "long", timeStyle: "short", timeZone: "UTC" });
    dateTimeFormats.set(locale, format);
  }
  return format.format(new Date(at));
}

/** The facts as lines of the mail: when, device, origin. */
export function factLines(facts: NoticeFacts, t: Translator): string[] {
  return [
    t.text("mail.fact.when", { time: mailTime(facts.at, t.locale) }),
    ...(facts.device ? [t.text("mail.fact.device", { device: facts.device })] : []),
    ...(facts.address ? [t.text("mail.fact.address", { address: facts.address })] : []),
  ];
}

export interface Notices {
  /**
   * The mail telling the user about `kind`, to attach to the change's audit event (or to queue with it);
   * undefined when the operator switched this kind off. `client` is who did it (null when not shown).
   */
  about(
    kind: NoticeKind,
    user: NoticeReader,
    client: NoticeClient | null,
    details?: Pick<NoticeFacts, "byAdmin">,
  ): NewOutboxMessage | undefined;
  /** The notice to the previous address of a changed e-mail; undefined when switched off. */
  emailChanged(previousEmail: string, user: NoticeReader, client: NoticeClient | null): NewOutboxMessage | undefined;
  /** Tells the mail sender to look at the outbox now, after a write that queued a notice committed. */
  wake(): void;
}

export interface NoticeOptions {
  enabled: ReadonlySet<NoticeKind>;
  /** Builds the outbox message (mail/messages.ts); `asked` is the request's language. */
  message: (
    kind: NoticeKind,
    recipient: string,
    user: ReaderOf,
    facts: NoticeFacts,
    asked?: Locale | undefined,
  ) => NewOutboxMessage;
  /** Builds the e-mail-changed message, which also names the new address, masked (mail/messages.ts). */
  emailChanged: (
    previousEmail: string,
    user: NoticeReader,
    facts: NoticeFacts,
    asked?: Locale | undefined,
  ) => NewOutboxMessage;
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
    // The request's language is the person's own only when the person made it (not an admin's).
    about(kind, user, client, details = {}) {
      if (!enabled.has(kind)) return undefined;
      return message(kind, user.email, user, factsOf(client, details), details.byAdmin ? undefined : client?.locale);
    },
    emailChanged(previousEmail, user, client) {
      if (!enabled.has("email_changed")) return undefined;
      return emailChanged(previousEmail, user, factsOf(client, {}), client?.locale);
    },
    wake,
  };
}
