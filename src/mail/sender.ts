// Delivers the outbox. Each instance runs one sender: it claims due messages
// with a lease (the store makes a claim exclusive across instances), sends
// them one by one, and records the outcome. A failure is retried with
// exponential backoff (base, 2x, 4x, ... capped at an hour) across restarts,
// because the schedule lives in the table; after MAIL_MAX_ATTEMPTS the
// message is marked failed: visible in the CLI, the metrics, the audit trail
// and the log, and retried only when an operator says so. HTTP requests only
// write to the outbox and wake the sender; they never wait for SMTP.
//
// Delivery is at least once: if the process dies after the server accepted a
// message and before it was marked sent, the lease runs out and it goes again,
// with the same Message-ID so that receivers can tell the repeat.
import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Audit } from "../audit.ts";
import type { MailKind, OutboxMessage, UserStore } from "../store/store.ts";
import type { AccountMails } from "./messages.ts";
import type { MailTransport } from "./transport.ts";

export type DeliveryResult = "sent" | "retry" | "failed";

export interface SenderSettings {
  maxAttempts: number;
  retryBaseSeconds: number;
  pollIntervalMs: number;
}

export interface MailSender {
  /** Looks at the outbox now (after a request queued a message) instead of at the next poll. */
  wake(): void;
  /** Stops polling and waits for the delivery in progress. */
  stop(): Promise<void>;
}

/** Longer than the transport's worst case (10 s to connect, 10 s greeting, 30 s idle), so a lease outlives a send. */
const LEASE_MS = 5 * 60_000;
const BATCH = 10;
const MAX_BACKOFF_MS = 3_600_000;

export interface SenderOptions {
  store: UserStore;
  transport: MailTransport;
  mails: AccountMails;
  settings: SenderSettings;
  clock: () => number;
  log: FastifyBaseLogger;
  audit: Audit;
  onDelivery?: (kind: MailKind, result: DeliveryResult) => void;
}

export function createMailSender({
  store,
  transport,
  mails,
  settings,
  clock,
  log,
  audit,
  onDelivery,
}: SenderOptions): MailSender {
  const owner = randomUUID();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const iso = (ms: number) => new Date(ms).toISOString();

  async function deliver(message: OutboxMessage): Promise<void> {
    const rendered = mails.render(message);
    let error: string | undefined;
    if (!rendered) error = "the link in this message can no longer be opened (the signing secret changed)";
    else {
      try {
        await transport.send(rendered);
      } catch (failure) {
        error = (failure as Error).message;
      }
    }
    if (error === undefined) {
      await store.completeMail(message.id, owner, { status: "sent", at: iso(clock()) });
      await audit.record("mail", message.userId, `${message.kind}_sent`, null);
      onDelivery?.(message.kind, "sent");
      return;
    }
    if (rendered && message.attempts < settings.maxAttempts) {
      const delay = Math.min(MAX_BACKOFF_MS, settings.retryBaseSeconds * 1000 * 2 ** (message.attempts - 1));
      await store.completeMail(message.id, owner, { status: "pending", nextAttemptAt: iso(clock() + delay), error });
      log.warn(
        { mailId: message.id, attempt: message.attempts, retryInMs: delay, error },
        "mail delivery failed; will retry",
      );
      onDelivery?.(message.kind, "retry");
      return;
    }
    await store.completeMail(message.id, owner, { status: "failed", error });
    await audit.record("mail", message.userId, `${message.kind}_failed`, null);
    log.error({ mailId: message.id, attempts: message.attempts, error }, "mail delivery failed for good");
    onDelivery?.(message.kind, "failed");
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      let batch: OutboxMessage[];
      do {
        const now = clock();
        batch = await store.claimMail(owner, iso(now), iso(now + LEASE_MS), BATCH);
        for (const message of batch) {
          if (stopped) return;
          await deliver(message);
        }
      } while (batch.length === BATCH && !stopped);
    } while (again && !stopped);
  }

  function run(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    running = drain()
      .catch((error) => log.warn({ err: error }, "mail outbox unavailable; will retry"))
      .finally(() => {
        running = undefined;
        if (!stopped) {
          timer = setTimeout(run, settings.pollIntervalMs);
          timer.unref();
        }
      });
  }

  timer = setTimeout(run, 0);
  timer.unref();

  return {
    wake: run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      transport.close();
    },
  };
}
