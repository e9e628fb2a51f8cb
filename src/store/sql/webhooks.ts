// The webhooks' verbs (webhooks.ts): endpoints (each change with its audit
// events, and the in-memory subscriptions forgotten: sql/webhook-events.ts),
// the delivery worker's claim of messages in order per user and its log,
// redelivery and housekeeping. The messages themselves are written by the
// writes that publish events (record and publish, sql/shared.ts).
import type { Param } from "../db.ts";
import { newId } from "../ids.ts";
import type { WebhookAttempt, WebhookEndpointRecord, WebhookMessage, WebhookVerbs } from "../webhooks.ts";
import { outcomeAssignments, type SentColumns } from "./outbox-rows.ts";
import { reader } from "./reader.ts";
import { filtered, flag, iso, isUuid, type Row, type Shared } from "./shared.ts";

const WEBHOOK_DELIVERED: SentColumns = { status: "delivered", atColumn: "delivered_at" };

const readEndpoint = reader<WebhookEndpointRecord>({
  eventTypes: (value) => JSON.parse(value as string) as string[],
  enabled: flag,
});
const readWebhookMessage = reader<WebhookMessage>({}, ["lease_owner", "lease_until"]);
const readWebhookAttempt = reader<WebhookAttempt>();

export function webhookVerbs({
  db,
  d,
  clock,
  now,
  webhooks,
  find,
  record,
  eventful,
  deleteSome,
}: Shared): WebhookVerbs {
  return {
    onWebhookEvents: (listener) => webhooks.onPublished(listener),
    async createWebhookEndpoint(endpoint, events = []) {
      const at = clock();
      const { url, description, eventTypes, enabled, sealedSecret } = endpoint;
      const row = await db.transaction(async (tx) => {
        const created = (await tx.one<Row>(
          `INSERT INTO webhook_endpoints (id, url, description, event_types, enabled, sealed_secret, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
          [newId(at), url, description, JSON.stringify(eventTypes), enabled, sealedSecret, iso(at)],
        )) as Row;
        await record(tx, events, null);
        return created;
      });
      webhooks.invalidate();
      return readEndpoint(row);
    },
    async listWebhookEndpoints({ limit, after }) {
      const query = filtered("SELECT * FROM webhook_endpoints", [["id >", after]], "id", limit);
      return (await db.all<Row>(...query)).map(readEndpoint);
    },
    async findWebhookEndpoint(id) {
      return isUuid(id) ? find("SELECT * FROM webhook_endpoints WHERE id = $1", [id], readEndpoint) : undefined;
    },
    async updateWebhookEndpoint(id, changes, events = []) {
      if (!isUuid(id)) return undefined;
      const params: Param[] = [now()];
      const assignments = ["updated_at = $1"];
      const values: [string, Param | undefined][] = [
        ["url", changes.url],
        ["description", changes.description],
        ["event_types", changes.eventTypes && JSON.stringify(changes.eventTypes)],
        ["enabled", changes.enabled],
        // Turning an endpoint on (again) forgets why it was turned off.
        ["disabled_reason", changes.enabled === true ? null : changes.disabledReason],
      ];
      for (const [column, value] of values) {
        if (value === undefined) continue;
        params.push(value);
        assignments.push(`${column} = $${params.length}`);
      }
      params.push(id);
      const sql = `UPDATE webhook_endpoints SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
      const row = await eventful<Row>(sql, params, events);
      webhooks.invalidate();
      return row && readEndpoint(row);
    },
    async rotateWebhookSecret(id, sealedSecret, previousUntil, events = []) {
      if (!isUuid(id)) return undefined;
      const row = await eventful<Row>(
        `UPDATE webhook_endpoints SET previous_sealed_secret = sealed_secret, previous_secret_until = $1,
           sealed_secret = $2, updated_at = $3 WHERE id = $4 RETURNING *`,
        [previousUntil, sealedSecret, now(), id],
        events,
      );
      return row && readEndpoint(row);
    },
    async removeWebhookEndpoint(id, events = []) {
      if (!isUuid(id)) return false;
      const sql = "DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id";
      const removed = (await eventful(sql, [id], events)) !== undefined;
      webhooks.invalidate();
      return removed;
    },
    async claimWebhookMessages(owner, at, leaseUntil, limit) {
      // As claimMail, and in order per user: a message waits while an earlier one of its user for its
      // endpoint is pending (due later, or leased by a sender in any instance).
      const rows = await db.claiming((tx) =>
        tx.all<Row>(
          `UPDATE webhook_messages SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
           WHERE (endpoint_id, event_id) IN (
             SELECT m.endpoint_id, m.event_id FROM webhook_messages m
             WHERE m.status = 'pending' AND m.next_attempt_at <= $3 AND (m.lease_until IS NULL OR m.lease_until <= $3)
               AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = m.endpoint_id AND e.enabled = $5)
               AND NOT EXISTS (SELECT 1 FROM webhook_messages earlier WHERE earlier.endpoint_id = m.endpoint_id
                 AND earlier.user_id = m.user_id AND earlier.status = 'pending' AND earlier.event_id < m.event_id)
             ORDER BY m.event_id LIMIT $4 ${d.skipLocked}) RETURNING *`,
          [owner, leaseUntil, at, limit, true],
        ),
      );
      return rows.map(readWebhookMessage).sort((a, b) => (a.eventId < b.eventId ? -1 : 1));
    },
    async completeWebhookMessage({ endpointId, eventId }, owner, outcome, attempt) {
      const at = clock();
      const [set, params] = outcomeAssignments(outcome, 4, WEBHOOK_DELIVERED);
      await db.transaction(async (tx) => {
        await tx.run(
          `INSERT INTO webhook_attempts (id, endpoint_id, event_id, type, attempt, status_code, duration_ms, error, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            newId(at),
            endpointId,
            eventId,
            attempt.type,
            attempt.attempt,
            attempt.statusCode,
            attempt.durationMs,
            attempt.error,
            iso(at),
          ],
        );
        await tx.run(
          `UPDATE webhook_messages SET ${set} WHERE endpoint_id = $1 AND event_id = $2 AND lease_owner = $3`,
          [endpointId, eventId, owner, ...params],
        );
      });
    },
    async listWebhookAttempts(endpointId, { limit, before }) {
      if (!isUuid(endpointId)) return [];
      const rows = await db.all<Row>(
        `SELECT * FROM webhook_attempts WHERE endpoint_id = $1 ${before ? "AND id < $3" : ""} ORDER BY id DESC LIMIT $2`,
        [endpointId, limit, ...(before ? [before] : [])],
      );
      return rows.map(readWebhookAttempt);
    },
    async redeliverWebhookEvent(endpointId, eventId, at) {
      if (!isUuid(endpointId, eventId)) return undefined;
      const row = await db.one<Row>(
        `UPDATE webhook_messages SET status = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL,
           lease_owner = NULL, lease_until = NULL WHERE endpoint_id = $2 AND event_id = $3 RETURNING *`,
        [at, endpointId, eventId],
      );
      return row && readWebhookMessage(row);
    },
    async queueWebhookTestEvent(endpointId, event, events = []) {
      if (!isUuid(endpointId)) return undefined;
      // The same outbox row as a published event (webhook-events.ts), for this endpoint alone: the
      // worker signs and delivers it like any other, and its attempts go to the delivery log.
      const row = await eventful<Row>(
        `INSERT INTO webhook_messages (endpoint_id, event_id, user_id, type, payload, next_attempt_at, created_at)
         SELECT id, $1, $2, $3, $4, $5, $5 FROM webhook_endpoints WHERE id = $6 RETURNING *`,
        [event.id, event.userId, event.type, event.payload, now(), endpointId],
        events,
        event.userId,
      );
      return row && readWebhookMessage(row);
    },
    async pruneWebhookRecords(before, limit) {
      const messages = await db.run(
        `DELETE FROM webhook_messages WHERE (endpoint_id, event_id) IN (SELECT endpoint_id, event_id
           FROM webhook_messages
           WHERE (status = 'delivered' AND delivered_at < $1) OR (status = 'failed' AND created_at < $1) LIMIT $2)`,
        [before, limit],
      );
      return messages + (await deleteSome("webhook_attempts", "id", "created_at < $1", before, limit));
    },
  };
}
