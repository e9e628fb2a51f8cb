// The attacker's view of POST /webhooks/{id}/test (issue 35): no token 401
// (with WWW-Authenticate: Bearer), a non-admin 403 and nothing queued, an
// unknown id 404, a malformed id 422, a body or hostile path refused in the
// service's shape; the answer never carries the endpoint's secret.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NOT_AUTHENTICATED, NOT_ENOUGH_PRIVILEGES } from "../../src/errors.ts";
import { WEBHOOK_NOT_FOUND } from "../../src/webhooks/endpoints.ts";
import { buildTestApp, caller, signedInUser } from "../helpers.ts";

const PASSWORD = "correct horse battery";
const MISSING_ID = "01900000-0000-7000-8000-000000000000";

describe("POST /webhooks/{id}/test refuses what it must", () => {
  test("401 without a token, 403 for a non-admin (nothing queued), 404 unknown, 422 malformed", async (t) => {
    const { app, store } = await buildTestApp(t, {
      webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 60_000 },
    });
    const call = caller(app);
    const admin = await signedInUser(app, store, "admin@example.com", PASSWORD, true);
    const ada = await signedInUser(app, store, "ada@example.com", PASSWORD);
    const created = await call("POST", "/webhooks", admin.token, {
      url: "http://127.0.0.1:9/hooks",
      event_types: ["user.created"],
    });
    const { id, secret } = created.json();

    const anonymous = await call("POST", `/webhooks/${id}/test`);
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.headers["www-authenticate"], "Bearer");
    assert.deepEqual(anonymous.json(), { detail: NOT_AUTHENTICATED });

    const user = await call("POST", `/webhooks/${id}/test`, ada.token);
    assert.equal(user.statusCode, 403);
    assert.deepEqual(user.json(), { detail: NOT_ENOUGH_PRIVILEGES });
    const log = await call("GET", `/webhooks/${id}/deliveries`, admin.token);
    assert.deepEqual(log.json().items, []);
    // Nothing in the outbox for anyone to deliver (the endpoint's poll interval is a minute: nothing claimed it).
    const now = new Date();
    const lease = new Date(now.getTime() + 60_000).toISOString();
    assert.equal((await store.claimWebhookMessages("probe", now.toISOString(), lease, 10)).length, 0);

    const missing = await call("POST", `/webhooks/${MISSING_ID}/test`, admin.token);
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { detail: WEBHOOK_NOT_FOUND });

    for (const bad of ["not-a-uuid", "1", "%00", "x".repeat(90)]) {
      const malformed = await call("POST", `/webhooks/${bad}/test`, admin.token);
      assert.ok([404, 422].includes(malformed.statusCode), `${bad}: ${malformed.statusCode}`);
      assert.deepEqual(Object.keys(malformed.json()), ["detail"]);
    }
    const withBody = await call("POST", `/webhooks/${id}/test`, admin.token, { event_type: "user.deleted" });
    assert.ok(withBody.statusCode === 202 || withBody.statusCode === 422, withBody.body);

    // Bodies it does not take: refused in the service's shape, never a 500.
    for (const [type, payload] of [
      ["text/plain", "hello"],
      ["application/json", "{not json"],
      ["application/json", "x".repeat(20_000)],
    ]) {
      const odd = await app.inject({
        method: "POST",
        url: `/webhooks/${id}/test`,
        headers: { authorization: `Bearer ${admin.token}`, "content-type": type as string },
        payload: payload as string,
      });
      assert.ok(odd.statusCode >= 400 && odd.statusCode < 500, `${type}: ${odd.statusCode}`);
      assert.deepEqual(Object.keys(odd.json()), ["detail"], odd.body);
    }
    const sent = await call("POST", `/webhooks/${id}/test`, admin.token);
    assert.equal(sent.statusCode, 202, sent.body);
    assert.ok(!sent.body.includes(secret) && !sent.body.includes("whsec_"));
    assert.equal(sent.headers["cache-control"], "no-store");
  });
});
