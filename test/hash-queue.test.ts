// A login storm meets a bounded line of Argon2id turns (issue 22): past
// PASSWORD_HASH_QUEUE_LIMIT waiting, every route that hashes or verifies a
// password answers 503 at once with Retry-After, an unknown e-mail exactly like
// a real account, while GET /me and refresh grants, which never hash, keep
// answering. The queue's depth and the refusals show in the metrics.
//
// The line is filled with the real hasher: `cores` slow hashes run and more
// than `limit` wait (Argon2id with a high time cost, about a quarter of a second
// each here; the test's own hasher has the default limit), so the app finds its
// line full for four rounds of slow hashes, longer than the requests below take
// even on PostgreSQL on a busy machine. The app's clock is a TestClock that does not move, so
// the measured time per turn is 0 and Retry-After is its floor, 1 second.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { buildApp } from "../src/app.ts";
import { createPasswordHasher, hashingLoad } from "../src/auth/passwords.ts";
import { PASSWORD_CHECKS_BUSY } from "../src/errors.ts";
import { createMetrics } from "../src/operations/metrics.ts";
import { bearer, createUser, openTestStore, requestToken, TestClock, testConfig } from "./helpers.ts";

const LIMIT = 2;
const PASSWORD = "correct horse battery";

/** Status, the headers a refusal is about, and the whole body. */
function answer(response: LightMyRequestResponse) {
  return {
    status: response.statusCode,
    retryAfter: response.headers["retry-after"],
    contentType: response.headers["content-type"],
    cacheControl: response.headers["cache-control"],
    wwwAuthenticate: response.headers["www-authenticate"],
    body: response.json(),
  };
}

const refused = (body: object) => ({
  status: 503,
  retryAfter: "1",
  contentType: "application/json; charset=utf-8",
  cacheControl: "no-store",
  wwwAuthenticate: undefined,
  body,
});
/** The service's error shape. */
const REFUSED = refused({ detail: PASSWORD_CHECKS_BUSY });

async function storm(t: TestContext) {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  const metrics = createMetrics();
  const app = await buildApp({
    config: testConfig({ passwordHashQueueLimit: LIMIT }),
    store,
    clock: clock.read,
    metrics,
  });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  await createUser(store, "ada@example.com", PASSWORD);
  const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
  assert.equal(login.statusCode, 200);
  const { access_token: access, refresh_token: refresh } = login.json() as {
    access_token: string;
    refresh_token: string;
  };
  return { app, metrics, access, refresh };
}

/** Fills the process's hash turns: every core busy with a slow hash, four rounds of them and LIMIT more waiting. */
function fillHashQueue(): Promise<string[]> {
  const slow = createPasswordHasher({ memoryKib: 19_456, timeCost: 20, parallelism: 1 });
  const cores = availableParallelism();
  const blockers = Array.from({ length: 5 * cores + LIMIT }, () => slow.hash("a password that keeps a core busy"));
  assert.deepEqual(hashingLoad(), { running: cores, waiting: 4 * cores + LIMIT, limit: cores });
  return Promise.all(blockers);
}

describe("the bounded line of password hashes", () => {
  test("a full line refuses every password check at once with 503 and Retry-After; GET /me and refresh go on", async (t) => {
    const { app, metrics, access, refresh } = await storm(t);
    const drained = fillHashQueue();

    const json = { "content-type": "application/json" };
    const [right, wrong, unknown, signUp, change, me, refreshed] = await Promise.all([
      requestToken(app, { username: "ada@example.com", password: PASSWORD }),
      requestToken(app, { username: "ada@example.com", password: "not the password" }),
      requestToken(app, { username: "nobody@example.com", password: PASSWORD }),
      app.inject({
        method: "POST",
        url: "/users",
        headers: json,
        payload: { email: "grace@example.com", password: "an entirely new passphrase" },
      }),
      app.inject({
        method: "PUT",
        url: "/me/password",
        headers: { ...json, ...bearer(access) },
        payload: { current_password: PASSWORD, new_password: "an entirely new passphrase" },
      }),
      app.inject({ method: "GET", url: "/me", headers: bearer(access) }),
      requestToken(app, { grant_type: "refresh_token", refresh_token: refresh }),
    ]);
    const waitingMeanwhile = hashingLoad().waiting;
    const scraped = await metrics.exposition();

    // The equal-cost rule: an unknown e-mail's dummy verify is refused exactly like a real account's.
    assert.deepEqual(answer(right), REFUSED);
    assert.deepEqual(answer(wrong), REFUSED);
    assert.deepEqual(answer(unknown), REFUSED);
    assert.deepEqual(answer(signUp), REFUSED);
    assert.deepEqual(answer(change), REFUSED);
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().email, "ada@example.com");
    assert.equal(refreshed.statusCode, 200);
    assert.deepEqual(Object.keys(refreshed.json()).sort(), [
      "access_token",
      "expires_in",
      "refresh_token",
      "token_type",
    ]);
    // Still full: every answer above came while the slow hashes held the cores and the line.
    assert.ok(waitingMeanwhile >= LIMIT, `the line had drained to ${waitingMeanwhile} before the answers came`);

    const depth = Number(/^password_hash_queue_depth (\d+)$/m.exec(scraped)?.[1]);
    assert.ok(depth >= LIMIT && depth <= 4 * availableParallelism() + LIMIT, `depth ${depth}`);
    assert.match(scraped, /^password_hash_queue_refusals_total\{route="\/auth\/token"\} 3$/m);
    assert.match(scraped, /^password_hash_queue_refusals_total\{route="\/users"\} 1$/m);
    assert.match(scraped, /^password_hash_queue_refusals_total\{route="\/me\/password"\} 1$/m);
    assert.doesNotMatch(scraped, /^store_unavailable_total\{/m, "a full line is not an unreachable store");

    // Nothing was counted against the account, and once the line drains the same login works.
    await drained;
    assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
    assert.equal((await requestToken(app, { username: "nobody@example.com", password: PASSWORD })).statusCode, 401);
    assert.match(await metrics.exposition(), /^password_hash_queue_depth 0$/m);
  });

  test("a storm of concurrent logins: some are refused at once, the others answered, GET /me meanwhile", async (t) => {
    const { app, access } = await storm(t);
    const attempts = 40;
    const logins = Array.from({ length: attempts }, (_, i) =>
      requestToken(app, {
        username: i % 2 === 0 ? "ada@example.com" : `nobody${i}@example.com`,
        password: PASSWORD,
      }),
    );
    const me = app.inject({ method: "GET", url: "/me", headers: bearer(access) });
    const answers = await Promise.all(logins);
    assert.equal((await me).statusCode, 200);

    const refusals = answers.filter((response) => response.statusCode === 503);
    // At most `cores` run and LIMIT wait; the requests reach the hasher well before a 20 ms hash ends,
    // so most are refused (36 of 40 on two cores; without the bound, none).
    assert.ok(refusals.length >= attempts / 2, `only ${refusals.length} refused`);
    for (const response of refusals) assert.deepEqual(answer(response), REFUSED);
    for (const [i, response] of answers.entries()) {
      if (response.statusCode !== 503) assert.equal(response.statusCode, i % 2 === 0 ? 200 : 401);
    }
  });
});
