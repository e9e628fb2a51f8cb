// The verbs on webhook endpoints that the /webhooks routes and the CLI
// share: checking a URL, creating an endpoint with a new secret (sealed at
// rest, answered once), rotating the secret with a grace period, and
// redelivering an event. Audit events name the admin who acted (null from
// the command line).
import type { WebhookConfig } from "../config.ts";
import { HttpError } from "../errors.ts";
import type { Sealer } from "../mail/seal.ts";
import type { AuditEntry, NewWebhookEndpoint, UserStore, WebhookEndpointRecord } from "../store/store.ts";
import { allowedAddresses } from "./outbound.ts";
import { newWebhookSecret } from "./secrets.ts";

export const WEBHOOK_NOT_FOUND = "Webhook endpoint not found";
export const EVENT_NOT_FOUND = "No such event was published to this endpoint";
export const URL_WITH_CREDENTIALS = "url: must not carry a user name or password";
export const PRIVATE_URL = "url: the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES is on)";
export const UNRESOLVABLE_URL = "url: the host name does not resolve";

/** The audit event of an admin's action on an endpoint: about the admin (null from the command line). */
export function webhookAudit(outcome: string, actor: string | null, clientAddress: string | null): AuditEntry {
  return { type: "webhook", outcome, clientAddress, userId: actor };
}

export interface WebhookEndpoints {
  /** 422 when the URL carries credentials, or (setting on) its host has no public address. */
  checkUrl(url: string): Promise<void>;
  create(
    endpoint: Omit<NewWebhookEndpoint, "sealedSecret">,
    actor: string | null,
    clientAddress: string | null,
  ): Promise<{ endpoint: WebhookEndpointRecord; secret: string }>;
  rotate(
    id: string,
    actor: string | null,
    clientAddress: string | null,
  ): Promise<{ endpoint: WebhookEndpointRecord; secret: string } | undefined>;
}

export function createWebhookEndpoints(
  store: UserStore,
  sealer: Sealer,
  settings: WebhookConfig,
  clock: () => number,
): WebhookEndpoints {
  return {
    async checkUrl(raw) {
      const url = new URL(raw);
      if (url.username !== "" || url.password !== "") throw new HttpError(422, URL_WITH_CREDENTIALS);
      if (!settings.refusePrivateAddresses) return;
      // Checked again at every delivery, on the address connected to (outbound.ts): DNS may change.
      const addresses = await allowedAddresses(url, true).catch(() => {
        throw new HttpError(422, UNRESOLVABLE_URL);
      });
      if (addresses.length === 0) throw new HttpError(422, PRIVATE_URL);
    },
    async create(fields, actor, clientAddress) {
      const secret = newWebhookSecret();
      const endpoint = await store.createWebhookEndpoint({ ...fields, sealedSecret: sealer.seal(secret) }, [
        webhookAudit("endpoint_created", actor, clientAddress),
      ]);
      return { endpoint, secret };
    },
    async rotate(id, actor, clientAddress) {
      const secret = newWebhookSecret();
      const until = new Date(clock() + settings.secretGraceSeconds * 1000).toISOString();
      const endpoint = await store.rotateWebhookSecret(id, sealer.seal(secret), until, [
        webhookAudit("secret_rotated", actor, clientAddress),
      ]);
      return endpoint && { endpoint, secret };
    },
  };
}
