// The account mails: what each one says, in plain text and HTML. A message is
// queued as a kind plus a small JSON payload (a link token only sealed) and
// rendered when it is sent, so the outbox never holds a usable link. Every
// link starts with the configured base (ACCOUNT_LINK_BASE_URL, by default
// PUBLIC_URL), never with anything from a request, and carries its token in
// the fragment, which browsers do not send to servers or put in access logs.
// Each mail speaks its reader's language (issue 37), from the `mail`
// catalogue (src/i18n/catalogues/mail/), decided when it is queued.
import { isLocale, type Locale } from "../i18n/locales.ts";
import { type Translator, translator } from "../i18n/translate.ts";
import { escapeHtml } from "../platform/html.ts";
import type { MailKind, NewOutboxMessage, NoticeKind, OutboxMessage } from "../store/store.ts";
import { factLines, type NoticeFacts, noticeContent, REVIEW_PAGE_PATH, type ReaderOf } from "./notices.ts";
import type { Sealer } from "./seal.ts";
import type { RenderedMail } from "./transport.ts";

export const RESET_PAGE_PATH = "/reset-password";
export const VERIFY_PAGE_PATH = "/verify-email";
/** Where the link that proves an account for an upstream sign-in leads: the sign-in page, in its mailed-link mode. */
export const UPSTREAM_LINK_PAGE_PATH = "/sign-in?link=mail";
/** Where a sign-in mail's link leads: the sign-in page, with the attempt in the query and the token in the fragment. */
export const MAIL_SIGN_IN_PAGE_PATH = "/sign-in?mail_sign_in=";

/** What a sign-in mail carries (issue 37): the link's token and the code, each only when offered. */
export interface MailSignInParts {
  attempt: string;
  token?: string;
  code?: string;
  /** The language of the page that asked. */
  locale: Locale;
  ttlSeconds: number;
}

export interface MailSettings {
  from: string;
  linkBaseUrl: string;
  passwordResetTtlSeconds: number;
  emailVerificationTtlSeconds: number;
  /** DEFAULT_LOCALE: the language of a mail whose reader chose none and whose request asked for none. */
  defaultLocale?: Locale | undefined;
}

/**
 * Every builder takes the reader (its saved `locale`, when chosen, decides the language) and may take
 * `asked`, the language of the request that caused the mail; else DEFAULT_LOCALE. The language is
 * decided when the message is queued and kept in its payload: the mail is rendered when it is sent,
 * maybe by another instance.
 */
export interface AccountMails {
  passwordReset(user: ReaderOf & { email: string }, token: string, asked?: Locale): NewOutboxMessage;
  /** `change` is true when the address is a new one the user asked to switch to. */
  verification(user: ReaderOf, email: string, token: string, change: boolean, asked?: Locale): NewOutboxMessage;
  /**
   * The link that proves the account before an upstream sign-in (of `provider`, its label) is linked
   * to it; it works for `ttlSeconds`, in the browser that started the sign-in.
   */
  upstreamLink(
    user: ReaderOf & { email: string },
    token: string,
    provider: string,
    ttlSeconds: number,
    asked?: Locale,
  ): NewOutboxMessage;
  /** A sign-in without a password (issue 37): a one-use link and/or a 6-digit code, in the asking page's language. */
  mailSignIn(recipient: string, userId: string | null, parts: MailSignInParts): NewOutboxMessage;
  /** Tells the previous address that the account's e-mail changed (when, and from what where known). */
  emailChanged(
    previousEmail: string,
    user: ReaderOf & { email: string },
    facts?: NoticeFacts,
    asked?: Locale,
  ): NewOutboxMessage;
  /** A security notification (mail/notices.ts) to the user's address. */
  notice(kind: NoticeKind, recipient: string, user: ReaderOf, facts: NoticeFacts, asked?: Locale): NewOutboxMessage;
  /** The message as it goes out; undefined when its sealed token can no longer be opened. */
  render(message: OutboxMessage): RenderedMail | undefined;
}

/** "a***@example.com": enough for the owner to recognise, not a gift to whoever reads the old inbox. */
export function maskEmail(email: string): string {
  const [local = "", domain = ""] = email.split("@");
  return `${local.slice(0, 1)}***@${domain}`;
}

