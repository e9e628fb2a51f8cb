// A real SMTP server for the tests (nodemailer's smtp-server), keeping every
// message that arrives, parsed with mailparser, so tests read the mail the
// service actually sent. It can stop and start again on the same port, to
// play an outage.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  raw: string;
  parsed: ParsedMail;
}

export class MailServer {
  readonly messages: ReceivedMail[] = [];
  port = 0;
  #server: SMTPServer | undefined;
  #waiters: (() => void)[] = [];
  /** SMTP sessions open now (a client connected and not yet gone). */
  #sessions = 0;

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onConnect: (_session, callback) => {
        this.#sessions += 1;
        callback();
      },
      onClose: () => {
        this.#sessions -= 1;
      },
      onData: (stream, _session, callback) => {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", async () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          const parsed = await simpleParser(raw);
          const to = Array.isArray(parsed.to) ? parsed.to[0]?.text : parsed.to?.text;
          this.messages.push({
            to: to ?? "",
            subject: parsed.subject ?? "",
            text: parsed.text ?? "",
            html: typeof parsed.html === "string" ? parsed.html : "",
            messageId: parsed.messageId ?? "",
            raw,
            parsed,
          });
          for (const wake of this.#waiters.splice(0)) wake();
          callback();
        });
      },
    });
    server.listen(this.port, "127.0.0.1");
    await once(server.server, "listening");
    this.port = (server.server.address() as AddressInfo).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Waits until no SMTP session is open: the sender has said QUIT and gone (or fails after `timeoutMs`). */
  async idle(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.#sessions > 0) {
      if (Date.now() > deadline) throw new Error(`${this.#sessions} SMTP sessions still open`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** Waits until `count` messages in all have arrived (or fails after `timeoutMs`). */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} messages, got ${this.messages.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.messages;
  }

  /** Waits until at least `count` messages to `address` have arrived, and answers them, oldest first. */
  async mailsTo(address: string, count = 1, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mails = this.messages.filter((message) => message.to.includes(address));
      if (mails.length >= count) return mails;
      if (Date.now() > deadline) throw new Error(`expected ${count} messages to ${address}, got ${mails.length}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The newest message to `address`. */
  lastTo(address: string): ReceivedMail | undefined {
    return this.messages.filter((message) => message.to.includes(address)).at(-1);
  }
}

/** The token in the fragment of the first link in a mail's text. */
export function linkIn(mail: ReceivedMail): URL {
  const match = /https?:\/\/\S+#token=[\w-]+/.exec(mail.text);
  if (!match) throw new Error(`no link in the mail:\n${mail.text}`);
  return new URL(match[0]);
}

export function tokenIn(mail: ReceivedMail): string {
  return new URLSearchParams(linkIn(mail).hash.slice(1)).get("token") ?? "";
}
