// The webhook worker with no endpoint at all (src/webhooks/sender.ts): its
// poll asks the store nothing but, every ENDPOINT_RECHECK_MS, whether an
// endpoint exists; an endpoint created behind its back (another instance,
// the CLI) is polled for within that bound, and a wake (events published
// here, a redelivery) makes it look at once. SQLite by default, PostgreSQL
// with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyBaseLogger } from "fastify";
import type { UserStore } from "../src/store/store.ts";
import { createWebhookSender, ENDPOINT_RECHECK_MS } from "../src/webhooks/sender.ts";
import { openTestStore, TestClock } from "./helpers.ts";

const POLL_MS = 10;
const silent = { warn() {}, error() {}, info() {}, debug() {} } as unknown as FastifyBaseLogger;
const endpoint = {
  url: "http://127.0.0.1:9/",
  description: null,
  eventTypes: ["user.deleted"],
  enabled: true,
  sealedSecret: "sealed",
};

/** The store, counting what the worker asks of it. */
function counted(store: UserStore) {
  const asked = { listWebhookEndpoints: 0, claimWebhookMessages: 0 };
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name === "listWebhookEndpoints" || name === "claimWebhookMessages") {
        return (...args: unknown[]) => {
          asked[name] += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: proxy, asked };
}

/** Several poll intervals of real time (the worker's timers are real; its belief follows the test clock). */
const polls = (count: number) => new Promise((resolve) => setTimeout(resolve, POLL_MS * count));

async function worker(t: TestContext) {
  const clock = new TestClock();
  const opened = await openTestStore(t, clock.read);
  const { store, asked } = counted(opened);
  const sender = createWebhookSender({
    store,
    sealer: { seal: (text: string) => text, open: (text: string) => text } as never,
    settings: { refusePrivateAddresses: false, timeoutMs: 1000, secretGraceSeconds: 0, pollIntervalMs: POLL_MS },
    clock: clock.read,
    log: silent,
  });
  t.after(() => sender.stop());
  return { clock, store: opened, asked, sender };
}

describe("the webhook worker without endpoints", () => {
  test("polls claim nothing; whether an endpoint exists is asked once per ENDPOINT_RECHECK_MS", async (t) => {
    const { clock, asked } = await worker(t);
    await polls(15);
    assert.deepEqual(asked, { listWebhookEndpoints: 1, claimWebhookMessages: 0 });
    clock.now += ENDPOINT_RECHECK_MS;
    await polls(15);
    assert.deepEqual(asked, { listWebhookEndpoints: 2, claimWebhookMessages: 0 });
  });

  test("an endpoint created behind its back is polled for within ENDPOINT_RECHECK_MS", async (t) => {
    const { clock, store, asked } = await worker(t);
    await polls(10);
    await store.createWebhookEndpoint(endpoint);
    clock.now += ENDPOINT_RECHECK_MS - 1;
    await polls(10);
    assert.deepEqual(asked, { listWebhookEndpoints: 1, claimWebhookMessages: 0 });
    clock.now += 1;
    await polls(15);
    assert.equal(asked.listWebhookEndpoints, 2);
    // From then on it polls as it always did (several claims, no more questions until the next recheck).
    assert.ok(asked.claimWebhookMessages >= 2, `claims: ${asked.claimWebhookMessages}`);
  });

  test("a wake looks at once, whatever it last saw", async (t) => {
    const { store, asked, sender } = await worker(t);
    await polls(10);
    await store.createWebhookEndpoint(endpoint);
    sender.wake();
    await polls(15);
    assert.equal(asked.listWebhookEndpoints, 2);
    assert.ok(asked.claimWebhookMessages >= 2, `claims: ${asked.claimWebhookMessages}`);
  });
});
