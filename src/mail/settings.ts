// The mail settings: the transport (SMTP, or .eml files in a folder, the
// embedded default), the From of every message, the outbox's retries, and
// which security notifications go out (mail/notices.ts). Declared here,
// beside the mails; config.ts composes them.
import { dirname, join, resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { type Env, integer, section, setting, text } from "../settings/declare.ts";
import { NOTICE_KINDS, type NoticeKind } from "../store/mail.ts";
import type { DatabaseLocation } from "../store/settings.ts";

/** Where mail goes: a real SMTP server, or .eml files in a folder (the embedded default). */
export type MailTransportSetting = { kind: "smtp"; url: string } | { kind: "file"; directory: string };

export interface MailConfig {
  transport: MailTransportSetting;
  /** The From header of every message. */
  from: string;
  /** Deliveries tried before a message is marked failed. */
  maxAttempts: number;
  /** The first retry waits this long; each later one twice as long as the one before (capped at an hour). */
  retryBaseSeconds: number;
  /** How often the sender looks for due messages (it is also woken at once when this process queues one). */
  pollIntervalMs: number;
}

/**
 * smtp://user:pass@host:port (STARTTLS when offered), smtps://... (TLS from the start), or file:PATH for
 * .eml files. Unset: file transport into a "mail" folder beside the SQLite file (or ./data/mail), the
 * convention of Django's file e-mail backend. Parsed where the database is known (readMailSettings). The
 * raw value is never echoed (it may carry the SMTP password).
 */
const MAIL_URL = text({
  name: "MAIL_URL",
  default: "file transport",
  meaning:
    "`smtp://user:password@host:587` (STARTTLS when offered), `smtps://user:password@host:465`, or `file:PATH` " +
    "(relative to the working directory). Unset: one `.eml` file per message in `mail/` beside the SQLite " +
    "file (`./data/mail` otherwise). Never echoed, logged or stored: errors keep only the server's reply.",
});

/** An address, optionally with a display name: "Team <no-reply@example.com>" or "no-reply@example.com". */
const MAIL_FROM = setting({
  name: "MAIL_FROM",
  default: "`User service <no-reply@PUBLIC_URL's host>`",
  meaning:
    "The From of every mail, an address optionally as `Name <address>` (`localhost` in the default when " +
    "`PUBLIC_URL` is unset or an IP address); also the domain of each `Message-ID`.",
  parse(raw, name) {
    const address = /<([^<>]+)>\s*$/.exec(raw)?.[1] ?? raw;
    if (!/^[^\s@<>]+@[^\s@<>]+$/.test(address) || /[\r\n]/.test(raw))
      throw new ConfigError(name, `must be an e-mail address, optionally as "Name <address>", got "${raw}"`);
    return raw;
  },
});

const MAIL_MAX_ATTEMPTS = integer({
  name: "MAIL_MAX_ATTEMPTS",
  fallback: 10,
  min: 1,
  max: 100,
  meaning: "Delivery attempts before a message is marked failed.",
});

const MAIL_RETRY_BASE_SECONDS = integer({
  name: "MAIL_RETRY_BASE_SECONDS",
  fallback: 30,
  min: 1,
  max: 3600,
  meaning: "Wait before the first retry; each later one waits twice as long, at most an hour.",
});

const SECURITY_NOTIFICATIONS = setting({
  name: "SECURITY_NOTIFICATIONS",
  fallback: "all",
  default: "`all`",
  meaning:
    "Which [security notification](../events/notifications.md) mails go out: `all`, `none`, or a comma list " +
    `of ${NOTICE_KINDS.map((kind) => `\`${kind}\``).join(", ")}.`,
  parse: (raw) => parseNotices(raw),
});

export const MAIL_SETTINGS = section("Mail", "src/mail/settings.ts", [
  MAIL_URL,
  MAIL_FROM,
  MAIL_MAX_ATTEMPTS,
  MAIL_RETRY_BASE_SECONDS,
  SECURITY_NOTIFICATIONS,
]);

export function readMailSettings(
  env: Env,
  where: { database: DatabaseLocation; cwd: string; linkBase: string },
): { mail: MailConfig; securityNotifications: ReadonlySet<NoticeKind> } {
  return {
    mail: {
      transport: parseMailUrl(MAIL_URL.raw(env), where.database, where.cwd),
      from: MAIL_FROM.read(env, defaultMailFrom(where.linkBase)),
      maxAttempts: MAIL_MAX_ATTEMPTS.read(env),
      retryBaseSeconds: MAIL_RETRY_BASE_SECONDS.read(env),
      pollIntervalMs: 2000,
    },
    securityNotifications: SECURITY_NOTIFICATIONS.read(env),
  };
}

/** no-reply at the public host name; "localhost" when that is an IP address, which is no mail domain. */
function defaultMailFrom(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return `User service <no-reply@${/^[\d.]+$|^\[/.test(host) ? "localhost" : host}>`;
}

function parseMailUrl(raw: string | undefined, database: DatabaseLocation, cwd: string): MailTransportSetting {
  if (raw === undefined) {
    const beside =
      database.kind === "sqlite" && database.path !== ":memory:" ? dirname(database.path) : join(cwd, "data");
    return { kind: "file", directory: join(beside, "mail") };
  }
  if (raw.startsWith("file:")) {
    const path = raw.slice("file:".length);
    if (path === "") throw new ConfigError("MAIL_URL", 'file: needs a folder, as in "file:data/mail"');
    return { kind: "file", directory: resolve(cwd, path) };
  }
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || !/^smtps?:$/.test(url.protocol) || url.hostname === "") {
    throw new ConfigError("MAIL_URL", 'must look like "smtp://user:password@host:587", "smtps://..." or "file:PATH"');
  }
  return { kind: "smtp", url: raw };
}

/** `all`, `none`, or a comma list of notice kinds (mail/notices.ts). */
function parseNotices(raw: string): ReadonlySet<NoticeKind> {
  const value = raw.trim().toLowerCase();
  if (value === "all") return new Set(NOTICE_KINDS);
  if (value === "none") return new Set();
  const kinds = value.split(",").map((kind) => kind.trim());
  const unknown = kinds.find((kind) => !(NOTICE_KINDS as readonly string[]).includes(kind));
  if (unknown !== undefined) {
    throw new ConfigError(
      "SECURITY_NOTIFICATIONS",
      `must be "all", "none" or a comma list of ${NOTICE_KINDS.join(", ")}; got "${unknown}"`,
    );
  }
  return new Set(kinds as NoticeKind[]);
}
