// The verbs on webhook endpoints that the /webhooks routes and the CLI
// share: checking a URL (the outbound guard's rules for webhooks: http or
// https, private addresses as WEBHOOK_REFUSE_PRIVATE_ADDRESSES says),
// creating an endpoint with a new secret (sealed at rest, answered once),
// rotating the secret with a grace period, and redelivering an event. Audit
// events name the admin who acted (null from the command line).

import { HttpError } from "../errors.ts";
import type { Sealer } from "../mail/seal.ts";
import { checkDestination, type OutboundRules, type Resolve, systemResolve } from "../outbound/guard.ts";
import type { AuditEntry, NewWebhookEndpoint, UserStore, WebhookEndpointRecord } from "../store/store.ts";
import { newWebhookSecret } from "./secrets.ts";
import type { WebhookConfig } from "./settings.ts";

export const WEBHOOK_NOT_FOUND = "Webhook endpoint not found";
export const EVENT_NOT_FOUND = "No such event was published to this endpoint";
export const URL_WITH_CREDENTIALS = "url: must not carry a user name or password";
export const PRIVATE_URL = "url: the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES is on)";
export const UNRESOLVABLE_URL = "url: the host name does not resolve";

/** Where webhooks may be delivered: http or https, private addresses only with the setting off. */
export function webhookRules(settings: Pick<WebhookConfig, "refusePrivateAddresses">): OutboundRules {
  return {
    privateAllowed: !settings.refusePrivateAddresses,
    httpOnlyToLoopback: false,
    privateRefusedBy: "WEBHOOK_REFUSE_PRIVATE_ADDRESSES",
  };
}

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
  resolve: Resolve = systemResolve,
): WebhookEndpoints {
  return {
    async checkUrl(raw) {
      // Checked again at every delivery, on the address connected to (outbound/guard.ts): DNS may change.
      const refusal = await checkDestination(new URL(raw), webhookRules(settings), resolve);
      if (refusal === "credentials") throw new HttpError(422, URL_WITH_CREDENTIALS);
      if (refusal === "unresolvable") throw new HttpError(422, UNRESOLVABLE_URL);
      if (refusal !== undefined) throw new HttpError(422, PRIVATE_URL);
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
