// The webhook kind of the outbox (src/outbox/worker.ts): signs each queued
// event for its endpoint and POSTs it (outbound/guard.ts). At least once, in order
// per user and endpoint (the store's claim), on Standard Webhooks' retry
// schedule: the first attempt at once; after a failed attempt the next 5 s
// later, then 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each further
// failure (eight attempts over about 27 hours; each wait counts from the end
// of the failed attempt: RETRY_SCHEDULE_MS). A 2xx is delivered; anything else,
// a timeout or a refused address is a failure. Every attempt goes into the
// endpoint's delivery log. When an event's attempts are spent the service
// turns its endpoint off (saying why, with an audit event): an endpoint that
// fails for a day is gone or broken, and its queue waits, in order, until
// an admin turns it on again. `webhook-id` is the event's id on every
// attempt, so a receiver drops repeats by it.
//
// With no endpoint at all (the usual deployment) there is nothing to deliver
// (an endpoint's queue goes with it), so the worker's poll asks the store
// nothing: it asks whether any endpoint exists at most every
// ENDPOINT_RECHECK_MS, and at once when woken (this process published events
// or queued a redelivery). While one exists it polls as before (a claim per
// poll; after the last endpoint goes, claims find nothing until the
// recheck). An endpoint created through another instance or the CLI is
// therefore polled for within ENDPOINT_RECHECK_MS; events this process
// publishes for it wake the worker at once, whatever it last saw.
import type { FastifyBaseLogger } from "fastify";
import type { Sealer } from "../mail/seal.ts";
import { type PostResult, postOutbound, type Resolve } from "../outbound/guard.ts";
import { createOutboxWorker, type DeliveryResult, deliveryOutcome, type OutboxWorker } from "../outbox/worker.ts";
import type { UserStore, WebhookMessage } from "../store/store.ts";
import { webhookAudit, webhookRules } from "./endpoints.ts";
import { signDelivery } from "./secrets.ts";
import type { WebhookConfig } from "./settings.ts";

/** The waits after the 1st, 2nd, ... failed attempt (Standard Webhooks' schedule); then it gives up. */
export const RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((seconds) => seconds * 1000);
/** Longer than one attempt can take (WEBHOOK_TIMEOUT_MS is at most a minute). */
const LEASE_MS = 5 * 60_000;
/** How long what the store said about endpoints (any, or none) is believed before it is asked again. */
export const ENDPOINT_RECHECK_MS = 30_000;
const UNOPENABLE =
  "the endpoint's secret can no longer be opened (MFA_ENCRYPTION_KEY or the signing keys changed): rotate it";

export interface WebhookSenderOptions {
  store: UserStore;
  sealer: Sealer;
  settings: WebhookConfig;
  clock: () => number;
  log: FastifyBaseLogger;
  /** DNS for the outbound guard (the system's unless a test substitutes its own). */
  resolve?: Resolve;
  onDelivery?: (type: string, result: DeliveryResult) => void;
}

