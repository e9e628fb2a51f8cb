// The store's verbs of pushed authorization requests (issue 36), on SQLite and
// (TEST_BACKEND=postgres) PostgreSQL: saved under the reference's hash,
// spent once by one conditional UPDATE (of many uses at once exactly one
// wins), not spent by another client's attempt, refused once expired, and
// purged after.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { hashReference } from "../src/oidc/pushed-requests.ts";
import { openTestStore, TestClock } from "./helpers.ts";

const at = (ms: number) => new Date(ms).toISOString();

describe("pushed authorization requests in the store", () => {
  test("used once, by its client only, until it expires; purged after", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const now = clock.now;
    const parameters = { client_id: "client-a", scope: "openid", state: "s&=%" };
    const save = (reference: string, clientId = "client-a") =>
      store.savePushedRequest({
        referenceHash: hashReference(reference),
        clientId,
        parameters: { ...parameters, client_id: clientId },
        createdAt: at(now),
        expiresAt: at(now + 60_000),
      });
    await save("one");
    assert.deepEqual(await store.usePushedRequest(hashReference("one"), "client-b", at(now + 1000)), {
      outcome: "other_client",
    });
    assert.deepEqual(await store.usePushedRequest(hashReference("one"), "client-a", at(now + 1000)), {
      outcome: "used",
      request: {
        referenceHash: hashReference("one"),
        clientId: "client-a",
        parameters,
        createdAt: at(now),
        expiresAt: at(now + 60_000),
        usedAt: at(now + 1000),
      },
    });
    assert.deepEqual(await store.usePushedRequest(hashReference("one"), "client-a", at(now + 2000)), {
      outcome: "reused",
    });
    assert.deepEqual(await store.usePushedRequest(hashReference("none"), "client-a", at(now)), { outcome: "unknown" });
    await save("late");
    assert.deepEqual(await store.usePushedRequest(hashReference("late"), "client-a", at(now + 60_000)), {
      outcome: "expired",
    });
    await save("race");
    const uses = await Promise.all(
      Array.from({ length: 10 }, () => store.usePushedRequest(hashReference("race"), "client-a", at(now + 5000))),
    );
    assert.deepEqual(uses.map((use) => use.outcome).sort(), [...Array(9).fill("reused"), "used"]);
    assert.equal(uses.filter((use) => use.outcome === "used").length, 1);
    assert.equal(await store.purgePushedRequests(at(now + 59_000), 1000), 0, "none expired before then");
    assert.equal(await store.purgePushedRequests(at(now + 61_000), 2), 2, "a batch at a time");
    assert.equal(await store.purgePushedRequests(at(now + 61_000), 1000), 1);
    assert.deepEqual(await store.usePushedRequest(hashReference("race"), "client-a", at(now)), { outcome: "unknown" });
  });
});
