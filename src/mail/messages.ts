// The account mails: what each one says, in plain text and HTML. A message is
// queued as a kind plus a small JSON payload (a link token only sealed) and
// rendered when it is sent, so the outbox never holds a usable link. Every
// link starts with the configured base (ACCOUNT_LINK_BASE_URL, by default
// PUBLIC_URL), never with anything from a request, and carries its token in
// the fragment, which browsers do not send to servers or put in access logs.
import { isLocale, type Locale } from "../i18n/locales.ts";
import { translator } from "../i18n/translate.ts";
import type { MailKind, NewOutboxMessage, NoticeKind, OutboxMessage } from "../store/store.ts";
import { factLines, type NoticeFacts, noticeContent, REVIEW_PAGE_PATH } from "./notices.ts";
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
}

export interface AccountMails {
  passwordReset(user: { id: string; email: string }, token: string): NewOutboxMessage;
  /** `change` is true when the address is a new one the user asked to switch to. */
  verification(user: { id: string }, email: string, token: string, change: boolean): NewOutboxMessage;
  /**
   * The link that proves the account before an upstream sign-in (of `provider`, its label) is linked
   * to it; it works for `ttlSeconds`, in the browser that started the sign-in.
   */
  upstreamLink(
    user: { id: string; email: string },
    token: string,
    provider: string,
    ttlSeconds: number,
  ): NewOutboxMessage;
  /** A sign-in without a password (issue 37): a one-use link and/or a 6-digit code, in the asking page's language. */
  mailSignIn(recipient: string, userId: string | null, parts: MailSignInParts): NewOutboxMessage;
  /** Tells the previous address that the account's e-mail changed (when, and from what where known). */
  emailChanged(previousEmail: string, user: { id: string; email: string }, facts?: NoticeFacts): NewOutboxMessage;
  /** A security notification (mail/notices.ts) to the user's address. */
  notice(kind: NoticeKind, recipient: string, userId: string, facts: NoticeFacts): NewOutboxMessage;
  /** The message as it goes out; undefined when its sealed token can no longer be opened. */
  render(message: OutboxMessage): RenderedMail | undefined;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

/** "a***@example.com": enough for the owner to recognise, not a gift to whoever reads the old inbox. */
export function maskEmail(email: string): string {
  const [local = "", domain = ""] = email.split("@");
  return `${local.slice(0, 1)}***@${domain}`;
}

function minutes(seconds: number): string {
  const value = Math.round(seconds / 60);
  return value >= 120 && value % 60 === 0 ? `${value / 60} hours` : `${value} minutes`;
}

interface Content {
  subject: string;
  /** Paragraphs (a line break in one stays a line break); the link, when there is one, follows the `linkAfter`th. */
  paragraphs: string[];
  link?: { url: string; label: string };
  /** How many paragraphs come before the link: 1 unless said. */
  linkAfter?: number;
  /** The words before the link's address in HTML mails; English unless the mail says them in its language. */
  copyHint?: string;
}

const htmlParagraph = (paragraph: string) => `<p>${escapeHtml(paragraph).replaceAll("\n", "<br>")}</p>`;

function toRendered(content: Content): { subject: string; text: string; html: string } {
  const split = content.linkAfter ?? 1;
  const [first, rest] = [content.paragraphs.slice(0, split), content.paragraphs.slice(split)];
  const textParts = [...first, ...(content.link ? [content.link.url] : []), ...rest];
  const htmlParts = [
    ...first.map(htmlParagraph),
    ...(content.link
      ? [
          `<p><a href="${escapeHtml(content.link.url)}">${escapeHtml(content.link.label)}</a></p>`,
          `<p style="font-size:small">${escapeHtml(content.copyHint ?? "Or copy this address into your browser:")}<br>${escapeHtml(content.link.url)}</p>`,
        ]
      : []),
    ...rest.map(htmlParagraph),
  ];
  return {
    subject: content.subject,
    text: `${textParts.join("\n\n")}\n`,
    html: `<!doctype html><html><body style="font-family:sans-serif;line-height:1.5">${htmlParts.join("")}</body></html>`,
  };
}

export function createAccountMails(settings: MailSettings, sealer: Sealer): AccountMails {
  const domain = /@([^<>@\s]+)>?\s*$/.exec(settings.from)?.[1] ?? "localhost";
  const message = (kind: MailKind, recipient: string, userId: string | null, payload: object): NewOutboxMessage => ({
    kind,
    recipient,
    userId,
    payload: JSON.stringify(payload),
    messageDomain: domain,
  });
  const link = (path: string, token: string) => `${settings.linkBaseUrl}${path}#token=${encodeURIComponent(token)}`;

  function content(kind: MailKind, payload: Record<string, unknown>): Content | undefined {
    if (kind === "email_changed") {
      return {
        subject: "The e-mail address of your account changed",
        paragraphs: [
          `The e-mail address of your account is now ${String(payload.masked)}. This address no longer signs in.`,
          // Messages queued before notices carried facts have none.
          ...(typeof payload.at === "string" ? [factLines(payload as unknown as NoticeFacts).join("\n")] : []),
          "If you did not ask for this change, someone else may have your password: reset it from the new " +
            "address if you can, or contact the people who run this service.",
        ],
      };
    }
    const notice = noticeContent(kind, payload as unknown as NoticeFacts);
    if (notice !== undefined) {
      return {
        subject: notice.subject,
        paragraphs: [notice.summary, factLines(payload as unknown as NoticeFacts).join("\n"), notice.advice],
        ...(notice.review
          ? { link: { url: `${settings.linkBaseUrl}${REVIEW_PAGE_PATH}`, label: "Review your account's security" } }
          : {}),
        linkAfter: 3,
      };
    }
    if (kind === "mail_sign_in") return mailSignInContent(payload);
    const token = typeof payload.token === "string" ? sealer.open(payload.token) : undefined;
    if (token === undefined) return undefined;
    if (kind === "upstream_link") {
      return {
        subject: `Link your ${String(payload.provider)} sign-in to your account`,
        paragraphs: [
          `Someone (we hope you) signed in with ${String(payload.provider)} and asked to link that sign-in to ` +
            "the account with this e-mail address. Open this link to confirm that the account is yours and link it:",
          `The link works once, for ${minutes(Number(payload.ttl))}, and only in the browser where the sign-in ` +
            "was started.",
          `If you did not ask for this, ignore this message: nothing is linked, and no one can sign in to your ` +
            `account with ${String(payload.provider)}.`,
        ],
        link: { url: link(UPSTREAM_LINK_PAGE_PATH, token), label: "Link the sign-in" },
      };
    }
    if (kind === "password_reset") {
      return {
        subject: "Reset your password",
        paragraphs: [
          "Someone (we hope you) asked to reset the password of the account with this e-mail address. " +
            "Open this link to choose a new password:",
          `The link works once, for ${minutes(settings.passwordResetTtlSeconds)}. Resetting the password signs ` +
            "you out everywhere.",
          "If you did not ask for this, ignore this message: your password stays as it is.",
        ],
        link: { url: link(RESET_PAGE_PATH, token), label: "Choose a new password" },
      };
    }
    return {
      subject: payload.change ? "Confirm your new e-mail address" : "Verify your e-mail address",
      paragraphs: [
        payload.change
          ? "Confirm that this is the new e-mail address of your account by opening this link:"
          : "Confirm that this e-mail address is yours by opening this link:",
        `The link works once, for ${minutes(settings.emailVerificationTtlSeconds)}.`,
        "If you did not ask for this, ignore this message.",
      ],
      link: { url: link(VERIFY_PAGE_PATH, token), label: "Verify this address" },
    };
  }

  /** The sign-in mail, in the language it was asked in; undefined when a sealed part no longer opens. */
  function mailSignInContent(payload: Record<string, unknown>): Content | undefined {
    const t = translator(isLocale(payload.locale) ? payload.locale : "en");
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
            copyHint: t.text("passwordless.mail.copyHint"),
          }),
    };
  }

  return {
    mailSignIn: (recipient, userId, parts) =>
      message("mail_sign_in", recipient, userId, {
        attempt: parts.attempt,
        ...(parts.token === undefined ? {} : { token: sealer.seal(parts.token) }),
        ...(parts.code === undefined ? {} : { code: sealer.seal(parts.code) }),
        locale: parts.locale,
        ttl: parts.ttlSeconds,
      }),
    passwordReset: (user, token) => message("password_reset", user.email, user.id, { token: sealer.seal(token) }),
    verification: (user, email, token, change) =>
      message("email_verification", email, user.id, { token: sealer.seal(token), change }),
    upstreamLink: (user, token, provider, ttl) =>
      message("upstream_link", user.email, user.id, { token: sealer.seal(token), provider, ttl }),
    emailChanged: (previousEmail, user, facts) =>
      message("email_changed", previousEmail, user.id, { masked: maskEmail(user.email), ...facts }),
    notice: (kind, recipient, userId, facts) => message(kind, recipient, userId, facts),
    render(outbox) {
      const rendered = content(outbox.kind, JSON.parse(outbox.payload) as Record<string, unknown>);
      if (!rendered) return undefined;
      return { from: settings.from, to: outbox.recipient, messageId: outbox.messageId, ...toRendered(rendered) };
    },
  };
}
