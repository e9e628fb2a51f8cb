// POST /webhooks/{id}/test (issue 35): an admin sends a `webhook.test` event to
// one endpoint, to see that the receiver is reachable and verifies the
// signature. It goes through the same outbox, worker and signing as every
// event (so its attempts show in the endpoint's delivery log), to that
// endpoint only and whatever types it subscribes to; the body names the admin
// and the endpoint, no account's data. Audited as webhook/test_event_sent.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Guards } from "../auth/guard.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, notFound } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import { newId } from "../store/ids.ts";
import type { UserStore, WebhookEvent } from "../store/store.ts";
import { WEBHOOK_NOT_FOUND, webhookAudit } from "./endpoints.ts";
import { WEBHOOK_TEST_EVENT } from "./events.ts";
import { WebhookIdParams, WebhookTestOut } from "./schemas.ts";

export const ENDPOINT_DISABLED = "The endpoint is disabled: enable it first, then send the test event";

export interface WebhookTestRouteOptions {
  store: UserStore;
  guards: Guards;
  clock: () => number;
  /** Wakes the delivery worker once the event is committed. */
  wake: () => void;
}

/** The test event's exact body: Standard Webhooks' {type, timestamp, data}. */
export function webhookTestEvent(adminId: string, endpointId: string, at: number): WebhookEvent {
  const body = {
    type: WEBHOOK_TEST_EVENT,
    timestamp: new Date(at).toISOString(),
    data: { user_id: adminId, endpoint_id: endpointId },
  };
  // The outbox orders deliveries per user_id: the admin who asked stands in for the account.
  return { id: newId(at), type: WEBHOOK_TEST_EVENT, userId: adminId, payload: JSON.stringify(body) };
}

export const webhookTestRoutes: FastifyPluginAsyncTypebox<WebhookTestRouteOptions> = async (
  app,
  { store, guards, clock, wake },
) => {
  app.post(
    "/webhooks/:id/test",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "sendWebhookTestEvent",
        tags: ["webhooks"],
        summary: "Send a test event to one endpoint (admins)",
        description:
          "Queues a `webhook.test` event for this endpoint only, whatever types it subscribes to, due now: " +
          "signed and delivered like every event (retried on the same schedule), its attempts in " +
          "`GET /webhooks/{id}/deliveries`. Its data names the admin (`user_id`) and the endpoint " +
          "(`endpoint_id`). No body. 409 for a disabled endpoint.",
        security: BEARER_SECURITY,
        params: WebhookIdParams,
        response: {
          202: WebhookTestOut,
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
          404: errorResponse("No endpoint with this id.", WEBHOOK_NOT_FOUND),
          409: errorResponse("The endpoint is disabled.", ENDPOINT_DISABLED),
          422: errorResponse("The path is invalid.", 'params.id: must match format "uuid"'),
        },
      },
    },
    async function sendWebhookTestEvent(request, reply) {
      const endpoint = await store.findWebhookEndpoint(request.params.id);
      if (!endpoint) throw notFound(WEBHOOK_NOT_FOUND);
      // A disabled endpoint's queue waits until it is on: a test that cannot arrive would only mislead.
      if (!endpoint.enabled) throw new HttpError(409, ENDPOINT_DISABLED);
      const admin = request.user!.id;
      const event = webhookTestEvent(admin, endpoint.id, clock());
      const message = await store.queueWebhookTestEvent(endpoint.id, event, [
        webhookAudit("test_event_sent", admin, request.ip),
      ]);
      if (!message) throw notFound(WEBHOOK_NOT_FOUND); // deleted in between
      wake();
      reply.code(202);
      return {
        event_id: message.eventId,
        type: WEBHOOK_TEST_EVENT as typeof WEBHOOK_TEST_EVENT,
        status: "pending" as const,
        next_attempt_at: message.nextAttemptAt,
      };
    },
  );
};
