// Probes: /healthz while the process lives, /readyz only while the stores answer.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { MemoryCounterStore } from "../src/auth/rate-limits.ts";
import { SERVICE_UNAVAILABLE, SHUTTING_DOWN, StoreUnavailable } from "../src/errors.ts";
import { buildTestApp, openTestStore, testConfig } from "./helpers.ts";

describe("health probes", () => {
  test("GET /healthz answers 200 {status: ok}", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({ method: "GET", url: "/healthz" });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: "ok" });
  });

  test("GET /readyz answers 200 {status: ready} when the stores answer", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: "ready" });
  });

  test("GET /readyz answers 503 {detail} with Retry-After when the counters cannot be reached, /healthz stays 200", async (t) => {
    const store = await openTestStore(t);
    const counters = new MemoryCounterStore();
    counters.ping = async () => {
      throw new StoreUnavailable(new Error("connection refused"));
    };
    const app = await buildApp({ config: testConfig(), store, counters });
    t.after(() => app.close());
    const response = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(response.statusCode, 503);
    assert.deepEqual(response.json(), { detail: SERVICE_UNAVAILABLE });
    assert.equal(response.headers["retry-after"], "1");
    assert.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
  });

  test("while draining, /readyz answers 503 {detail} and every answer carries Connection: close; /healthz stays 200", async (t) => {
    const store = await openTestStore(t);
    const draining = new AbortController();
    const app = await buildApp({ config: testConfig(), store, draining: draining.signal });
    t.after(() => app.close());
    const before = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(before.statusCode, 200);
    assert.notEqual(before.headers.connection, "close");

    draining.abort();
    const readyz = await app.inject({ method: "GET", url: "/readyz" });
    assert.equal(readyz.statusCode, 503);
    assert.deepEqual(readyz.json(), { detail: SHUTTING_DOWN });
    assert.equal(readyz.headers["retry-after"], undefined, "not coming back: no Retry-After");
    assert.equal(readyz.headers.connection, "close");
    const healthz = await app.inject({ method: "GET", url: "/healthz" });
    assert.equal(healthz.statusCode, 200);
    assert.equal(healthz.headers.connection, "close");
  });
});
