// The webhook outbox in the store, on either backend (TEST_BACKEND): an
// event is written in the change's transaction only for enabled endpoints
// that subscribe to its type; claims are exclusive and in order per user;
// housekeeping prunes delivered events and old log entries.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { UserStore } from "../src/store/store.ts";
import { openTestStore, TestClock } from "./helpers.ts";

const LOGIN = { type: "login" as const, outcome: "success", clientAddress: "127.0.0.1" };

async function login(store: UserStore, userId: string, id: string, clock: TestClock) {
  const expiresAt = new Date(clock.now + 86_400_000).toISOString();
  await store.createSession(
    { id, userId, expiresAt, clientAddress: null, userAgent: null, tokenHash: id, tokenExpiresAt: expiresAt },
    { maxPerUser: 50, events: [LOGIN] },
  );
}

const endpoint = (eventTypes: string[], enabled = true) => ({
  url: "http://127.0.0.1:9/",
  description: null,
  eventTypes,
  enabled,
  sealedSecret: "sealed",
});

describe("the webhook outbox in the store", () => {
  test("events are written only for enabled endpoints subscribed to their type", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const user = await store.create({ email: "ada@example.com", hashedPassword: "x" });
    const now = () => new Date(clock.now).toISOString();
    const claim = () => store.claimWebhookMessages("me", now(), new Date(clock.now + 60_000).toISOString(), 10);
    const other = await store.createWebhookEndpoint(endpoint(["user.deleted"]));
    const off = await store.createWebhookEndpoint(endpoint(["session.created"], false));
    await login(store, user.id, "01900000-0000-7000-8000-000000000001", clock);
    assert.deepEqual(await claim(), []);

    const on = await store.createWebhookEndpoint(endpoint(["session.created", "user.deleted"]));
    await login(store, user.id, "01900000-0000-7000-8000-000000000002", clock);
    const claimed = await claim();
    assert.deepEqual(
      claimed.map(({ endpointId, userId, type, payload, attempts, status }) => ({
        endpointId,
        userId,
        type,
        payload: JSON.parse(payload),
        attempts,
        status,
      })),
      [
        {
          endpointId: on.id,
          userId: user.id,
          type: "session.created",
          payload: {
            type: "session.created",
            timestamp: now(),
            data: { user_id: user.id, session_id: "01900000-0000-7000-8000-000000000002" },
          },
          attempts: 1,
          status: "pending",
        },
      ],
    );
    // Leased: not claimed again, by this owner or another.
    assert.deepEqual(await store.claimWebhookMessages("other", now(), now(), 10), []);
    void other;
    void off;
  });

  test("in order per user: a later event waits while an earlier one is pending; delivered and failed ones are pruned", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const ada = await store.create({ email: "ada@example.com", hashedPassword: "x" });
    const bob = await store.create({ email: "bob@example.com", hashedPassword: "x" });
    const hook = await store.createWebhookEndpoint(endpoint(["session.created"]));
    for (const [i, user] of [ada, ada, bob].entries()) {
      await login(store, user.id, `01900000-0000-7000-8000-00000000001${i}`, clock);
    }
    const now = new Date(clock.now).toISOString();
    const lease = new Date(clock.now + 60_000).toISOString();
    const first = await store.claimWebhookMessages("me", now, lease, 10);
    // Ada's first and Bob's: Ada's second waits behind her first.
    assert.deepEqual(
      first.map((message) => message.userId),
      [ada.id, bob.id],
    );
    const attempt = { type: "session.created", attempt: 1, statusCode: 204, durationMs: 3, error: null };
    const retry = { status: "pending" as const, nextAttemptAt: now, error: "answered 500" };
    await store.completeWebhookMessage(first[0]!, "me", retry, { ...attempt, statusCode: 500, error: "answered 500" });
    // Still pending after a failure: Ada's second keeps waiting; her first comes again.
    const again = await store.claimWebhookMessages("me", now, lease, 10);
    assert.deepEqual(
      again.map((message) => [message.eventId, message.attempts]),
      [[first[0]!.eventId, 2]],
    );
    await store.completeWebhookMessage(again[0]!, "me", { status: "sent", at: now }, { ...attempt, attempt: 2 });
    const next = await store.claimWebhookMessages("me", now, lease, 10);
    assert.equal(next.length, 1);
    assert.equal(next[0]!.userId, ada.id);
    assert.notEqual(next[0]!.eventId, first[0]!.eventId);
    // A lease held by another owner: its outcome is not recorded, its attempt is logged.
    await store.completeWebhookMessage(next[0]!, "not-me", { status: "sent", at: now }, attempt);
    assert.equal((await store.listWebhookAttempts(hook.id, { limit: 10 })).length, 3);

    clock.advanceSeconds(60);
    const later = new Date(clock.now).toISOString();
    // One delivered message and the three log entries are older than the cutoff.
    assert.equal(await store.pruneWebhookRecords(later, 100), 4);
    assert.deepEqual(await store.listWebhookAttempts(hook.id, { limit: 10 }), []);
    assert.equal(await store.pruneWebhookRecords(later, 100), 0);
    // Bob's, given up on: kept while it was queued after the cutoff, pruned once before it.
    const failed = { status: "failed" as const, error: "gave up" };
    await store.completeWebhookMessage(first[1]!, "me", failed, { ...attempt, statusCode: 500, error: "gave up" });
    assert.equal(await store.pruneWebhookRecords(now, 100), 0, "queued at the cutoff: kept");
    assert.equal(await store.pruneWebhookRecords(later, 100), 1, "queued before the cutoff: pruned");
    assert.equal(await store.pruneWebhookRecords(later, 100), 0, "its attempt, logged at the cutoff, stays");
  });
});
