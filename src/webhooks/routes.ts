// The /webhooks resource, for admins, under the spec's route conventions:
// POST 201 (with Location and the secret, shown this once), GET 200, PUT
// 200 (the whole record), PATCH 200 (the fields sent), DELETE 204; nested:
// POST /webhooks/{id}/secrets rotates the secret (201, shown once), GET
// /webhooks/{id}/deliveries reads the delivery log, POST
// /webhooks/{id}/deliveries queues one event again (a redelivery, 201).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Guards } from "../auth/guard.ts";
import { NOT_ENOUGH_PRIVILEGES, notFound } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { UserStore, WebhookEndpointRecord } from "../store/store.ts";
import { EVENT_NOT_FOUND, PRIVATE_URL, WEBHOOK_NOT_FOUND, type WebhookEndpoints, webhookAudit } from "./endpoints.ts";
import type { DeliveredEventType } from "./events.ts";
import {
  DeliveryPage,
  PageQuery,
  RedeliveryCreate,
  RedeliveryOut,
  WEBHOOKS_PAGE_DEFAULT,
  WebhookCreate,
  WebhookCreated,
  WebhookIdParams,
  WebhookOut,
  WebhookPage,
  WebhookPatch,
  WebhookReplace,
  WebhookSecretOut,
} from "./schemas.ts";

export interface WebhookRouteOptions {
  store: UserStore;
  guards: Guards;
  endpoints: WebhookEndpoints;
  clock: () => number;
  /** Wakes the delivery worker after a redelivery was queued. */
  wake: () => void;
}

const errors = {
  401: UnauthorizedResponse,
  403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
  404: errorResponse("No endpoint with this id.", WEBHOOK_NOT_FOUND),
  415: errorResponse("The body is not JSON.", "Unsupported Media Type"),
  422: errorResponse(
    "The body, path or query is invalid, or the URL's host has no public address (when that is refused).",
    PRIVATE_URL,
  ),
};

function toWebhookOut(endpoint: WebhookEndpointRecord): WebhookOut {
  return {
    id: endpoint.id,
    url: endpoint.url,
    event_types: endpoint.eventTypes as WebhookOut["event_types"],
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason,
    description: endpoint.description,
    previous_secret_expires_at: endpoint.previousSecretUntil,
    created_at: endpoint.createdAt,
    updated_at: endpoint.updatedAt,
  };
}

/** The path and query of the next page, or null. */
function nextPage(path: string, limit: number, cursor: string | null): string | null {
  return cursor ? `${path}?${new URLSearchParams({ limit: String(limit), cursor })}` : null;
}

