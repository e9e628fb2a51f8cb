// The /clients resource for admins, whole answers: each route and its 4xx, the secret shown once
// (at creation and rotation) and never again, rotation with a grace period on the injected clock
// (the old secret opens client_credentials inside it, not after), deletion, and the audit events.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { hashClientSecret } from "../src/oidc/clients.ts";
import { bearer, buildTestApp, createUser, loginToken, requestToken } from "./helpers.ts";

const PASSWORD = "correct horse battery";
const UNKNOWN = "0190a000-0000-7000-8000-000000000000";

async function adminApp(t: import("node:test").TestContext) {
  const built = await buildTestApp(t);
  const admin = await built.store.create({
    email: "root@example.com",
    hashedPassword: (await createUser(built.store, "ada@example.com", PASSWORD)).hashedPassword,
    isAdmin: true,
  });
  const token = await loginToken(built.app, "root@example.com", PASSWORD);
  const userToken = await loginToken(built.app, "ada@example.com", PASSWORD);
  return { ...built, admin, token, userToken };
}

function call(app: FastifyInstance, token: string, method: string, url: string, payload?: object) {
  return app.inject({
    method: method as "GET",
    url,
    headers: bearer(token),
    ...(payload === undefined ? {} : { payload }),
  });
}

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});

describe("/clients", () => {
  test("POST registers a confidential client: 201, Location, RFC 7591 fields, the secret once", async (t) => {
    const { app, store, token, clock } = await adminApp(t);
    const response = await call(app, token, "POST", "/clients", {
      client_name: "Billing",
      grant_types: ["client_credentials"],
      scope: "invoices:read invoices:write",
    });
    assert.equal(response.statusCode, 201);
    const body = response.json();
    assert.equal(response.headers.location, `/clients/${body.client_id}`);
    assert.match(body.client_secret, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(body, {
      client_id: body.client_id,
      client_name: "Billing",
      redirect_uris: [],
      post_logout_redirect_uris: [],
      grant_types: ["client_credentials"],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      scope: "invoices:read invoices:write",
      backchannel_logout_uri: null,
      first_party: false,
      resources: [],
      resource_server: false,
      require_pushed_authorization_requests: false,
      dpop_bound_access_tokens: false,
      client_id_issued_at: clock.seconds,
      client_secret_expires_at: 0,
      previous_secret_expires_at: null,
      registered_by: "admin",
      client_secret: body.client_secret,
    });
    assert.equal((await store.findClient(body.client_id))?.secretHash, hashClientSecret(body.client_secret));

    const read = await call(app, token, "GET", `/clients/${body.client_id}`);
    assert.equal(read.statusCode, 200);
    const { client_secret: _shownOnce, ...withoutSecret } = body;
    assert.deepEqual(read.json(), withoutSecret);
    assert.ok(!read.body.includes(body.client_secret));
  });

  test("POST registers a public client (none): no secret, default scope and response type", async (t) => {
    const { app, token, clock } = await adminApp(t);
    const response = await call(app, token, "POST", "/clients", {
      client_name: "SPA",
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      redirect_uris: ["https://spa.example/callback"],
      post_logout_redirect_uris: ["https://spa.example/"],
      first_party: true,
    });
    assert.equal(response.statusCode, 201);
    const body = response.json();
    assert.deepEqual(body, {
      client_id: body.client_id,
      client_name: "SPA",
      redirect_uris: ["https://spa.example/callback"],
      post_logout_redirect_uris: ["https://spa.example/"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      scope: "openid profile email",
      backchannel_logout_uri: null,
      first_party: true,
      resources: [],
      resource_server: false,
      require_pushed_authorization_requests: false,
      dpop_bound_access_tokens: false,
      client_id_issued_at: clock.seconds,
      registered_by: "admin",
    });
  });

  test("refusals: 401 without a token, 403 for a non-admin, 422 for bad metadata, 404 for an unknown id", async (t) => {
    const { app, token, userToken } = await adminApp(t);
    const noToken = await app.inject({ method: "GET", url: "/clients" });
    assert.equal(noToken.statusCode, 401);
    assert.equal(noToken.headers["www-authenticate"], "Bearer");
    assert.deepEqual(noToken.json(), { detail: "Not authenticated" });
    for (const [method, url] of [
      ["GET", "/clients"],
      ["POST", "/clients"],
      ["GET", `/clients/${UNKNOWN}`],
      ["PUT", `/clients/${UNKNOWN}`],
      ["PATCH", `/clients/${UNKNOWN}`],
      ["DELETE", `/clients/${UNKNOWN}`],
      ["POST", `/clients/${UNKNOWN}/secret`],
    ] as const) {
      // The body is valid where there is one: a body is validated before the caller's privileges are checked.
      const payload =
        method === "GET" || method === "DELETE" ? undefined : url.endsWith("/secret") ? {} : { client_name: "x" };
      const response = await call(app, userToken, method, url, payload);
      assert.equal(response.statusCode, 403, `${method} ${url}`);
      assert.deepEqual(response.json(), { detail: "Not enough privileges" });
    }
    const cases: [object, string][] = [
      [
        { client_name: "x", redirect_uris: ["http://app.example/cb"] },
        "redirect_uris: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https",
      ],
      [{ client_name: "x", redirect_uris: ["https://app.example/cb#top"] }, "redirect_uris: must not have a fragment"],
      [
        { client_name: "x", token_endpoint_auth_method: "none", grant_types: ["client_credentials"] },
        "grant_types: client_credentials needs a confidential client (a secret), not 'none'",
      ],
      [
        { client_name: "x", grant_types: ["password"] },
        "grant_types: 'password' is not supported (authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:device_code)",
      ],
      [{ client_name: "x" }, "redirect_uris: at least one is required with authorization_code"],
      [
        { client_name: "x", grant_types: ["client_credentials"], client_secret: "mine" },
        "body.client_secret: unknown field",
      ],
      [{ grant_types: ["client_credentials"] }, "body.client_name: field required"],
    ];
    for (const [payload, detail] of cases) {
      const response = await call(app, token, "POST", "/clients", payload);
      assert.equal(response.statusCode, 422, JSON.stringify(payload));
      assert.deepEqual(response.json(), { detail });
    }
    for (const [method, url, payload] of [
      ["GET", `/clients/${UNKNOWN}`, undefined],
      ["PUT", `/clients/${UNKNOWN}`, { client_name: "x", grant_types: ["client_credentials"] }],
      ["PATCH", `/clients/${UNKNOWN}`, { client_name: "x" }],
      ["DELETE", `/clients/${UNKNOWN}`, undefined],
      ["POST", `/clients/${UNKNOWN}/secret`, {}],
    ] as const) {
      const response = await call(app, token, method, url, payload);
      assert.equal(response.statusCode, 404, `${method} ${url}`);
      assert.deepEqual(response.json(), { detail: "Client not found" });
    }
    const notUuid = await call(app, token, "GET", "/clients/grafana");
    assert.equal(notUuid.statusCode, 422);
    assert.deepEqual(notUuid.json(), { detail: 'params.id: must match format "uuid"' });
  });

  test("GET lists in pages; PUT replaces, PATCH updates, neither turns public into confidential", async (t) => {
    const { app, token } = await adminApp(t);
    const ids: string[] = [];
    for (const name of ["A", "B", "C"]) {
      const created = await call(app, token, "POST", "/clients", {
        client_name: name,
        grant_types: ["client_credentials"],
      });
      ids.push(created.json().client_id);
    }
    const first = await call(app, token, "GET", "/clients?limit=2");
    assert.equal(first.statusCode, 200);
    assert.deepEqual(
      first.json().items.map((c: { client_name: string }) => c.client_name),
      ["A", "B"],
    );
    assert.equal(first.json().next_cursor, ids[1]);
    assert.equal(first.json().next, `/clients?limit=2&cursor=${ids[1]}`);
    const second = await call(app, token, "GET", first.json().next);
    assert.deepEqual(
      second.json().items.map((c: { client_name: string }) => c.client_name),
      ["C"],
    );
    assert.equal(second.json().next, null);

    const id = ids[0] as string;
    const put = await call(app, token, "PUT", `/clients/${id}`, {
      client_name: "A2",
      grant_types: ["authorization_code", "client_credentials"],
      redirect_uris: ["https://a.example/cb"],
      token_endpoint_auth_method: "client_secret_post",
    });
    assert.equal(put.statusCode, 200);
    assert.equal(put.json().client_name, "A2");
    assert.deepEqual(put.json().response_types, ["code"]);
    assert.equal(put.json().scope, "openid profile email");
    assert.equal(put.json().token_endpoint_auth_method, "client_secret_post");
    const patch = await call(app, token, "PATCH", `/clients/${id}`, { scope: "openid reports:read" });
    assert.equal(patch.statusCode, 200);
    assert.deepEqual(patch.json(), { ...(put.json() as object), scope: "openid reports:read" });
    const toPublic = await call(app, token, "PATCH", `/clients/${id}`, {
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code"],
    });
    assert.equal(toPublic.statusCode, 422);
    assert.deepEqual(toPublic.json(), {
      detail:
        "token_endpoint_auth_method: a client stays public ('none') or confidential; register a new client instead",
    });
    const broken = await call(app, token, "PATCH", `/clients/${id}`, { redirect_uris: [] });
    assert.equal(broken.statusCode, 422);
    assert.deepEqual(broken.json(), { detail: "redirect_uris: at least one is required with authorization_code" });
  });

  test("rotation: a new secret once; the old one works inside the grace period, not after; then deletion", async (t) => {
    const { app, store, token: firstToken, admin, clock } = await adminApp(t);
    let token = firstToken;
    const created = (
      await call(app, token, "POST", "/clients", { client_name: "Billing", grant_types: ["client_credentials"] })
    ).json();
    const grant = (secret: string) =>
      requestToken(app, { grant_type: "client_credentials" }, basic(created.client_id, secret));
    assert.equal((await grant(created.client_secret)).statusCode, 200);

    const tooLong = await call(app, token, "POST", `/clients/${created.client_id}/secret`, {
      grace_seconds: 2_592_001,
    });
    assert.equal(tooLong.statusCode, 422);
    assert.deepEqual(tooLong.json(), { detail: "body.grace_seconds: must be <= 2592000" });

    const rotated = await call(app, token, "POST", `/clients/${created.client_id}/secret`, { grace_seconds: 3600 });
    assert.equal(rotated.statusCode, 201);
    const body = rotated.json();
    assert.notEqual(body.client_secret, created.client_secret);
    const { client_secret: _old, previous_secret_expires_at: _none, ...unchanged } = created;
    assert.deepEqual(body, {
      ...unchanged,
      previous_secret_expires_at: new Date(clock.now + 3600_000).toISOString(),
      client_secret: body.client_secret,
    });
    assert.equal((await grant(body.client_secret)).statusCode, 200);
    assert.equal((await grant(created.client_secret)).statusCode, 200, "inside the grace period");
    clock.advanceSeconds(3601);
    const late = await grant(created.client_secret);
    assert.equal(late.statusCode, 401, "after it");
    assert.deepEqual(late.json(), {
      error: "invalid_client",
      error_description: "Client authentication failed",
      detail: "Client authentication failed",
    });
    assert.equal((await grant(body.client_secret)).statusCode, 200);
    // The admin's own token has run out meanwhile (30 minutes).
    token = await loginToken(app, "root@example.com", PASSWORD);

    const publicClient = (
      await call(app, token, "POST", "/clients", {
        client_name: "SPA",
        token_endpoint_auth_method: "none",
        redirect_uris: ["https://spa.example/cb"],
      })
    ).json();
    const noSecret = await call(app, token, "POST", `/clients/${publicClient.client_id}/secret`, {});
    assert.equal(noSecret.statusCode, 409);
    assert.deepEqual(noSecret.json(), { detail: "A public client (token_endpoint_auth_method 'none') has no secret" });

    const deleted = await call(app, token, "DELETE", `/clients/${created.client_id}`);
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, "");
    assert.equal((await grant(body.client_secret)).statusCode, 401);
    assert.equal((await call(app, token, "GET", `/clients/${created.client_id}`)).statusCode, 404);

    const events = await store.listEvents({ userId: admin.id, limit: 50, type: "oauth_client" });
    assert.deepEqual(
      events.map((event) => [event.outcome, event.clientAddress]),
      [
        ["created", "127.0.0.1"],
        ["secret_rotated", "127.0.0.1"],
        ["created", "127.0.0.1"],
        ["deleted", "127.0.0.1"],
      ],
    );
  });
});
