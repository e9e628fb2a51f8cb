// The back-channel logout kind of the outbox (src/outbox/worker.ts): POSTs a
// logout token (OpenID Connect Back-Channel Logout 1.0, section 2.5) to the
// backchannel_logout_uri of each client whose session ended, as
// application/x-www-form-urlencoded `logout_token=...`. The store queues one
// row per client and sid in the ending's transaction (store/backchannel-
// logouts.ts); the token is signed here at each attempt, because it expires
// two minutes after it is made and a retry must not carry a dead one. The
// HTTP request goes through the outbound guard the webhooks use
// (outbound/guard.ts): no redirects, one deadline (WEBHOOK_TIMEOUT_MS), the
// address connected to checked; under backchannelRules() (backchannel-uri.ts),
// checked again here because DNS and settings change after registration.
// A 2xx is delivered (the spec says 200;
// 204 is common). A logout is only useful soon, so the schedule is short:
// the first attempt at once; after a failed one the next 5 s later, then
// 30 s, 2 min, 10 min and 45 min after each further failure (six attempts
// within the hour); then it is given up, visibly: a log line, the metric's
// "failed" and an audit event (oidc, backchannel_logout_failed) on the user.
import type { FastifyBaseLogger } from "fastify";
import { postOutbound, type Resolve } from "../outbound/guard.ts";
import { createOutboxWorker, type DeliveryResult, deliveryOutcome, type OutboxWorker } from "../outbox/worker.ts";
import type { BackchannelLogoutMessage, UserStore } from "../store/store.ts";
import type { WebhookConfig } from "../webhooks/settings.ts";
import { backchannelRules } from "./backchannel-uri.ts";
import type { IdTokens } from "./id-tokens.ts";

/** The waits after the 1st, 2nd, ... failed attempt; then it gives up. */
export const LOGOUT_RETRY_SCHEDULE_MS = [5, 30, 120, 600, 2700].map((seconds) => seconds * 1000);
/** Longer than one attempt can take (WEBHOOK_TIMEOUT_MS is at most a minute). */
const LEASE_MS = 5 * 60_000;

export interface BackchannelLogoutSenderOptions {
  store: UserStore;
  idTokens: IdTokens;
  /** The timeout and the private-address refusal of outbound requests, shared with webhooks. */
  settings: Pick<WebhookConfig, "timeoutMs" | "refusePrivateAddresses" | "pollIntervalMs">;
  clock: () => number;
  log: FastifyBaseLogger;
  /** DNS for the outbound guard (the system's unless a test substitutes its own). */
  resolve?: Resolve;
  onDelivery?: (result: DeliveryResult) => void;
}

export function createBackchannelLogoutSender({
  store,
  idTokens,
  settings,
  clock,
  log,
  resolve,
  onDelivery,
}: BackchannelLogoutSenderOptions): OutboxWorker {
  const facts = (message: BackchannelLogoutMessage) => ({
    logoutId: message.id,
    clientId: message.clientId,
    attempt: message.attempts,
  });
  const worker = createOutboxWorker<BackchannelLogoutMessage>(
    {
      name: "back-channel logout",
      claim: (owner, now, leaseUntil, limit) => store.claimBackchannelLogouts(owner, now, leaseUntil, limit),
      async deliver(message) {
        const token = idTokens.logoutToken(message.clientId, message.userId, message.sid);
        const result = await postOutbound(message.uri, {
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "user-agent": "user-token-service-backchannel-logout",
          },
          body: new URLSearchParams({ logout_token: token }).toString(),
          timeoutMs: settings.timeoutMs,
          rules: backchannelRules(settings, message.registeredBy),
          ...(resolve ? { resolve } : {}),
        });
        return result.error === undefined ? undefined : { error: result.error };
      },
      retryDelayMs: (attempts) => LOGOUT_RETRY_SCHEDULE_MS[attempts - 1],
      async record(message, owner, outcome) {
        await store.completeBackchannelLogout(message.id, owner, deliveryOutcome(outcome));
        if (outcome.result === "sent") return;
        if (outcome.result === "retry") {
          const { error, retryInMs } = outcome;
          log.warn({ ...facts(message), retryInMs, error }, "back-channel logout failed; will retry");
          return;
        }
        await store.recordEvent({
          type: "oidc",
          userId: message.userId,
          outcome: "backchannel_logout_failed",
          clientAddress: null,
        });
        log.error({ ...facts(message), error: outcome.error }, "back-channel logout failed for good; given up");
      },
    },
    {
      clock,
      log,
      pollIntervalMs: settings.pollIntervalMs,
      leaseMs: LEASE_MS,
      ...(onDelivery ? { onAttempt: (_message, result) => onDelivery(result) } : {}),
    },
  );
  store.onBackchannelLogouts(worker.wake);
  return worker;
}
