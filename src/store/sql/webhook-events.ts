// Publishing webhook events inside a write's transaction (the outbox): one
// row per event and subscribed, enabled endpoint, in one INSERT ... SELECT.
// When no enabled endpoint subscribes to a type, nothing is written and no
// statement runs: the store keeps the set of subscribed types in memory,
// read again at most every SUBSCRIPTIONS_TTL_MS (inside a transaction, so a
// login pays one small SELECT per five seconds at most) and at once after
// this process changed an endpoint. An endpoint created through another
// instance therefore receives events from at most five seconds later.
import type { Queryable } from "../db.ts";
import type { WebhookEvent } from "../webhooks.ts";

export const SUBSCRIPTIONS_TTL_MS = 5000;

// event_types is a JSON array: a quoted name matches only that name ("_" in a name is LIKE's any
// character, which no other name in the fixed vocabulary can fill).
const PUBLISH = `INSERT INTO webhook_messages (endpoint_id, event_id, user_id, type, payload, next_attempt_at, created_at)
  SELECT id, $1, $2, $3, $4, $5, $5 FROM webhook_endpoints WHERE enabled = $6 AND event_types LIKE $7`;

export interface WebhookPublisher {
  /** Writes the events for their subscribers through `q` (the write's transaction); a no-op when none subscribe. */
  publish(q: Queryable, events: readonly WebhookEvent[]): Promise<void>;
  /** Whether any enabled endpoint may subscribe to `type` (as last read); for work only such events need. */
  wanted(q: Queryable, type: string): Promise<boolean>;
  /** Forgets the subscriptions after this process changed an endpoint. */
  invalidate(): void;
  /** Calls `listener` shortly after events were published here (to wake the worker). */
  onPublished(listener: () => void): void;
}

/**
 * The wake-up waits this long: it is sent from inside the transaction, which commits a moment later; a
 * worker that looks too early finds the events at its next poll.
 */
const WAKE_DELAY_MS = 20;

export function createWebhookPublisher(clock: () => number): WebhookPublisher {
  let types: Set<string> | undefined;
  let readAt = 0;
  const listeners: (() => void)[] = [];

  async function subscribed(q: Queryable): Promise<Set<string>> {
    const now = clock();
    if (types === undefined || now - readAt >= SUBSCRIPTIONS_TTL_MS || now < readAt) {
      const rows = await q.all<{ event_types: string }>(
        "SELECT event_types FROM webhook_endpoints WHERE enabled = $1",
        [true],
      );
      types = new Set(rows.flatMap((row) => JSON.parse(row.event_types) as string[]));
      readAt = now;
    }
    return types;
  }

  return {
    async publish(q, events) {
      if (events.length === 0) return;
      const wanted = await subscribed(q);
      const at = new Date(clock()).toISOString();
      let written = 0;
      for (const event of events) {
        if (!wanted.has(event.type)) continue;
        written += await q.run(PUBLISH, [
          event.id,
          event.userId,
          event.type,
          event.payload,
          at,
          true,
          `%"${event.type}"%`,
        ]);
      }
      if (written > 0) for (const listener of listeners) setTimeout(listener, WAKE_DELAY_MS).unref();
    },
    wanted: async (q, type) => (await subscribed(q)).has(type),
    invalidate() {
      types = undefined;
    },
    onPublished(listener) {
      listeners.push(listener);
    },
  };
}
