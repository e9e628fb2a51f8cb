// The mail kind of the outbox (src/outbox/worker.ts): renders a queued
// message and sends it over SMTP (or into .eml files). A failure is retried
// with exponential backoff (base, 2x, 4x, ... capped at an hour); after
// MAIL_MAX_ATTEMPTS the message is marked failed: visible in the CLI, the
// metrics, the audit trail and the log, and retried only when an operator
// says so. A repeat after a lost lease carries the same Message-ID, so that
// receivers can tell it apart.
import type { FastifyBaseLogger } from "fastify";
import {
  createOutboxWorker,
  type DeliveryResult,
  deliveryOutcome,
  doublingBackoff,
  type OutboxWorker,
} from "../outbox/worker.ts";
import type { Audit } from "../platform/audit.ts";
import type { MailKind, OutboxMessage, UserStore } from "../store/store.ts";
import type { AccountMails } from "./messages.ts";
import type { MailTransport, RenderedMail } from "./transport.ts";

export type { DeliveryResult } from "../outbox/worker.ts";

export interface SenderSettings {
  maxAttempts: number;
  retryBaseSeconds: number;
  pollIntervalMs: number;
}

export type MailSender = OutboxWorker;

/** Longer than the transport's worst case (10 s to connect, 10 s greeting, 30 s idle), so a lease outlives a send. */
const LEASE_MS = 5 * 60_000;
const MAX_BACKOFF_MS = 3_600_000;
const UNRENDERABLE = "the link in this message can no longer be opened (the signing secret changed)";

export interface SenderOptions {
  store: UserStore;
  transport: MailTransport;
  mails: AccountMails;
  settings: SenderSettings;
  clock: () => number;
  log: FastifyBaseLogger;
  audit: Audit;
  onDelivery?: (kind: MailKind, result: DeliveryResult) => void;
  /** Issue 37: the brand put on each mail as it goes out (branding/mail-parts.ts). */
  brand?: (mail: RenderedMail) => Promise<RenderedMail>;
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
  brand = async (mail) => mail,
}: SenderOptions): MailSender {
  const worker = createOutboxWorker<OutboxMessage>(
    {
      name: "mail",
      claim: (owner, now, leaseUntil, limit) => store.claimMail(owner, now, leaseUntil, limit),
      async deliver(message) {
        const rendered = mails.render(message);
        if (!rendered) return { error: UNRENDERABLE, final: true };
        try {
          await transport.send(await brand(rendered));
          return undefined;
        } catch (failure) {
          return { error: (failure as Error).message };
        }
      },
      retryDelayMs: doublingBackoff(settings.retryBaseSeconds * 1000, MAX_BACKOFF_MS, settings.maxAttempts),
      async record(message, owner, outcome) {
        await store.completeMail(message.id, owner, deliveryOutcome(outcome));
        if (outcome.result === "sent") {
          await audit.record("mail", message.userId, `${message.kind}_sent`, null);
        } else if (outcome.result === "retry") {
          const { error, retryInMs } = outcome;
          log.warn(
            { mailId: message.id, attempt: message.attempts, retryInMs, error },
            "mail delivery failed; will retry",
          );
        } else {
          await audit.record("mail", message.userId, `${message.kind}_failed`, null);
          log.error(
            { mailId: message.id, attempts: message.attempts, error: outcome.error },
            "mail delivery failed for good",
          );
        }
      },
    },
    {
      clock,
      log,
      pollIntervalMs: settings.pollIntervalMs,
      leaseMs: LEASE_MS,
      ...(onDelivery ? { onAttempt: (message, result) => onDelivery(message.kind, result) } : {}),
    },
  );
  return {
    wake: worker.wake,
    async stop() {
      await worker.stop();
      transport.close();
    },
  };
}
