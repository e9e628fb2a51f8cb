// A request without Content-Length or Transfer-Encoding has no body (RFC 9112
// section 6.3), whatever Content-Type it names: many apps send
// `content-type: application/json` on every call, DELETE and OPTIONS
// included. Over a real socket, because the hang it guards against lived in
// the HTTP server (Node's optimizeEmptyRequests) and inject() never met it.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { buildTestApp, createUser, loginToken } from "./helpers.ts";
import { KeepAliveConnection, type RawResponse } from "./raw-http.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

/**
 * Bounds a request, so that an answer that never comes fails the test instead of hanging it: the
 * connection is cut, or the app's close would wait for that request for ever.
 */
function within(connection: KeepAliveConnection, promise: Promise<RawResponse>, what: string): Promise<RawResponse> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        connection.socket.destroy();
        reject(new Error(`${what}: no answer within 2 s`));
      }, 2000);
    }),
  ]).finally(() => clearTimeout(timer));
}

describe("a request with a Content-Type and no body", () => {
  test("is answered at once, as the route answers a request without a body, on a kept-alive connection", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const token = await loginToken(app, EMAIL, PASSWORD);
    await app.listen({ host: "127.0.0.1", port: 0 });
    const connection = await KeepAliveConnection.open((app.server.address() as AddressInfo).port);
    t.after(() => connection.socket.destroy());
    const json = { "content-type": "application/json", authorization: `Bearer ${token}` };

    const patched = await within(connection, connection.send("PATCH", "/me", json), "PATCH /me");
    assert.equal(patched.status, 422);
    assert.deepEqual(JSON.parse(patched.body), { detail: "body: must be object" });

    const options = await within(connection, connection.send("OPTIONS", "/me", json), "OPTIONS /me");
    assert.equal(options.status, 404);
    assert.deepEqual(JSON.parse(options.body), { detail: "Not Found" });

    const signUp = await within(
      connection,
      connection.send("POST", "/users", { "content-type": "application/json" }),
      "POST /users",
    );
    assert.equal(signUp.status, 422);
    assert.deepEqual(JSON.parse(signUp.body), { detail: "body: must be object" });

    const form = await within(
      connection,
      connection.send("POST", "/auth/token", { "content-type": "application/x-www-form-urlencoded" }),
      "POST /auth/token",
    );
    assert.equal(form.status, 422);
    assert.deepEqual(JSON.parse(form.body), { detail: "body.username: field required" }, "as an empty form");

    // An empty body (Content-Length: 0) is answered exactly as no body.
    const empty = { ...json, "content-length": "0" };
    const emptyPatch = await within(connection, connection.send("PATCH", "/me", empty), "PATCH /me, empty body");
    assert.equal(emptyPatch.status, 422);
    assert.deepEqual(JSON.parse(emptyPatch.body), { detail: "body: must be object" });

    const renamed = await within(
      connection,
      connection.send("PATCH", "/me", json, JSON.stringify({ full_name: "Ada" })),
      "PATCH /me with a body, on the same connection",
    );
    assert.equal(renamed.status, 200);
    assert.equal(JSON.parse(renamed.body).full_name, "Ada");

    const deleted = await within(connection, connection.send("DELETE", "/me", json), "DELETE /me");
    assert.equal(deleted.status, 204);
    assert.equal(deleted.body, "");
    assert.equal(await store.findByEmail(EMAIL), undefined, "the account is gone");
  });

  test("fetch as apps call it: DELETE /me with a JSON Content-Type and no body is 204", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const token = await loginToken(app, EMAIL, PASSWORD);
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const response = await fetch(`${base}/me`, {
      method: "DELETE",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(2000),
    });
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
  });
});
