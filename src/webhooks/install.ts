// Webhooks: the /webhooks resource (admins), and the worker that delivers
// the account events to the endpoints, signed by the Standard Webhooks
// scheme (stopped when the app closes). The events themselves are written
// by the store in the transaction of the change they tell of. Security
// notifications to the account's owner are the other way out: a shared
// service (mail/notices.ts) that the capabilities queue with their changes,
// delivered by the mail outbox.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { createWebhookEndpoints } from "./endpoints.ts";
import { webhookRoutes } from "./routes.ts";
import { webhookSecretSealer } from "./secrets.ts";
import { createWebhookSender } from "./sender.ts";
import { webhookTestRoutes } from "./test-event.ts";

export async function installWebhooks(
  api: FastifyInstance,
  { config, store, clock, log, metrics, resolve, signingMaterial, guards }: Services,
): Promise<void> {
  const webhookSealer = webhookSecretSealer(config.mfa.encryptionKeys, signingMaterial);
  const webhookEndpoints = createWebhookEndpoints(store, webhookSealer, config.webhooks, clock, resolve);
  const webhookSender = createWebhookSender({
    store,
    sealer: webhookSealer,
    settings: config.webhooks,
    clock,
    log,
    resolve,
    ...(metrics ? { onDelivery: (type, result) => metrics.observeWebhook(type, result) } : {}),
  });
  api.addHook("onClose", async function stopWebhookSender() {
    await webhookSender.stop();
  });
  await api.register(webhookRoutes, {
    store,
    guards,
    endpoints: webhookEndpoints,
    clock,
    wake: webhookSender.wake,
  });
  // Issue 35: POST /webhooks/{id}/test, through the same outbox and worker.
  await api.register(webhookTestRoutes, { store, guards, clock, wake: webhookSender.wake });
}