/** "15 minutes", "2 hours": whole hours from two hours on, by the language's plural rules. */
function duration(seconds: number, t: Translator): string {
  const value = Math.round(seconds / 60);
  return value >= 120 && value % 60 === 0
    ? t.text("mail.duration.hours", { count: value / 60 })
    : t.text("mail.duration.minutes", { count: value });
}

interface Content {
  subject: string;
  /** Paragraphs (a line break in one stays a line break); the link, when there is one, follows the `linkAfter`th. */
  paragraphs: string[];
  link?: { url: string; label: string };
  /** How many paragraphs come before the link: 1 unless said. */
  linkAfter?: number;
}

const htmlParagraph = (paragraph: string) => `<p>${escapeHtml(paragraph).replaceAll("\n", "<br>")}</p>`;

function toRendered(content: Content, t: Translator): { subject: string; text: string; html: string } {
  const split = content.linkAfter ?? 1;
  const [first, rest] = [content.paragraphs.slice(0, split), content.paragraphs.slice(split)];
  const textParts = [...first, ...(content.link ? [content.link.url] : []), ...rest];
  const htmlParts = [
    ...first.map(htmlParagraph),
    ...(content.link
      ? [
          `<p><a href="${escapeHtml(content.link.url)}">${escapeHtml(content.link.label)}</a></p>`,
          `<p style="font-size:small">${t.html("mail.copyLink")}<br>${escapeHtml(content.link.url)}</p>`,
        ]
      : []),
    ...rest.map(htmlParagraph),
  ];
  return {
    subject: content.subject,
    text: `${textParts.join("\n\n")}\n`,
    html:
      `<!doctype html><html lang="${t.locale}" dir="${t.dir}">` +
      `<body style="font-family:sans-serif;line-height:1.5">${htmlParts.join("")}</body></html>`,
  };
}

