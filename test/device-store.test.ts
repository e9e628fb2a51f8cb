// The device authorization aggregate's verbs (src/store/device.ts), on the
// backend under test (SQLite by default; TEST_BACKEND=postgres for
// PostgreSQL): a user code already taken is refused, not thrown; a decision
// and a redemption each happen once (conditional UPDATEs); the pending
// lookup ignores decided and expired requests; a poll raises the interval;
// housekeeping deletes expired requests. Plus what the grant records: its
// audit events and metrics by outcome, and the registration policy.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createMetrics } from "../src/operations/metrics.ts";
import { authorizeDevice, decide, poll, setUpDevice } from "./device/fixture.ts";
import { buildTestApp, createUser, openTestStore, TestClock } from "./helpers.ts";

describe("device authorization store verbs", () => {
  test("create, find, decide once, poll, redeem once, purge", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const user = await createUser(store, "ada@example.com", "correct horse battery");
    const at = (seconds = 0) => new Date(clock.now + seconds * 1000).toISOString();
    const request = {
      deviceCodeHash: "device-hash",
      userCodeHash: "user-hash",
      clientId: "client-1",
      scope: "openid",
      intervalSeconds: 5,
      createdAt: at(),
      expiresAt: at(600),
    };
    assert.equal(await store.createDeviceAuthorization(request), true);
    // The same user code again: refused (the caller draws another), nothing thrown.
    assert.equal(await store.createDeviceAuthorization({ ...request, deviceCodeHash: "other" }), false);
    const found = await store.findDeviceAuthorization("device-hash");
    assert.deepEqual(found, {
      ...request,
      status: "pending",
      userId: null,
      browserSessionId: null,
      lastPolledAt: null,
      decidedAt: null,
      redeemedAt: null,
    });
    assert.equal((await store.findPendingDeviceAuthorization("user-hash", at()))?.deviceCodeHash, "device-hash");
    assert.equal(await store.findPendingDeviceAuthorization("user-hash", at(601)), undefined);
    await store.recordDevicePoll("device-hash", at(1), 0);
    await store.recordDevicePoll("device-hash", at(2), 5);
    const polled = await store.findDeviceAuthorization("device-hash");
    assert.equal(polled?.intervalSeconds, 10);
    assert.equal(polled?.lastPolledAt, at(2));
    const sessionId = "00000000-0000-4000-8000-000000000001";
    const decision = { status: "approved" as const, userId: user.id, browserSessionId: sessionId, at: at(3) };
    // Not while it is pending: a redemption finds nothing to spend.
    assert.equal(await store.redeemDeviceAuthorization("device-hash", at(3)), undefined);
    const [first, second] = await Promise.all([
      store.decideDeviceAuthorization("user-hash", decision, at(3)),
      store.decideDeviceAuthorization("user-hash", { ...decision, status: "denied" }, at(3)),
    ]);
    assert.equal([first, second].filter((row) => row !== undefined).length, 1);
    const decided = first ?? second;
    assert.equal(decided?.userId, user.id);
    assert.equal(await store.findPendingDeviceAuthorization("user-hash", at(3)), undefined);
    if (decided?.status === "approved") {
      const redemptions = await Promise.all([
        store.redeemDeviceAuthorization("device-hash", at(4)),
        store.redeemDeviceAuthorization("device-hash", at(4)),
      ]);
      assert.equal(redemptions.filter((row) => row !== undefined).length, 1);
      assert.equal((await store.findDeviceAuthorization("device-hash"))?.status, "redeemed");
    } else {
      assert.equal(await store.redeemDeviceAuthorization("device-hash", at(4)), undefined);
    }
    // Expired too late to matter to anyone: deleted.
    assert.equal(await store.purgeDeviceAuthorizations(at(599), 100), 0);
    assert.equal(await store.purgeDeviceAuthorizations(at(601), 100), 1);
    assert.equal(await store.findDeviceAuthorization("device-hash"), undefined);
  });
});

describe("device grant: audit events, metrics, registration policy", () => {
  test("requested, refused, approved, redeemed recorded; counters by outcome", async (t) => {
    const metrics = createMetrics();
    const s = await setUpDevice(t, {}, { metrics });
    const started = await authorizeDevice(s.app, s.devices.tv.id);
    await poll(s.app, started.device_code, s.devices.tv);
    await poll(s.app, started.device_code, s.devices.tv);
    assert.equal((await decide(s.app, s.cookie, started.user_code, "approve")).statusCode, 200);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).statusCode, 200);
    assert.equal((await poll(s.app, started.device_code, s.devices.tv)).statusCode, 400);
    const events = await s.store.listEvents({ userId: s.user.id, limit: 50, type: "device_authorization" });
    assert.deepEqual(events.map((event) => event.outcome).sort(), ["approved", "redeemed", "refused:invalid_grant"]);
    const counted = async (name: string) => {
      const found: Record<string, number> = {};
      for (const line of (await metrics.registry.getSingleMetricAsString(name)).split("\n")) {
        const match = /^\w+\{outcome="(\w+)"\} (\d+)$/.exec(line);
        if (match) found[match[1] as string] = Number(match[2]);
      }
      return found;
    };
    assert.deepEqual(await counted("oauth_device_authorizations_total"), { success: 1 });
    assert.deepEqual(await counted("oauth_device_code_grants_total"), {
      authorization_pending: 1,
      slow_down: 1,
      success: 1,
      invalid_grant: 1,
    });
    assert.deepEqual(await counted("oauth_device_verifications_total"), {
      entry_page: 1,
      confirm_page: 1,
      approved: 1,
    });
  });

  test("dynamic registration: the device grant only when DYNAMIC_CLIENT_GRANT_TYPES allows it", async (t) => {
    const token = "an-initial-access-token-of-32-bytes-or-more";
    const register = async (grantTypes: readonly string[]) => {
      const { app } = await buildTestApp(t, {
        dynamicRegistration: {
          initialAccessToken: token,
          grantTypes: grantTypes as never,
          scopes: ["openid", "email"],
        },
      });
      return app.inject({
        method: "POST",
        url: "/auth/register",
        headers: { authorization: `Bearer ${token}` },
        payload: {
          client_name: "A TV",
          grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
          token_endpoint_auth_method: "none",
        },
      });
    };
    const refused = await register(["authorization_code", "refresh_token"]);
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().error, "invalid_client_metadata");
    const allowed = await register([
      "authorization_code",
      "refresh_token",
      "urn:ietf:params:oauth:grant-type:device_code",
    ]);
    assert.equal(allowed.statusCode, 201, allowed.body);
    assert.deepEqual(allowed.json().grant_types, ["urn:ietf:params:oauth:grant-type:device_code"]);
    assert.equal(allowed.json().scope, "openid email");
  });
});
