// Webhooks (store.ts, issue 26): endpoints, the webhook outbox (one row per
// event and subscribed endpoint, written in the transaction of the change that
// published it: audit.ts) and the log of delivery attempts. One transaction
// each: createWebhookEndpoint, updateWebhookEndpoint, rotateWebhookSecret,
// removeWebhookEndpoint, the change and its audit events;
// completeWebhookMessage, the attempt's log entry and its outcome.
import type { AuditEntry } from "./audit.ts";
import type { DeliveryOutcome } from "./mail.ts";

/** A webhook endpoint (issue 26). Its secrets are sealed (webhooks/secrets.ts), never stored in clear. */
export interface WebhookEndpointRecord {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  enabled: boolean;
  /** Why the service turned it off (deliveries kept failing); null when enabled or turned off by an admin. */
  disabledReason: string | null;
  sealedSecret: string;
  /** The secret before the last rotation, which still signs until previousSecretUntil. */
  previousSealedSecret: string | null;
  previousSecretUntil: string | null;
  createdAt: string;
  updatedAt: string;
}

export type NewWebhookEndpoint = Pick<
  WebhookEndpointRecord,
  "url" | "description" | "eventTypes" | "enabled" | "sealedSecret"
>;

/** Only the fields present change; enabling clears disabledReason. */
export type WebhookEndpointChanges = Partial<
  Pick<WebhookEndpointRecord, "url" | "description" | "eventTypes" | "enabled" | "disabledReason">
>;

/** An event that a write publishes: written in the write's transaction, for each subscribed endpoint. */
export interface WebhookEvent {
  id: string;
  type: string;
  userId: string;
  /** The exact body every delivery of it sends. */
  payload: string;
}

export type WebhookMessageStatus = "pending" | "delivered" | "failed";

/** One event on its way to one endpoint (the webhook outbox). */
export interface WebhookMessage {
  endpointId: string;
  eventId: string;
  userId: string;
  type: string;
  payload: string;
  status: WebhookMessageStatus;
  /** Attempts so far, this claim included. */
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** One delivery attempt, as the delivery log shows it. Never the secret or the signature. */
export interface WebhookAttempt {
  id: string;
  endpointId: string;
  eventId: string;
  type: string;
  attempt: number;
  /** The receiver's status code; null when no answer came (refused address, timeout, connection error). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  createdAt: string;
}

/** The endpoints, the events on their way to them (the webhook outbox) and the delivery log. */
export interface WebhookVerbs {
  /** Calls `listener` shortly after this store published webhook events (to wake the delivery worker). */
  onWebhookEvents(listener: () => void): void;
  createWebhookEndpoint(endpoint: NewWebhookEndpoint, events?: readonly AuditEntry[]): Promise<WebhookEndpointRecord>;
  /** In id (creation) order, keyset pagination after `after`. */
  listWebhookEndpoints(page: { limit: number; after?: string }): Promise<WebhookEndpointRecord[]>;
  findWebhookEndpoint(id: string): Promise<WebhookEndpointRecord | undefined>;
  /** Applies the changes with their events; undefined when no such endpoint. */
  updateWebhookEndpoint(
    id: string,
    changes: WebhookEndpointChanges,
    events?: readonly AuditEntry[],
  ): Promise<WebhookEndpointRecord | undefined>;
  /** The new sealed secret signs; the current one keeps signing until `previousUntil`. */
  rotateWebhookSecret(
    id: string,
    sealedSecret: string,
    previousUntil: string,
    events?: readonly AuditEntry[],
  ): Promise<WebhookEndpointRecord | undefined>;
  /** Deletes the endpoint, its queued events and its log (with the events); false when no such endpoint. */
  removeWebhookEndpoint(id: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /**
   * Claims up to `limit` due messages of enabled endpoints for `owner` until `leaseUntil`, counting an
   * attempt on each; never a message while an earlier one of the same user for the same endpoint is
   * still pending (delivery in order per user). Exclusive across instances, like claimMail.
   */
  claimWebhookMessages(owner: string, now: string, leaseUntil: string, limit: number): Promise<WebhookMessage[]>;
  /** Records an attempt in the log and, if `owner` still holds the lease, its outcome. One transaction. */
  completeWebhookMessage(
    message: Pick<WebhookMessage, "endpointId" | "eventId">,
    owner: string,
    outcome: DeliveryOutcome,
    attempt: Omit<WebhookAttempt, "id" | "createdAt" | "endpointId" | "eventId">,
  ): Promise<void>;
  /** The attempts of one endpoint, newest first; keyset pagination before `before`. */
  listWebhookAttempts(endpointId: string, page: { limit: number; before?: string }): Promise<WebhookAttempt[]>;
  /** Puts one event back in the endpoint's queue, due now, with its attempts reset; undefined when unknown. */
  redeliverWebhookEvent(endpointId: string, eventId: string, now: string): Promise<WebhookMessage | undefined>;
  /**
   * Issue 35: queues `event` for this one endpoint only (whatever its types), due now, with `events` (the
   * admin's audit entry) in the same transaction; undefined when no such endpoint.
   */
  queueWebhookTestEvent(
    endpointId: string,
    event: WebhookEvent,
    events?: readonly AuditEntry[],
  ): Promise<WebhookMessage | undefined>;
  /** Deletes up to `limit` delivered messages and attempts older than `before`; answers how many. */
  pruneWebhookRecords(before: string, limit: number): Promise<number>;
}