export function createAccountMails(settings: MailSettings, sealer: Sealer): AccountMails {
  const domain = /@([^<>@\s]+)>?\s*$/.exec(settings.from)?.[1] ?? "localhost";
  const fallback: Locale = settings.defaultLocale ?? "en";
  /** The reader's saved language, else the request's, else DEFAULT_LOCALE: decided now, kept in the payload. */
  const localeOf = (user: Omit<ReaderOf, "id">, asked: Locale | undefined): Locale =>
    (isLocale(user.locale) ? user.locale : undefined) ?? asked ?? fallback;
  const message = (
    kind: MailKind,
    recipient: string,
    user: Omit<ReaderOf, "id"> & { id: string | null },
    asked: Locale | undefined,
    payload: object,
  ): NewOutboxMessage => ({
    kind,
    recipient,
    userId: user.id,
    payload: JSON.stringify({ ...payload, locale: localeOf(user, asked) }),
    messageDomain: domain,
  });
  const link = (path: string, token: string) => `${settings.linkBaseUrl}${path}#token=${encodeURIComponent(token)}`;

  function content(kind: MailKind, payload: Record<string, unknown>, t: Translator): Content | undefined {
    const facts = payload as unknown as NoticeFacts;
    if (kind === "email_changed") {
      return {
        subject: t.text("mail.emailChanged.subject"),
        paragraphs: [
          t.text("mail.emailChanged.summary", { address: String(payload.masked) }),
          // Messages queued before notices carried facts have none.
          ...(typeof payload.at === "string" ? [factLines(facts, t).join("\n")] : []),
          t.text("mail.emailChanged.advice"),
        ],
      };
    }
    const notice = noticeContent(kind, facts);
    if (notice !== undefined) {
      return {
        subject: t.text(notice.subject),
        paragraphs: [t.text(notice.summary), factLines(facts, t).join("\n"), t.text(notice.advice)],
        ...(notice.review
          ? { link: { url: `${settings.linkBaseUrl}${REVIEW_PAGE_PATH}`, label: t.text("mail.reviewLink") } }
          : {}),
        linkAfter: 3,
      };
    }
    if (kind === "mail_sign_in") return mailSignInContent(payload, t);
    const token = typeof payload.token === "string" ? sealer.open(payload.token) : undefined;
    if (token === undefined) return undefined;
    if (kind === "upstream_link") {
      const provider = String(payload.provider);
      return {
        subject: t.text("mail.upstream.subject", { provider }),
        paragraphs: [
          t.text("mail.upstream.intro", { provider }),
          t.text("mail.upstream.validity", { duration: duration(Number(payload.ttl), t) }),
          t.text("mail.upstream.ignore", { provider }),
        ],
        link: { url: link(UPSTREAM_LINK_PAGE_PATH, token), label: t.text("mail.upstream.button") },
      };
    }
    if (kind === "password_reset") {
      return {
        subject: t.text("mail.reset.subject"),
        paragraphs: [
          t.text("mail.reset.intro"),
          t.text("mail.reset.validity", { duration: duration(settings.passwordResetTtlSeconds, t) }),
          t.text("mail.reset.ignore"),
        ],
        link: { url: link(RESET_PAGE_PATH, token), label: t.text("mail.reset.button") },
      };
    }
    return {
      subject: t.text(payload.change ? "mail.verifyChange.subject" : "mail.verify.subject"),
      paragraphs: [
        t.text(payload.change ? "mail.verifyChange.intro" : "mail.verify.intro"),
        t.text("mail.verify.validity", { duration: duration(settings.emailVerificationTtlSeconds, t) }),
        t.text("mail.verify.ignore"),
      ],
      link: { url: link(VERIFY_PAGE_PATH, token), label: t.text("mail.verify.button") },
    };
  }

  /** The sign-in mail, in the language it was asked in; undefined when a sealed part no longer opens. */
  function mailSignInContent(payload: Record<string, unknown>, t: Translator): Content | undefined {
    const token = typeof payload.token === "string" ? sealer.open(payload.token) : undefined;
    const code = typeof payload.code === "string" ? sealer.open(payload.code) : undefined;
    if (token === undefined && code === undefined) return undefined;
    const minutes = Math.round(Number(payload.ttl) / 60);
    const attempt = encodeURIComponent(String(payload.attempt));
    const both = token !== undefined && code !== undefined;
    return {
      subject: t.text(token === undefined ? "passwordless.mail.subjectCode" : "passwordless.mail.subject"),
      paragraphs: [
        t.text(token === undefined ? "passwordless.mail.introCode" : "passwordless.mail.introLink"),
        ...(code === undefined
          ? []
          : [t.text(both ? "passwordless.mail.code" : "passwordless.mail.codeOnly", { code })]),
        t.text(
          both
            ? "passwordless.mail.expiry"
            : token === undefined
              ? "passwordless.mail.expiryCode"
              : "passwordless.mail.expiryLink",
          { minutes },
        ),
        t.text("passwordless.mail.ignore"),
      ],
      ...(token === undefined
        ? {}
        : {
            link: {
              url: link(`${MAIL_SIGN_IN_PAGE_PATH}${attempt}`, token),
              label: t.text("passwordless.mail.linkLabel"),
            },
          }),
    };
  }

  return {
    mailSignIn: (recipient, userId, parts) =>
      // In the language of the page that asked (the account may be unknown): kept as the payload's locale.
      message("mail_sign_in", recipient, { id: userId }, parts.locale, {
        attempt: parts.attempt,
        ...(parts.token === undefined ? {} : { token: sealer.seal(parts.token) }),
        ...(parts.code === undefined ? {} : { code: sealer.seal(parts.code) }),
        ttl: parts.ttlSeconds,
      }),
    passwordReset: (user, token, asked) =>
      message("password_reset", user.email, user, asked, { token: sealer.seal(token) }),
    verification: (user, email, token, change, asked) =>
      message("email_verification", email, user, asked, { token: sealer.seal(token), change }),
    upstreamLink: (user, token, provider, ttl, asked) =>
      message("upstream_link", user.email, user, asked, { token: sealer.seal(token), provider, ttl }),
    emailChanged: (previousEmail, user, facts, asked) =>
      message("email_changed", previousEmail, user, asked, { masked: maskEmail(user.email), ...facts }),
    notice: (kind, recipient, user, facts, asked) => message(kind, recipient, user, asked, facts),
    render(outbox) {
      const payload = JSON.parse(outbox.payload) as Record<string, unknown>;
      // A message queued by the previous release has no locale: it reads in DEFAULT_LOCALE.
      const t = translator(isLocale(payload.locale) ? payload.locale : fallback);
      const rendered = content(outbox.kind, payload, t);
      if (!rendered) return undefined;
      return { from: settings.from, to: outbox.recipient, messageId: outbox.messageId, ...toRendered(rendered, t) };
    },
  };
}
