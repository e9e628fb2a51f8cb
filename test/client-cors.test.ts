// CORS for browser apps of registered public clients: the token and revocation endpoints answer the
// origins of public clients' redirect URIs (and CORS_ORIGINS), preflights included, naming that one
// origin and never allowing credentials; any other origin, a confidential client's, and the rest of
// the API (unless CORS_ORIGINS says so) get no CORS headers. A deleted client's origin is gone at once.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { bearer, buildTestApp, createUser, loginToken } from "./helpers.ts";

const SPA = "https://spa.example";
const WEB = "https://web.example";

async function setup(t: import("node:test").TestContext, corsOrigins: string[] = []) {
  const testApp = await buildTestApp(t, { corsOrigins });
  const registry = createClientRegistry(testApp.store, testApp.clock.read);
  const by = { userId: null, clientAddress: null };
  const spa = await registry.register(
    clientMetadata({
      client_name: "SPA",
      token_endpoint_auth_method: "none",
      redirect_uris: [`${SPA}/callback`, "http://localhost:5173/callback"],
    }),
    by,
  );
  await registry.register(clientMetadata({ client_name: "Web", redirect_uris: [`${WEB}/callback`] }), by);
  const preflight = (url: string, origin: string, method = "POST") =>
    testApp.app.inject({
      method: "OPTIONS",
      url,
      headers: { origin, "access-control-request-method": method, "access-control-request-headers": "content-type" },
    });
  const post = (url: string, origin: string) =>
    testApp.app.inject({
      method: "POST",
      url,
      headers: { origin, "content-type": "application/x-www-form-urlencoded" },
      payload: url === "/auth/revoke" ? "token=x" : "grant_type=refresh_token&refresh_token=x",
    });
  return { ...testApp, registry, spa, preflight, post };
}

describe("CORS for public clients", () => {
  test("the token and revocation endpoints answer a public client's origin, preflight and request", async (t) => {
    const { preflight, post } = await setup(t);
    for (const url of ["/auth/token", "/auth/revoke"]) {
      for (const origin of [SPA, "http://localhost:5173"]) {
        const before = await preflight(url, origin);
        assert.equal(before.statusCode, 204, `${url} ${origin}`);
        assert.equal(before.body, "");
        assert.deepEqual(
          [
            before.headers["access-control-allow-origin"],
            before.headers["access-control-allow-methods"],
            before.headers["access-control-allow-headers"],
            before.headers["access-control-max-age"],
            before.headers["access-control-allow-credentials"],
            before.headers.vary,
          ],
          [origin, "POST", "Authorization, Content-Type, X-Request-Id, DPoP", "600", undefined, "Origin"],
        );
        const actual = await post(url, origin);
        assert.equal(actual.headers["access-control-allow-origin"], origin);
        assert.equal(
          actual.headers["access-control-expose-headers"],
          "X-Request-Id, WWW-Authenticate, Retry-After, DPoP-Nonce",
        );
        assert.equal(actual.headers["access-control-allow-credentials"], undefined);
        assert.equal(actual.headers.vary, "Origin");
      }
    }
    const revoked = await post("/auth/revoke", SPA);
    assert.equal(revoked.statusCode, 200);
    assert.deepEqual(revoked.json(), {});
  });

  test("no CORS for other origins, a confidential client's origin, other methods, or the rest of the API", async (t) => {
    const { preflight, post } = await setup(t);
    for (const origin of ["https://evil.example", WEB, `${SPA}:8443`, "null"]) {
      const before = await preflight("/auth/token", origin);
      assert.equal(before.statusCode, 404, origin);
      assert.deepEqual(before.json(), { detail: "Not Found" });
      assert.equal(before.headers["access-control-allow-origin"], undefined);
      const actual = await post("/auth/token", origin);
      assert.equal(actual.headers["access-control-allow-origin"], undefined, origin);
      assert.equal(actual.headers.vary, "Origin");
    }
    assert.equal((await preflight("/auth/token", SPA, "DELETE")).statusCode, 404);
    const me = await preflight("/me", SPA, "GET");
    assert.equal(me.headers["access-control-allow-origin"], undefined, "only the endpoints public clients call");
  });

  test("CORS_ORIGINS is honoured there too, and a deleted client's origin is gone at once", async (t) => {
    const { app, preflight, post, spa, store } = await setup(t, ["https://admin.example"]);
    const configured = await preflight("/auth/token", "https://admin.example");
    assert.equal(configured.statusCode, 204);
    assert.equal(configured.headers["access-control-allow-origin"], "https://admin.example");
    const me = await app.inject({
      method: "OPTIONS",
      url: "/me",
      headers: { origin: "https://admin.example", "access-control-request-method": "GET" },
    });
    assert.equal(me.headers["access-control-allow-origin"], "https://admin.example", "the operator's list, all routes");
    assert.equal((await post("/auth/token", SPA)).headers["access-control-allow-origin"], SPA);

    // Deleted through the app (DELETE /clients): the origin is gone at once.
    const admin = await createUser(store, "root@example.com", "correct horse battery");
    await store.update(admin.id, { isAdmin: true });
    const token = await loginToken(app, "root@example.com", "correct horse battery");
    const deleted = await app.inject({ method: "DELETE", url: `/clients/${spa.client.id}`, headers: bearer(token) });
    assert.equal(deleted.statusCode, 204);
    assert.equal((await post("/auth/token", SPA)).headers["access-control-allow-origin"], undefined);
    assert.equal((await preflight("/auth/token", SPA)).statusCode, 404);
  });

  test("a client registered or deleted by another instance is seen within the registry's cache time", async (t) => {
    const { post, registry, clock } = await setup(t);
    // `registry` here is another instance's: the app has its own, which caches for two seconds.
    assert.equal((await post("/auth/token", SPA)).headers["access-control-allow-origin"], SPA);
    const other = await registry.register(
      clientMetadata({
        client_name: "New SPA",
        token_endpoint_auth_method: "none",
        redirect_uris: ["https://new.example/cb"],
      }),
      { userId: null, clientAddress: null },
    );
    assert.equal((await post("/auth/token", "https://new.example")).headers["access-control-allow-origin"], undefined);
    clock.advanceSeconds(2);
    assert.equal(
      (await post("/auth/token", "https://new.example")).headers["access-control-allow-origin"],
      "https://new.example",
    );
    await registry.remove(other.client.id, { userId: null, clientAddress: null });
    clock.advanceSeconds(2);
    assert.equal((await post("/auth/token", "https://new.example")).headers["access-control-allow-origin"], undefined);
  });
});