export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (
  app,
  { store, guards, endpoints, clock, wake },
) => {
  const admins = [guards.authenticate, guards.requireAdmin];
  const tags = ["webhooks"];

  app.post(
    "/webhooks",
    {
      preHandler: admins,
      schema: {
        operationId: "createWebhook",
        tags,
        summary: "Create a webhook endpoint (admins)",
        description:
          "Events of the listed types are POSTed to `url`, signed by the Standard Webhooks scheme. The answer " +
          "carries the signing secret (`whsec_...`) this once. Events are published from the moment the endpoint " +
          "exists (on other instances, within five seconds).",
        security: BEARER_SECURITY,
        body: WebhookCreate,
        response: {
          201: WebhookCreated,
          401: errors[401],
          403: errors[403],
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function createWebhook(request, reply) {
      const { url, event_types, enabled = true, description = null } = request.body;
      await endpoints.checkUrl(url);
      const { endpoint, secret } = await endpoints.create(
        { url, eventTypes: event_types, enabled, description },
        request.user!.id,
        request.ip,
      );
      reply.code(201).header("location", `/webhooks/${endpoint.id}`);
      return { ...toWebhookOut(endpoint), secret };
    },
  );

  app.get(
    "/webhooks",
    {
      preHandler: admins,
      schema: {
        operationId: "listWebhooks",
        tags,
        summary: "List webhook endpoints (admins)",
        description: "Oldest first, in pages: follow `next` until it is null. Secrets are never shown.",
        security: BEARER_SECURITY,
        querystring: PageQuery,
        response: { 200: WebhookPage, 401: errors[401], 403: errors[403], 422: errors[422] },
      },
    },
    async function listWebhooks(request) {
      const { limit = WEBHOOKS_PAGE_DEFAULT, cursor } = request.query;
      const rows = await store.listWebhookEndpoints({ limit: limit + 1, ...(cursor ? { after: cursor } : {}) });
      const items = rows.slice(0, limit);
      const nextCursor = rows.length > limit ? (items.at(-1)?.id ?? null) : null;
      return {
        items: items.map(toWebhookOut),
        next_cursor: nextCursor,
        next: nextPage("/webhooks", limit, nextCursor),
      };
    },
  );

  app.get(
    "/webhooks/:id",
    {
      preHandler: admins,
      schema: {
        operationId: "readWebhook",
        tags,
        summary: "Read a webhook endpoint (admins)",
        description: "The secret is never shown again after creation or rotation.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        response: { 200: WebhookOut, 401: errors[401], 403: errors[403], 404: errors[404], 422: errors[422] },
      },
    },
    async function readWebhook(request) {
      return toWebhookOut(await found(request.params.id));
    },
  );

  const changeResponses = {
    200: WebhookOut,
    401: errors[401],
    403: errors[403],
    404: errors[404],
    415: errors[415],
    422: errors[422],
  };

  app.put(
    "/webhooks/:id",
    {
      preHandler: admins,
      schema: {
        operationId: "replaceWebhook",
        tags,
        summary: "Replace a webhook endpoint (admins)",
        description:
          "Replaces the whole record: `enabled` left out is true, `description` left out is null. The secret " +
          "stays (rotate it with `POST /webhooks/{id}/secrets`). Turning an endpoint on again delivers what " +
          "waited in its queue, in order.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        body: WebhookReplace,
        response: changeResponses,
      },
    },
    async function replaceWebhook(request) {
      const { url, event_types, enabled = true, description = null } = request.body;
      await endpoints.checkUrl(url);
      const changes = { url, eventTypes: event_types, enabled, description, disabledReason: null };
      const endpoint = await store.updateWebhookEndpoint(request.params.id, changes, [
        changed(request.user!.id, request.ip),
      ]);
      if (!endpoint) throw notFound(WEBHOOK_NOT_FOUND);
      return toWebhookOut(endpoint);
    },
  );

  app.patch(
    "/webhooks/:id",
    {
      preHandler: admins,
      schema: {
        operationId: "updateWebhook",
        tags,
        summary: "Update some fields of a webhook endpoint (admins)",
        description: "Only the fields sent change. `enabled: true` turns on an endpoint the service turned off.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        body: WebhookPatch,
        response: changeResponses,
      },
    },
    async function updateWebhook(request) {
      const { url, event_types, enabled, description } = request.body;
      if (url !== undefined) await endpoints.checkUrl(url);
      const changes = { url, eventTypes: event_types, enabled, description };
      const endpoint = await store.updateWebhookEndpoint(request.params.id, changes, [
        changed(request.user!.id, request.ip),
      ]);
      if (!endpoint) throw notFound(WEBHOOK_NOT_FOUND);
      return toWebhookOut(endpoint);
    },
  );

  app.delete(
    "/webhooks/:id",
    {
      preHandler: admins,
      schema: {
        operationId: "deleteWebhook",
        tags,
        summary: "Delete a webhook endpoint (admins)",
        description: "204 with no body. Its queued events and its delivery log go with it.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        response: {
          204: { type: "null", description: "Deleted." },
          401: errors[401],
          403: errors[403],
          404: errors[404],
          422: errors[422],
        },
      },
    },
    async function deleteWebhook(request, reply) {
      const events = [webhookAudit("endpoint_deleted", request.user!.id, request.ip)];
      if (!(await store.removeWebhookEndpoint(request.params.id, events))) throw notFound(WEBHOOK_NOT_FOUND);
      reply.code(204).send(null);
    },
  );

  app.post(
    "/webhooks/:id/secrets",
    {
      preHandler: admins,
      schema: {
        operationId: "rotateWebhookSecret",
        tags,
        summary: "Rotate a webhook endpoint's secret (admins)",
        description:
          "Creates a new signing secret, answered this once. The previous one keeps signing deliveries beside it " +
          "(two `v1,` signatures) until `previous_secret_expires_at` (WEBHOOK_SECRET_GRACE_SECONDS), so that " +
          "receivers can switch without losing an event. No body.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        response: {
          201: WebhookSecretOut,
          401: errors[401],
          403: errors[403],
          404: errors[404],
          422: errors[422],
        },
      },
    },
    async function rotateWebhookSecret(request, reply) {
      const rotated = await endpoints.rotate(request.params.id, request.user!.id, request.ip);
      if (!rotated) throw notFound(WEBHOOK_NOT_FOUND);
      reply.code(201);
      return { secret: rotated.secret, previous_secret_expires_at: rotated.endpoint.previousSecretUntil as string };
    },
  );

  app.get(
    "/webhooks/:id/deliveries",
    {
      preHandler: admins,
      schema: {
        operationId: "listWebhookDeliveries",
        tags,
        summary: "An endpoint's delivery log (admins)",
        description:
          "Every attempt, newest first, in pages: the event, its attempt number, the receiver's status code, " +
          "how long it took and why it failed. Entries older than AUDIT_RETENTION_DAYS are pruned.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        querystring: PageQuery,
        response: { 200: DeliveryPage, 401: errors[401], 403: errors[403], 404: errors[404], 422: errors[422] },
      },
    },
    async function listWebhookDeliveries(request) {
      const { limit = WEBHOOKS_PAGE_DEFAULT, cursor } = request.query;
      const { id } = await found(request.params.id);
      const rows = await store.listWebhookAttempts(id, { limit: limit + 1, ...(cursor ? { before: cursor } : {}) });
      const items = rows.slice(0, limit);
      const nextCursor = rows.length > limit ? (items.at(-1)?.id ?? null) : null;
      return {
        items: items.map((attempt) => ({
          id: attempt.id,
          event_id: attempt.eventId,
          type: attempt.type as DeliveredEventType,
          attempt: attempt.attempt,
          status_code: attempt.statusCode,
          duration_ms: attempt.durationMs,
          error: attempt.error,
          created_at: attempt.createdAt,
        })),
        next_cursor: nextCursor,
        next: nextPage(`/webhooks/${id}/deliveries`, limit, nextCursor),
      };
    },
  );

  app.post(
    "/webhooks/:id/deliveries",
    {
      preHandler: admins,
      schema: {
        operationId: "redeliverWebhookEvent",
        tags,
        summary: "Deliver one event again (admins)",
        description:
          "Queues the event (delivered, pending or given up) for this endpoint again, due now, with the same " +
          "`webhook-id` and body and a fresh count of attempts. A disabled endpoint's queue waits until it is on.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        body: RedeliveryCreate,
        response: {
          201: RedeliveryOut,
          401: errors[401],
          403: errors[403],
          404: errorResponse("No such endpoint, or no such event for it.", EVENT_NOT_FOUND),
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function redeliverWebhookEvent(request, reply) {
      const { id } = await found(request.params.id);
      const now = new Date(clock()).toISOString();
      const message = await store.redeliverWebhookEvent(id, request.body.event_id, now);
      if (!message) throw notFound(EVENT_NOT_FOUND);
      wake();
      reply.code(201);
      return {
        event_id: message.eventId,
        type: message.type as DeliveredEventType,
        status: "pending" as const,
        next_attempt_at: message.nextAttemptAt,
      };
    },
  );

  async function found(id: string): Promise<WebhookEndpointRecord> {
    const endpoint = await store.findWebhookEndpoint(id);
    if (!endpoint) throw notFound(WEBHOOK_NOT_FOUND);
    return endpoint;
  }
};

const changed = (actor: string, clientAddress: string) => webhookAudit("endpoint_updated", actor, clientAddress);
