// The settings of outbound deliveries, webhooks and back-channel logouts
// alike: whether a receiver may be on a private address (the outbound
// guard's rule, outbound/guard.ts), one deadline per delivery, and the
// grace of a rotated webhook secret. Declared here, beside the webhooks;
// config.ts composes them.
import { type Env, flag, integer, section } from "../settings/declare.ts";

export interface WebhookConfig {
  /**
   * WEBHOOK_REFUSE_PRIVATE_ADDRESSES: endpoints, and back-channel logout URIs, whose host has no public
   * address (loopback, private, link-local, ...) are refused at creation (422) and at every delivery. On
   * by default (the safe value); off lets a receiver on a private network or this machine be reached
   * (development), except by a dynamically registered client (oidc/backchannel-uri.ts).
   */
  refusePrivateAddresses: boolean;
  /** One deadline for connecting, the answer and its body. */
  timeoutMs: number;
  /** How long a rotated-away secret keeps signing deliveries beside the new one. */
  secretGraceSeconds: number;
  /** How often the worker looks for due deliveries (it is also woken when this process publishes one). */
  pollIntervalMs: number;
}

const WEBHOOK_REFUSE_PRIVATE_ADDRESSES = flag({
  name: "WEBHOOK_REFUSE_PRIVATE_ADDRESSES",
  fallback: "true",
  meaning:
    "Webhook URLs and back-channel logout URIs whose host has no public address (loopback, private, " +
    "link-local, ...) are refused at creation (422) and at every delivery. `false` (development only) allows " +
    "them, and plain http to a loopback host for back-channel logout, except to dynamically registered " +
    "clients. Keep it on in production.",
});

const WEBHOOK_TIMEOUT_MS = integer({
  name: "WEBHOOK_TIMEOUT_MS",
  fallback: 10_000,
  min: 100,
  max: 60_000,
  meaning: "One deadline for a delivery, of a webhook or a back-channel logout: connecting, the answer and its body.",
});

const WEBHOOK_SECRET_GRACE_SECONDS = integer({
  name: "WEBHOOK_SECRET_GRACE_SECONDS",
  fallback: 86_400,
  default: "`86400` (a day)",
  min: 0,
  max: 30 * 86_400,
  meaning: "How long a rotated-away webhook secret keeps signing beside the new one.",
});

export const WEBHOOK_SETTINGS = section("Webhooks and outbound deliveries", "src/webhooks/settings.ts", [
  WEBHOOK_REFUSE_PRIVATE_ADDRESSES,
  WEBHOOK_TIMEOUT_MS,
  WEBHOOK_SECRET_GRACE_SECONDS,
]);

export function readWebhookSettings(env: Env): WebhookConfig {
  return {
    refusePrivateAddresses: WEBHOOK_REFUSE_PRIVATE_ADDRESSES.read(env),
    timeoutMs: WEBHOOK_TIMEOUT_MS.read(env),
    secretGraceSeconds: WEBHOOK_SECRET_GRACE_SECONDS.read(env),
    pollIntervalMs: 1000,
  };
}
