// The /webhooks resource: each route's whole answer and its 4xx, the secret
// shown once (at creation and rotation) and never again, sealed at rest,
// PUT/PATCH/DELETE by the spec's conventions, the audit events, and the
// setting that refuses endpoints without a public address.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import type { Config } from "../src/config.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS, NOT_ENOUGH_PRIVILEGES } from "../src/errors.ts";
import { isSpecialAddress } from "../src/outbound/addresses.ts";
import { EVENT_NOT_FOUND, PRIVATE_URL, URL_WITH_CREDENTIALS, WEBHOOK_NOT_FOUND } from "../src/webhooks/endpoints.ts";
import { WEBHOOK_EVENT_TYPES } from "../src/webhooks/events.ts";
import { buildTestApp, caller, signedInUser, type TestApp } from "./helpers.ts";

const PASSWORD = "correct horse battery";
const MISSING_ID = "01900000-0000-7000-8000-000000000000";
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface World extends TestApp {
  admin: { id: string; token: string };
  ada: { id: string; token: string };
  call: (method: string, url: string, token?: string, payload?: object) => Promise<LightMyRequestResponse>;
}

async function world(t: TestContext, config: Partial<Config> = {}): Promise<World> {
  const testApp = await buildTestApp(t, config);
  const { app, store } = testApp;
  const admin = await signedInUser(app, store, "admin@example.com", PASSWORD, true);
  const ada = await signedInUser(app, store, "ada@example.com", PASSWORD);
  return { ...testApp, admin, ada, call: caller(app) };
}

function expectError(
  response: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
  detail: string | RegExp,
) {
  assert.equal(response.statusCode, status, response.body);
  const body = JSON.parse(response.body);
  assert.deepEqual(Object.keys(body), ["detail"]);
  if (typeof detail === "string") assert.equal(body.detail, detail);
  else assert.match(body.detail, detail);
  if (status === 401) assert.equal(response.headers["www-authenticate"], "Bearer");
}

const NEW = { url: "http://127.0.0.1:9/hooks", event_types: ["user.created", "user.deleted"] };

