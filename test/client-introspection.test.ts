// Introspection (RFC 7662) and registered clients: a confidential client may introspect (Basic or
// the form, as it registered), a public one may not; a client's own token (client_credentials)
// introspects as active with its client_id and scope, and as inactive once it expires, is forged,
// or its client is deleted. Clients marked as resource servers see every token; what the others may
// see is test/security/token-audiences.test.ts's.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { bearer, buildTestApp, createUser, loginToken, mintToken, requestToken, TEST_ISSUER } from "./helpers.ts";

const PASSWORD = "correct horse battery";
const REFUSED = { detail: "Introspection needs a configured client's credentials or an admin token" };

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
});

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t);
  const registry = createClientRegistry(testApp.store, testApp.clock.read);
  const by = { userId: null, clientAddress: null };
  const register = async (metadata: Parameters<typeof clientMetadata>[0]) => {
    const { client, secret } = await registry.register(clientMetadata(metadata), by);
    return { id: client.id, secret: secret as string };
  };
  const api = await register({
    client_name: "Orders API",
    grant_types: ["client_credentials"],
    scope: "orders:read",
    resource_server: true,
  });
  const poster = await register({
    client_name: "Reports",
    grant_types: ["client_credentials"],
    token_endpoint_auth_method: "client_secret_post",
    resource_server: true,
  });
  const spa = await register({
    client_name: "SPA",
    token_endpoint_auth_method: "none",
    redirect_uris: ["https://spa.example/cb"],
  });
  const introspect = (fields: Record<string, string>, headers: Record<string, string> = basic(api.id, api.secret)) =>
    testApp.app.inject({
      method: "POST",
      url: "/auth/introspect",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      payload: new URLSearchParams(fields).toString(),
    });
  return { ...testApp, registry, api, poster, spa, introspect };
}

describe("introspection and registered clients", () => {
  test("a resource server's client introspects a user's token, by Basic or by the form", async (t) => {
    const { app, store, api, poster, introspect } = await setup(t);
    await createUser(store, "ada@example.com", PASSWORD);
    const token = await loginToken(app, "ada@example.com", PASSWORD);
    const byBasic = await introspect({ token });
    assert.equal(byBasic.statusCode, 200);
    assert.equal(byBasic.json().active, true);
    assert.equal(byBasic.json().username, "ada@example.com");
    const byForm = await introspect({ token, client_id: poster.id, client_secret: poster.secret }, {});
    assert.equal(byForm.statusCode, 200);
    assert.deepEqual(byForm.json(), byBasic.json());
    assert.ok(api.id !== poster.id);
  });

  test("refused: a public client, a wrong secret, the wrong method, an unknown client (401, the same words)", async (t) => {
    const { api, poster, spa, introspect } = await setup(t);
    for (const [name, fields, headers] of [
      ["public client", { client_id: spa.id }, {}],
      ["public client by Basic", {}, basic(spa.id, "")],
      ["wrong secret", {}, basic(api.id, "nope")],
      ["post client by Basic", {}, basic(poster.id, poster.secret)],
      ["Basic client by the form", { client_id: api.id, client_secret: api.secret }, {}],
      ["unknown client", {}, basic("0190a000-0000-7000-8000-000000000000", api.secret)],
      ["two methods", { client_id: api.id, client_secret: api.secret }, basic(api.id, api.secret)],
    ] as [string, Record<string, string>, Record<string, string>][]) {
      const response = await introspect({ token: "x", ...fields }, headers);
      assert.equal(response.statusCode, 401, name);
      assert.equal(response.headers["www-authenticate"], "Bearer", name);
      assert.deepEqual(response.json(), REFUSED, name);
    }
  });

  test("a client's own token: active with client_id and scope; inactive when expired, forged, or its client deleted", async (t) => {
    const { app, store, api, registry, introspect, clock } = await setup(t);
    const issued = await requestToken(app, { grant_type: "client_credentials" }, basic(api.id, api.secret));
    const token = issued.json().access_token as string;
    const response = await introspect({ token });
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.deepEqual(body, {
      active: true,
      token_type: "Bearer",
      client_id: api.id,
      scope: "orders:read",
      sub: api.id,
      iss: TEST_ISSUER,
      // A client with no registered resources gets its own id as the audience, never the service's.
      aud: api.id,
      iat: clock.seconds,
      exp: clock.seconds + 1800,
      jti: body.jti,
    });

    const forged = mintToken(
      { sub: api.id, client_id: api.id, jti: "x", iat: clock.seconds, exp: clock.seconds + 60 },
      { secret: "another-secret-of-at-least-thirty-two-bytes" },
    );
    assert.deepEqual((await introspect({ token: forged })).json(), { active: false });
    // A client token with a stamp is no client token; nor is one whose client_id is not its sub.
    for (const claims of [
      { sub: api.id, client_id: api.id, jti: "x", stamp: "s" },
      { sub: "someone-else", client_id: api.id, jti: "x" },
    ]) {
      const odd = mintToken({ ...claims, iat: clock.seconds, exp: clock.seconds + 60 });
      assert.deepEqual((await introspect({ token: odd })).json(), { active: false }, JSON.stringify(claims));
    }

    clock.advanceSeconds(1800);
    assert.deepEqual((await introspect({ token })).json(), { active: false }, "expired");

    const fresh = (await requestToken(app, { grant_type: "client_credentials" }, basic(api.id, api.secret))).json();
    assert.equal((await introspect({ token: fresh.access_token })).json().active, true);
    // Another client introspects after this one is deleted (a deleted client cannot authenticate).
    const other = await registry.register(
      clientMetadata({ client_name: "Gateway", grant_types: ["client_credentials"], resource_server: true }),
      { userId: null, clientAddress: null },
    );
    const admin = await createUser(store, "root@example.com", PASSWORD);
    await store.update(admin.id, { isAdmin: true });
    const adminToken = await loginToken(app, "root@example.com", PASSWORD);
    const deleted = await app.inject({ method: "DELETE", url: `/clients/${api.id}`, headers: bearer(adminToken) });
    assert.equal(deleted.statusCode, 204);
    const after = await introspect({ token: fresh.access_token }, basic(other.client.id, other.secret as string));
    assert.equal(after.statusCode, 200);
    assert.deepEqual(after.json(), { active: false }, "at once on the instance that deleted it");
  });
});