export function createWebhookSender({
  store,
  sealer,
  settings,
  clock,
  log,
  resolve,
  onDelivery,
}: WebhookSenderOptions): OutboxWorker {
  /** What the last attempt of a message saw, for its log entry. */
  const seen = new WeakMap<WebhookMessage, PostResult>();
  /** Whether an endpoint existed when last asked, believed until `until` (clock ms); none: ask. */
  let belief: { some: boolean; until: number } | undefined;

  /** Whether any endpoint (enabled or not) may exist: as last seen, asked again after ENDPOINT_RECHECK_MS. */
  async function endpointsMayExist(): Promise<boolean> {
    const now = clock();
    if (belief !== undefined && now < belief.until && now >= belief.until - ENDPOINT_RECHECK_MS) return belief.some;
    const some = (await store.listWebhookEndpoints({ limit: 1 })).length > 0;
    belief = { some, until: now + ENDPOINT_RECHECK_MS };
    return some;
  }

  /** The secrets that sign now: the current one, and the previous one during its grace period. */
  async function secretsOf(endpointId: string) {
    const endpoint = await store.findWebhookEndpoint(endpointId);
    if (!endpoint) return undefined;
    const current = sealer.open(endpoint.sealedSecret);
    const inGrace =
      endpoint.previousSealedSecret !== null &&
      endpoint.previousSecretUntil !== null &&
      Date.parse(endpoint.previousSecretUntil) > clock();
    const previous = inGrace ? sealer.open(endpoint.previousSealedSecret as string) : undefined;
    return { endpoint, secrets: current === undefined ? [] : [current, ...(previous ? [previous] : [])] };
  }

  const worker = createOutboxWorker<WebhookMessage>(
    {
      name: "webhook",
      claim: async (owner, now, leaseUntil, limit) =>
        (await endpointsMayExist()) ? store.claimWebhookMessages(owner, now, leaseUntil, limit) : [],
      async deliver(message) {
        const found = await secretsOf(message.endpointId);
        // A deleted endpoint's queue is deleted with it; this one was claimed just before.
        if (!found) return { error: "the endpoint was deleted", final: true };
        if (found.secrets.length === 0) {
          seen.set(message, { error: UNOPENABLE, durationMs: 0 });
          return { error: UNOPENABLE, final: true };
        }
        const timestamp = Math.floor(clock() / 1000);
        const result = await postOutbound(found.endpoint.url, {
          headers: {
            "content-type": "application/json",
            "user-agent": "user-token-service-webhooks",
            "webhook-id": message.eventId,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": signDelivery(found.secrets, message.eventId, timestamp, message.payload),
          },
          body: message.payload,
          timeoutMs: settings.timeoutMs,
          rules: webhookRules(settings),
          ...(resolve ? { resolve } : {}),
        });
        seen.set(message, result);
        return result.error === undefined ? undefined : { error: result.error };
      },
      retryDelayMs: (attempts) => RETRY_SCHEDULE_MS[attempts - 1],
      async record(message, owner, outcome) {
        const result = seen.get(message);
        const attempt = {
          type: message.type,
          attempt: message.attempts,
          statusCode: result?.statusCode ?? null,
          durationMs: result?.durationMs ?? 0,
          error: outcome.result === "sent" ? null : outcome.error,
        };
        await store.completeWebhookMessage(message, owner, deliveryOutcome(outcome), attempt);
        if (outcome.result === "sent") return;
        if (outcome.result === "retry") {
          const { error, retryInMs } = outcome;
          log.warn(
            { endpointId: message.endpointId, eventId: message.eventId, attempt: message.attempts, retryInMs, error },
            "webhook delivery failed; will retry",
          );
          return;
        }
        const reason = `event ${message.eventId} was not delivered after ${message.attempts} attempts: ${outcome.error}`;
        await store.updateWebhookEndpoint(message.endpointId, { enabled: false, disabledReason: reason }, [
          webhookAudit("endpoint_disabled", null, null),
        ]);
        log.error(
          {
            endpointId: message.endpointId,
            eventId: message.eventId,
            attempts: message.attempts,
            error: outcome.error,
          },
          "webhook delivery failed for good; endpoint turned off",
        );
      },
    },
    {
      clock,
      log,
      pollIntervalMs: settings.pollIntervalMs,
      leaseMs: LEASE_MS,
      ...(onDelivery ? { onAttempt: (message, result) => onDelivery(message.type, result) } : {}),
    },
  );
  // Woken when this process publishes; the poll finds the rest (events of other instances), and is all
  // there is when the store cannot tell.
  const woken: OutboxWorker = {
    // Whoever wakes the worker knows of something to deliver: believe in endpoints again.
    wake() {
      belief = undefined;
      worker.wake();
    },
    stop: worker.stop,
  };
  Promise.resolve()
    .then(() => store.onWebhookEvents(woken.wake))
    .catch((error) => log.warn({ err: error }, "webhook events are found by polling only"));
  return woken;
}
