// Requests that leave a row behind without a secret (issue 36): a public
// client's client_id is public, so anyone may start device authorizations
// (RFC 8628) or push authorization requests (RFC 9126) in its name. Each
// address may leave CLIENT_REQUEST_LIMIT_PER_ADDRESS of them, refused ones
// included, per window; the next is 429 temporarily_unavailable with
// Retry-After, writes nothing and is not recorded. A confidential client's
// accepted requests are not counted: its secret already stops strangers.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TOO_MANY_CLIENT_REQUESTS } from "../../src/auth/rate-limits.ts";
import { basic, form, setUpDevice, startDevice } from "../device/fixture.ts";
import { testConfig } from "../helpers.ts";
import { push, recordedEvents, requestFields } from "../oidc/par.ts";

const LIMIT = 3;
const limited = { rateLimit: { ...testConfig().rateLimit, enabled: true, clientRequestsPerAddress: LIMIT } };

function assertLimited(answer: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) {
  assert.equal(answer.statusCode, 429);
  const retryAfter = Number(answer.headers["retry-after"]);
  assert.ok(retryAfter >= 1 && retryAfter <= 900, String(answer.headers["retry-after"]));
  assert.equal(answer.headers["cache-control"], "no-store");
  assert.deepEqual(answer.json(), {
    error: "temporarily_unavailable",
    error_description: TOO_MANY_CLIENT_REQUESTS,
    detail: TOO_MANY_CLIENT_REQUESTS,
  });
}

describe("requests without a secret are limited per address", () => {
  test("pushed authorization requests: a public client's and refused ones counted, a confidential client's not", async (t) => {
    const s = await setUpDevice(t, limited);
    const events = recordedEvents(s.store);
    // A confidential client's accepted pushes: never counted.
    for (let i = 0; i < LIMIT + 2; i++)
      assert.equal((await push(s.app, s, "partner", requestFields(s, "partner").fields)).statusCode, 201);
    // A refused push (a public client that does not exist) counts.
    const unknown = await s.app.inject({
      method: "POST",
      url: "/oauth/par",
      ...form({ ...requestFields(s, "spa").fields, client_id: "no-such-client" }),
    });
    assert.equal(unknown.statusCode, 401);
    for (let i = 1; i < LIMIT; i++)
      assert.equal((await push(s.app, s, "spa", requestFields(s, "spa").fields)).statusCode, 201);
    const before = await s.store.purgePushedRequests(new Date(Date.now() + 86_400_000).toISOString(), 1000);
    assert.equal(before, LIMIT + 2 + LIMIT - 1, "every accepted push left its row");
    const recorded = events.length;
    // Over the limit: the public client, and the confidential one from the same address too.
    assertLimited(await push(s.app, s, "spa", requestFields(s, "spa").fields));
    assertLimited(await push(s.app, s, "partner", requestFields(s, "partner").fields));
    assert.equal(events.length, recorded, "a request over the limit is not recorded");
    assert.equal(await s.store.purgePushedRequests(new Date(Date.now() + 86_400_000).toISOString(), 1000), 0);
    // Another address is not affected.
    const elsewhere = await s.app.inject({
      method: "POST",
      url: "/oauth/par",
      remoteAddress: "198.51.100.7",
      ...form(requestFields(s, "spa").fields),
    });
    assert.equal(elsewhere.statusCode, 201, elsewhere.body);
  });

  test("device authorization requests: a public client's and refused ones counted, a confidential client's not", async (t) => {
    const s = await setUpDevice(t, limited);
    for (let i = 0; i < LIMIT + 2; i++) {
      const answer = await s.app.inject({
        method: "POST",
        url: "/oauth/device_authorization",
        headers: { ...basic(s.devices.cli.id, s.devices.cli.secret), ...form({}).headers },
        payload: "",
      });
      assert.equal(answer.statusCode, 200, answer.body);
    }
    assert.equal((await startDevice(s.app, "no-such-client")).statusCode, 401);
    for (let i = 1; i < LIMIT; i++) assert.equal((await startDevice(s.app, s.devices.tv.id)).statusCode, 200);
    const before = await s.store.purgeDeviceAuthorizations(new Date(Date.now() + 86_400_000).toISOString(), 1000);
    assert.equal(before, LIMIT + 2 + LIMIT - 1, "every accepted request left its row");
    assertLimited(await startDevice(s.app, s.devices.tv.id));
    assertLimited(await startDevice(s.app, "no-such-client"));
    assert.equal(await s.store.purgeDeviceAuthorizations(new Date(Date.now() + 86_400_000).toISOString(), 1000), 0);
    const elsewhere = await s.app.inject({
      method: "POST",
      url: "/oauth/device_authorization",
      remoteAddress: "198.51.100.7",
      ...form({ client_id: s.devices.tv.id }),
    });
    assert.equal(elsewhere.statusCode, 200, elsewhere.body);
  });

  test("RATE_LIMIT=off counts nothing", async (t) => {
    const s = await setUpDevice(t, { rateLimit: { ...limited.rateLimit, enabled: false } });
    for (let i = 0; i < LIMIT * 2; i++) assert.equal((await startDevice(s.app, s.devices.tv.id)).statusCode, 200);
  });
});