describe("the /webhooks resource", () => {
  test("POST creates (201, Location, the secret once); GET, the list and later answers never show it", async (t) => {
    const { call, admin, clock, store } = await world(t);
    const created = await call("POST", "/webhooks", admin.token, { ...NEW, description: "profiles" });
    assert.equal(created.statusCode, 201, created.body);
    const body = created.json();
    assert.match(body.id, UUID);
    assert.match(body.secret, SECRET);
    assert.equal(created.headers.location, `/webhooks/${body.id}`);
    const at = new Date(clock.now).toISOString();
    const record = {
      id: body.id,
      url: NEW.url,
      event_types: NEW.event_types,
      enabled: true,
      disabled_reason: null,
      description: "profiles",
      previous_secret_expires_at: null,
      created_at: at,
      updated_at: at,
    };
    assert.deepEqual(body, { ...record, secret: body.secret });

    const read = await call("GET", `/webhooks/${body.id}`, admin.token);
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), record);
    const list = await call("GET", "/webhooks", admin.token);
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json(), { items: [record], next_cursor: null, next: null });
    for (const response of [read, list]) assert.ok(!response.body.includes("whsec_"));
    // Sealed at rest: neither the secret nor its base64 body is in the stored record.
    const stored = await store.findWebhookEndpoint(body.id);
    assert.ok(stored && !stored.sealedSecret.includes(body.secret.slice(6)));
    assert.ok(!JSON.stringify(stored).includes(body.secret.slice(6)));
    // The admin's audit trail names the action, never the secret.
    const events = await call("GET", `/users/${admin.id}/events?type=webhook`, admin.token);
    assert.deepEqual(
      events.json().items.map((event: { outcome: string }) => event.outcome),
      ["endpoint_created"],
    );
  });

  test("the list pages oldest first with next and next_cursor", async (t) => {
    const { call, admin } = await world(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await call("POST", "/webhooks", admin.token, NEW)).json().id);
    const first = (await call("GET", "/webhooks?limit=2", admin.token)).json();
    assert.deepEqual(
      first.items.map((item: { id: string }) => item.id),
      ids.slice(0, 2),
    );
    assert.equal(first.next_cursor, ids[1]);
    assert.equal(first.next, `/webhooks?limit=2&cursor=${ids[1]}`);
    const second = (await call("GET", first.next, admin.token)).json();
    assert.deepEqual(
      second.items.map((item: { id: string }) => item.id),
      ids.slice(2),
    );
    assert.equal(second.next, null);
  });

  test("PUT replaces the whole record, PATCH only the fields sent, DELETE answers 204 and the endpoint is gone", async (t) => {
    const { call, admin, clock } = await world(t);
    const { id, created_at } = (await call("POST", "/webhooks", admin.token, { ...NEW, description: "x" })).json();
    clock.advanceSeconds(10);
    const replaced = await call("PUT", `/webhooks/${id}`, admin.token, {
      url: "https://hooks.example.com/a",
      event_types: ["session.created"],
    });
    assert.equal(replaced.statusCode, 200, replaced.body);
    const at = new Date(clock.now).toISOString();
    const after = {
      id,
      url: "https://hooks.example.com/a",
      event_types: ["session.created"],
      enabled: true,
      disabled_reason: null,
      description: null,
      previous_secret_expires_at: null,
      created_at,
      updated_at: at,
    };
    assert.deepEqual(replaced.json(), after);
    const patched = await call("PATCH", `/webhooks/${id}`, admin.token, { enabled: false, description: "paused" });
    assert.equal(patched.statusCode, 200);
    assert.deepEqual(patched.json(), { ...after, enabled: false, description: "paused" });
    const deleted = await call("DELETE", `/webhooks/${id}`, admin.token);
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, "");
    expectError(await call("GET", `/webhooks/${id}`, admin.token), 404, WEBHOOK_NOT_FOUND);
    const events = await call("GET", `/users/${admin.id}/events?type=webhook`, admin.token);
    assert.deepEqual(
      events.json().items.map((event: { outcome: string }) => event.outcome),
      ["endpoint_created", "endpoint_updated", "endpoint_updated", "endpoint_deleted"],
    );
  });

  test("POST /webhooks/{id}/secrets rotates: a new secret once, the previous one kept for the grace period", async (t) => {
    const { call, admin, clock } = await world(t, {
      webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 1000 },
    });
    const created = (await call("POST", "/webhooks", admin.token, NEW)).json();
    const rotated = await call("POST", `/webhooks/${created.id}/secrets`, admin.token);
    assert.equal(rotated.statusCode, 201, rotated.body);
    const until = new Date(clock.now + 3600_000).toISOString();
    assert.deepEqual(rotated.json(), { secret: rotated.json().secret, previous_secret_expires_at: until });
    assert.match(rotated.json().secret, SECRET);
    assert.notEqual(rotated.json().secret, created.secret);
    const read = await call("GET", `/webhooks/${created.id}`, admin.token);
    assert.equal(read.json().previous_secret_expires_at, until);
    assert.ok(!read.body.includes("whsec_"));
  });

  test("401 without a token, 403 for a non-admin, on every route", async (t) => {
    const { call, ada, admin } = await world(t);
    const { id } = (await call("POST", "/webhooks", admin.token, NEW)).json();
    const routes: [string, string, object?][] = [
      ["POST", "/webhooks", NEW],
      ["GET", "/webhooks"],
      ["GET", `/webhooks/${id}`],
      ["PUT", `/webhooks/${id}`, NEW],
      ["PATCH", `/webhooks/${id}`, { enabled: false }],
      ["DELETE", `/webhooks/${id}`],
      ["POST", `/webhooks/${id}/secrets`],
      ["GET", `/webhooks/${id}/deliveries`],
      ["POST", `/webhooks/${id}/deliveries`, { event_id: MISSING_ID }],
    ];
    for (const [method, url, payload] of routes) {
      expectError(
        await call(method, url, undefined, payload),
        401,
        /^(Not authenticated|Could not validate credentials)$/,
      );
      expectError(await call(method, url, "not-a-token", payload), 401, COULD_NOT_VALIDATE_CREDENTIALS);
      expectError(await call(method, url, ada.token, payload), 403, NOT_ENOUGH_PRIVILEGES);
    }
  });

  test("404 for an unknown endpoint or event, 422 for a malformed id", async (t) => {
    const { call, admin } = await world(t);
    for (const [method, url, payload] of [
      ["GET", `/webhooks/${MISSING_ID}`],
      ["PUT", `/webhooks/${MISSING_ID}`, NEW],
      ["PATCH", `/webhooks/${MISSING_ID}`, { enabled: true }],
      ["DELETE", `/webhooks/${MISSING_ID}`],
      ["POST", `/webhooks/${MISSING_ID}/secrets`],
      ["GET", `/webhooks/${MISSING_ID}/deliveries`],
      ["POST", `/webhooks/${MISSING_ID}/deliveries`, { event_id: MISSING_ID }],
    ] as [string, string, object?][]) {
      expectError(await call(method, url, admin.token, payload), 404, WEBHOOK_NOT_FOUND);
    }
    const { id } = (await call("POST", "/webhooks", admin.token, NEW)).json();
    expectError(
      await call("POST", `/webhooks/${id}/deliveries`, admin.token, { event_id: MISSING_ID }),
      404,
      EVENT_NOT_FOUND,
    );
    expectError(await call("GET", "/webhooks/not-a-uuid", admin.token), 422, /^params\.id/);
    const empty = await call("GET", `/webhooks/${id}/deliveries`, admin.token);
    assert.equal(empty.statusCode, 200);
    assert.deepEqual(empty.json(), { items: [], next_cursor: null, next: null });
  });

  test("422 for an invalid body: URL, event types, unknown fields, credentials in the URL", async (t) => {
    const { call, admin } = await world(t);
    const cases: [object, RegExp | string][] = [
      [{ event_types: ["user.created"] }, /^body/],
      [{ ...NEW, url: "ftp://example.com/x" }, /^body\.url/],
      [{ ...NEW, url: "not a url" }, /^body\.url/],
      [{ ...NEW, event_types: [] }, /^body\.event_types/],
      [{ ...NEW, event_types: ["user.created", "user.created"] }, /^body\.event_types/],
      [{ ...NEW, event_types: ["user.exploded"] }, /^body\.event_types/],
      [{ ...NEW, secret: "whsec_mine" }, /^body/],
      [{ ...NEW, url: "https://user:pass@hooks.example.com/x" }, URL_WITH_CREDENTIALS],
    ];
    for (const [payload, detail] of cases)
      expectError(await call("POST", "/webhooks", admin.token, payload), 422, detail);
    const list = (await call("GET", "/webhooks", admin.token)).json();
    assert.deepEqual(list.items, []);
  });

  test("WEBHOOK_REFUSE_PRIVATE_ADDRESSES refuses loopback, private, link-local and special hosts (422)", async (t) => {
    const { call, admin } = await world(t, {
      webhooks: { refusePrivateAddresses: true, timeoutMs: 2000, secretGraceSeconds: 86_400, pollIntervalMs: 1000 },
    });
    for (const url of [
      "http://127.0.0.1/x",
      "http://10.1.2.3/x",
      "http://[::1]/x",
      "http://169.254.169.254/latest/meta-data",
      "http://192.168.1.1/x",
      "http://172.16.0.1/x",
      "http://100.64.0.1/x",
      "http://0.0.0.0/x",
      "http://[fd00::1]/x",
      "http://[fe80::1]/x",
      "http://[::ffff:127.0.0.1]/x",
      "http://localhost:8080/x",
    ]) {
      expectError(await call("POST", "/webhooks", admin.token, { ...NEW, url }), 422, PRIVATE_URL);
    }
    // A public address is accepted (a literal, so that no DNS is needed).
    const created = await call("POST", "/webhooks", admin.token, { ...NEW, url: "https://93.184.215.14/x" });
    assert.equal(created.statusCode, 201, created.body);
    // PATCH and PUT check the new URL too.
    expectError(
      await call("PATCH", `/webhooks/${created.json().id}`, admin.token, { url: "http://10.0.0.1/" }),
      422,
      PRIVATE_URL,
    );
  });

  test("the OpenAPI document lists every event under its top-level webhooks, signed, with its body", async (t) => {
    const { app } = await buildTestApp(t);
    const document = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    assert.equal(document.openapi, "3.1.0");
    // Issue 35: the test event an admin sends (POST /webhooks/{id}/test) is listed after the catalogue.
    assert.deepEqual(Object.keys(document.webhooks), [...WEBHOOK_EVENT_TYPES, "webhook.test"]);
    const created = document.webhooks["user.created"].post;
    assert.deepEqual(
      created.parameters.map((parameter: { name: string; in: string }) => `${parameter.in}:${parameter.name}`),
      ["header:webhook-id", "header:webhook-timestamp", "header:webhook-signature"],
    );
    const body = created.requestBody.content["application/json"].schema;
    assert.deepEqual(Object.keys(body.properties), ["type", "timestamp", "data"]);
    assert.deepEqual(Object.keys(body.properties.data.properties), ["user_id", "email"]);
    assert.deepEqual(
      Object.keys(
        document.webhooks["session.ended"].post.requestBody.content["application/json"].schema.properties.data
          .properties,
      ),
      ["user_id", "session_id", "reason"],
    );
    // Each event's facts name only the values it can carry: `all` (an admin's reset of every factor) is
    // mfa.disabled's alone; session.ended's reasons are listed, each with the action that sends it.
    const data = (type: string) =>
      document.webhooks[type].post.requestBody.content["application/json"].schema.properties.data.properties;
    assert.deepEqual(data("mfa.enabled").factor, {
      type: "string",
      enum: ["totp", "passkey"],
      description: "The kind of factor enabled.",
    });
    assert.deepEqual(data("mfa.disabled").factor, {
      type: "string",
      enum: ["totp", "passkey", "all"],
      description: "The kind of factor disabled; `all` when an admin reset every second factor.",
    });
    const reason = data("session.ended").reason;
    const reasons = [
      "logged_out",
      "ended_by_admin",
      "revoked",
      "session_limit",
      "reuse_detected",
      "credentials_changed",
      "browser_session_ended",
      "consent_revoked",
      "client_deleted",
    ];
    assert.deepEqual(reason.enum, reasons);
    for (const value of reasons) assert.match(reason.description, new RegExp(`\`${value}\`, `), value);
    for (const path of ["/webhooks", "/webhooks/{id}", "/webhooks/{id}/secrets", "/webhooks/{id}/deliveries"])
      assert.ok(document.paths[path], path);
  });

  test("special addresses: the table", () => {
    for (const address of ["127.0.0.1", "10.0.0.1", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.64.0.1"])
      assert.equal(isSpecialAddress(address), true, address);
    for (const address of ["::1", "::", "fc00::1", "fe80::1", "::ffff:10.0.0.1", "ff02::1", "2001:db8::1", "224.0.0.1"])
      assert.equal(isSpecialAddress(address), true, address);
    // IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96) forms, whatever IPv4 address they carry.
    for (const address of ["::7f00:1", "::808:808", "::ffff:0:7f00:1", "::ffff:0:808:808"])
      assert.equal(isSpecialAddress(address), true, address);
    for (const address of ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "172.32.0.1"])
      assert.equal(isSpecialAddress(address), false, address);
    assert.equal(isSpecialAddress("example.com"), true);
  });
});
