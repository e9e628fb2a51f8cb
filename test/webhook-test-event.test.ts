// POST /webhooks/{id}/test (issue 35): the test event reaches a real receiver
// that verifies it with the standardwebhooks library, only the endpoint asked
// for (not another subscribed endpoint, whatever its types), with its whole
// body; it shows in the delivery log (and redelivers like any event), is
// audited with the admin as actor, and a disabled endpoint answers 409.
// SQLite by default, PostgreSQL with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { ENDPOINT_DISABLED } from "../src/webhooks/test-event.ts";
import { buildTestApp, caller, signedInUser } from "./helpers.ts";
import { WebhookReceiver } from "./webhook-receiver.ts";

const PASSWORD = "correct horse battery";

async function receiverFor(t: TestContext): Promise<WebhookReceiver> {
  const receiver = new WebhookReceiver();
  await receiver.start();
  t.after(() => receiver.stop());
  return receiver;
}

describe("a webhook test event", () => {
  test("is delivered signed to that endpoint only, logged, redeliverable and audited", async (t) => {
    const { app, store, clock } = await buildTestApp(t, {
      webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 50 },
    });
    const call = caller(app);
    const admin = await signedInUser(app, store, "admin@example.com", PASSWORD, true);
    const tested = await receiverFor(t);
    const other = await receiverFor(t);
    const create = async (receiver: WebhookReceiver) => {
      const created = await call("POST", "/webhooks", admin.token, {
        url: receiver.url,
        event_types: ["user.deleted"],
      });
      assert.equal(created.statusCode, 201, created.body);
      receiver.secrets = [created.json().secret];
      return created.json().id as string;
    };
    const id = await create(tested);
    await create(other);

    const sent = await call("POST", `/webhooks/${id}/test`, admin.token);
    assert.equal(sent.statusCode, 202, sent.body);
    assert.equal(sent.headers["cache-control"], "no-store");
    const answer = sent.json();
    assert.deepEqual(answer, {
      event_id: answer.event_id,
      type: "webhook.test",
      status: "pending",
      next_attempt_at: new Date(clock.now).toISOString(),
    });

    await tested.waitFor(() => tested.accepted.length === 1);
    const delivery = tested.accepted[0];
    assert.ok(delivery);
    assert.equal(delivery.id, answer.event_id);
    assert.deepEqual(delivery.verified, {
      type: "webhook.test",
      timestamp: new Date(clock.now).toISOString(),
      data: { user_id: admin.id, endpoint_id: id },
    });
    assert.equal(delivery.body, JSON.stringify(delivery.verified));

    // The delivery log shows it; a redelivery sends it again with the same webhook-id.
    const until = async (ready: () => Promise<boolean>) => {
      const deadline = Date.now() + 5000;
      while (!(await ready())) {
        if (Date.now() > deadline) throw new Error("timed out");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    let log: { items: { event_id: string; type: string; status_code: number }[] } = { items: [] };
    await until(async () => {
      log = (await call("GET", `/webhooks/${id}/deliveries`, admin.token)).json();
      return log.items.length === 1;
    });
    assert.deepEqual(
      log.items.map(({ event_id, type, status_code }) => ({ event_id, type, status_code })),
      [{ event_id: answer.event_id, type: "webhook.test", status_code: 204 }],
    );
    const again = await call("POST", `/webhooks/${id}/deliveries`, admin.token, { event_id: answer.event_id });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.json().type, "webhook.test");
    await tested.waitFor(() => tested.accepted.length === 2);
    assert.equal(tested.accepted[1]?.id, answer.event_id);

    // The other endpoint never hears of it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(other.deliveries.length, 0);

    // Audited about the admin who asked.
    const events = (await call("GET", `/users/${admin.id}/events`, admin.token)).json().items;
    assert.ok(
      events.some(
        (event: { type: string; outcome: string }) => event.type === "webhook" && event.outcome === "test_event_sent",
      ),
      JSON.stringify(events),
    );

    // A disabled endpoint: 409 in words, nothing queued.
    assert.equal((await call("PATCH", `/webhooks/${id}`, admin.token, { enabled: false })).statusCode, 200);
    const refused = await call("POST", `/webhooks/${id}/test`, admin.token);
    assert.equal(refused.statusCode, 409);
    assert.deepEqual(refused.json(), { detail: ENDPOINT_DISABLED });
  });
});
