// The one place that talks to nodemailer. MAIL_URL picks the transport:
// smtp:// or smtps:// for a real server, or (the embedded default) .eml files
// in a folder, one file per message, that any mail client opens. Timeouts are
// short, so a dead server costs a sender one attempt and a retry, never a
// stuck queue. Errors are reduced to a code and a line without the URL, so
// the SMTP password in MAIL_URL cannot reach a log or the outbox table.
// nodemailer is loaded with the first message, not at start: most processes
// send none, and it was a measurable part of start-up and of idle memory.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SentMessageInfo, Transporter } from "nodemailer";
import type { MailTransportSetting } from "./settings.ts";

export interface RenderedMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** `<id@domain>`, the same on every attempt. */
  messageId: string;
}

export interface MailTransport {
  send(mail: RenderedMail): Promise<void>;
  close(): void;
}

/** A delivery failure whose message is safe to store and log. */
export class DeliveryError extends Error {}

export function createMailTransport(setting: MailTransportSetting): MailTransport {
  return setting.kind === "file" ? fileTransport(setting.directory) : smtpTransport(setting.url);
}

/** The transporter `create` makes, made once on first use; `close` closes it only if it was made. */
function lazyTransporter(create: (library: typeof import("nodemailer")["default"]) => Transporter<SentMessageInfo>) {
  let made: Promise<Transporter<SentMessageInfo>> | undefined;
  let closed = false;
  return {
    get: () => {
      made ??= import("nodemailer").then((library) => create(library.default));
      return made;
    },
    close: () => {
      if (closed) return;
      closed = true;
      void made?.then((transporter) => transporter.close());
    },
  };
}

function smtpTransport(url: string): MailTransport {
  const password = safeDecode(new URL(url).password);
  const transporter = lazyTransporter((nodemailer) =>
    nodemailer.createTransport({
      url,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    }),
  );
  return {
    async send(mail) {
      try {
        await (await transporter.get()).sendMail({ ...mail, headers: { "Auto-Submitted": "auto-generated" } });
      } catch (error) {
        throw describe(error, password);
      }
    },
    close: transporter.close,
  };
}

/** Each message becomes `<time>-<id>.eml`, written whole under a temporary name first. */
function fileTransport(directory: string): MailTransport {
  const transporter = lazyTransporter((nodemailer) =>
    nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" }),
  );
  return {
    async send(mail) {
      try {
        const info = await (await transporter.get()).sendMail({
          ...mail,
          headers: { "Auto-Submitted": "auto-generated" },
        });
        await mkdir(directory, { recursive: true, mode: 0o700 });
        const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${mail.messageId.replace(/[^\w.-]/g, "")}.eml`;
        await writeFile(join(directory, name), info.message as Buffer, { mode: 0o600 });
      } catch (error) {
        throw describe(error, "");
      }
    },
    close: transporter.close,
  };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** "ECONNECTION: connect ECONNREFUSED 127.0.0.1:2525", at most 300 characters, the password blanked. */
function describe(error: unknown, password: string): DeliveryError {
  const { code, message } = error as { code?: unknown; message?: unknown };
  let text = `${typeof code === "string" ? `${code}: ` : ""}${typeof message === "string" ? message : "delivery failed"}`;
  if (password) text = text.split(password).join("[redacted]");
  return new DeliveryError(text.replace(/[\r\n]+/g, " ").slice(0, 300));
}
