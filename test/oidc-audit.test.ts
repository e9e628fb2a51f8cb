// Audit events of a replayed authorization code: recorded once whenever a
// code comes back, also when its first redemption failed or what it issued
// has already ended (nothing left to revoke), not only when a session ends.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { authorizeCode, credentials, redeemCode, type Setup, setUp } from "./oidc/client-flow.ts";
import { pkcePair } from "./oidc/fixture.ts";

async function oidcOutcomes(setup: Setup): Promise<string[]> {
  const events = await setup.store.listEvents({ userId: setup.user.id, limit: 100, type: "oidc" });
  return events.map((event) => event.outcome);
}

describe("the audit trail of a replayed code", () => {
  test("a replay revokes what the code issued, recorded once with that revocation", async (t) => {
    const setup = await setUp(t);
    const { code, verifier } = await authorizeCode(setup, "partner");
    assert.equal((await redeemCode(setup, "partner", code, verifier)).statusCode, 200);
    assert.equal((await redeemCode(setup, "partner", code, verifier)).statusCode, 400);
    assert.deepEqual((await oidcOutcomes(setup)).sort(), ["code_issued", "code_redeemed", "code_replayed"]);
  });

  test("a replay of a code whose first redemption failed is recorded", async (t) => {
    const setup = await setUp(t);
    const { code, verifier } = await authorizeCode(setup, "partner");
    assert.equal((await redeemCode(setup, "partner", code, pkcePair().verifier)).statusCode, 400);
    assert.equal((await redeemCode(setup, "partner", code, verifier)).statusCode, 400);
    assert.deepEqual((await oidcOutcomes(setup)).sort(), ["code_issued", "code_refused", "code_replayed"]);
  });

  test("a replay after what the code issued was revoked is recorded", async (t) => {
    const setup = await setUp(t);
    const { code, verifier } = await authorizeCode(setup, "partner");
    const tokens = (await redeemCode(setup, "partner", code, verifier)).json();
    const revoked = await setup.app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { "content-type": "application/x-www-form-urlencoded", ...credentials(setup, "partner").headers },
      payload: new URLSearchParams({ token: tokens.refresh_token }).toString(),
    });
    assert.equal(revoked.statusCode, 200);
    assert.equal((await redeemCode(setup, "partner", code, verifier)).statusCode, 400);
    assert.deepEqual((await oidcOutcomes(setup)).sort(), ["code_issued", "code_redeemed", "code_replayed"]);
  });
});
