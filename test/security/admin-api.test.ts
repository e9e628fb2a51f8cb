// The service-wide admin API (issue 35) as an attacker sees it: no token or
// a bad one is 401 with WWW-Authenticate: Bearer, a signed-in non-admin is
// 403 on every route and every export, hostile query values are 422 (never
// a 5xx), and the effective configuration never shows a secret: with every
// secret setting given a known value, neither the value nor its base64,
// base64url, hex or URL-encoded form appears anywhere in the answer.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { bearer, buildTestApp, loginToken, mintToken, openTestStore, passwords, TestClock } from "../helpers.ts";

const PASSWORD = "correct horse battery";
const ROUTES = [
  "/events",
  "/events?format=csv",
  "/events?format=jsonl",
  "/events?type=login&limit=5",
  "/admin/overview",
  "/admin/settings",
];

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t);
  const { app, store } = testApp;
  await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
  await store.create({ email: "eve@example.com", hashedPassword: await passwords.hash(PASSWORD) });
  const admin = await loginToken(app, "root@example.com", PASSWORD);
  const eve = await loginToken(app, "eve@example.com", PASSWORD);
  return { ...testApp, admin, eve };
}

describe("the service-wide admin API refuses who may not read it", () => {
  test("no token, a forged token, a non-admin: 401, 401, 403, in the error shape, nothing cached", async (t) => {
    const { app, eve } = await setup(t);
    for (const url of ROUTES) {
      const none = await app.inject({ method: "GET", url });
      assert.equal(none.statusCode, 401, url);
      assert.equal(none.headers["www-authenticate"], "Bearer", url);
      assert.deepEqual(none.json(), { detail: "Not authenticated" }, url);

      const forged = await app.inject({
        method: "GET",
        url,
        headers: bearer(
          mintToken(
            { sub: "x", exp: Math.floor(Date.now() / 1000) + 60 },
            { secret: "not-the-secret-but-long-enough-to-use!!" },
          ),
        ),
      });
      assert.equal(forged.statusCode, 401, url);
      assert.equal(forged.headers["www-authenticate"], "Bearer", url);

      const refused = await app.inject({ method: "GET", url, headers: bearer(eve) });
      assert.equal(refused.statusCode, 403, url);
      assert.deepEqual(refused.json(), { detail: "Not enough privileges" }, url);
      assert.equal(refused.headers["cache-control"], "no-store", url);
      assert.equal(refused.headers["content-disposition"], undefined, url);
    }
  });

  test("a non-admin is refused before the cursor or the filters are read", async (t) => {
    const { app, eve } = await setup(t);
    // The schema's checks run before the guards (Fastify's order): a malformed query is 422 to anyone, which
    // says nothing about the data. The cursor is read by the handler, after the guards: 403.
    const refused = await app.inject({ method: "GET", url: "/events?cursor=garbage", headers: bearer(eve) });
    assert.equal(refused.statusCode, 403);
    const events = await app.inject({
      method: "GET",
      url: "/events?user_id=0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f",
      headers: bearer(eve),
    });
    assert.equal(events.statusCode, 403);
  });

  test("hostile query values are 422, never a 5xx", async (t) => {
    const { app, admin } = await setup(t);
    const hostile = [
      `cursor=${"A".repeat(10_000)}`,
      `cursor=${Buffer.from(`ev1:${"0".repeat(36)}`).toString("base64url")}`,
      `cursor=${Buffer.from("ev1:0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f\u0000").toString("base64url")}`,
      "cursor=%00",
      `outcome=${"x".repeat(1000)}`,
      "outcome=%00",
      `address=${"1".repeat(1000)}`,
      "user_id=%00",
      "limit=1e3",
      "limit=-1",
      "limit=99999999999999999999",
      "since=%00",
      "until=9999-99-99T99:99:99Z",
      "type=login&type=signup",
      "format=csv&format=jsonl",
    ];
    for (const query of hostile) {
      const response = await app.inject({ method: "GET", url: `/events?${query}`, headers: bearer(admin) });
      assert.ok(response.statusCode === 422 || response.statusCode === 200, `${query}: ${response.statusCode}`);
      if (response.statusCode === 422) assert.equal(typeof response.json().detail, "string");
    }
    // A control character in a text filter (a NUL byte, which PostgreSQL cannot hold) is refused by the
    // schema, the same on both databases.
    for (const query of ["outcome=a%00b", "address=%00", "outcome=%0A", "address=1%7F"]) {
      const response = await app.inject({ method: "GET", url: `/events?${query}`, headers: bearer(admin) });
      assert.equal(response.statusCode, 422, query);
      assert.match(response.json().detail, /^querystring\.(outcome|address): must match pattern/, query);
    }
  });
});

describe("GET /admin/settings never shows a secret", () => {
  test("every secret setting given a known value: none of them, encoded in any common way, is in the answer", async (t) => {
    const secrets = {
      SIGNING_SECRET: "signing-secret-one-0123456789-abcdefghij,signing-secret-two-0123456789-abcdefghij",
      MFA_ENCRYPTION_KEY: "mfa-encryption-key-0123456789-abcdefghijkl",
      FIRST_ADMIN_PASSWORD: "first admin passphrase 0123456789 qwerty",
      INTROSPECTION_CLIENTS: "resource-server:introspection-secret-0123456789-abcdefgh",
      REGISTRATION_ACCESS_TOKEN: "registration-access-token-0123456789-abcdefgh",
      UPSTREAM_GOOGLE_CLIENT_SECRET: "google-client-secret-0123456789-abcdefgh",
      UPSTREAM_CORP_CLIENT_SECRET: "corp-client-secret-0123456789-abcdefgh",
      DATABASE_URL: "postgres://svc:database-password-0123456789@db.example:5432/users",
      REDIS_URL: "redis://:redis-password-0123456789@redis.example:6379",
      MAIL_URL: "smtp://mailer:smtp-password-0123456789@smtp.example:587",
    };
    const env = {
      ...secrets,
      PUBLIC_URL: "https://auth.example.com",
      FIRST_ADMIN_EMAIL: "root@example.com",
      DYNAMIC_CLIENT_REGISTRATION: "on",
      UPSTREAM_PROVIDERS: "google,corp",
      UPSTREAM_GOOGLE_CLIENT_ID: "google-client",
      UPSTREAM_CORP_CLIENT_ID: "corp-client",
      UPSTREAM_CORP_ISSUER: "https://id.corp.example",
      LOG_LEVEL: "silent",
    };
    const { config } = loadConfig(env, "/nonexistent");
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const app = await buildApp({ config, store, clock: clock.read });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await store.create({ email: "admin@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
    const admin = await loginToken(app, "admin@example.com", PASSWORD);
    const response = await app.inject({ method: "GET", url: "/admin/settings", headers: bearer(admin) });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["cache-control"], "no-store");
    const body = response.body;

    // Every value, and each part of a list or URL that is itself a secret.
    const values = Object.values(secrets).flatMap((value) => [
      value,
      ...value.split(","),
      ...value.split(":").filter((part) => part.length >= 16),
      "database-password-0123456789",
      "redis-password-0123456789",
      "smtp-password-0123456789",
    ]);
    for (const value of new Set(values)) {
      const forms = [
        value,
        Buffer.from(value).toString("base64"),
        Buffer.from(value).toString("base64url"),
        Buffer.from(value).toString("hex"),
        encodeURIComponent(value),
        createHash("sha256").update(value).digest("hex"),
        createHash("sha256").update(value).digest("base64url"),
      ];
      for (const form of forms) assert.ok(!body.includes(form), `the answer holds ${value} as ${form}`);
    }

    const settings = (
      response.json().sections as {
        settings: { name: string; value: string | null; set: boolean; secret: boolean }[];
      }[]
    ).flatMap((section) => section.settings);
    for (const name of Object.keys(secrets)) {
      assert.deepEqual(
        settings.filter((setting) => setting.name === name).map(({ value, set, secret }) => ({ value, set, secret })),
        [{ value: "set", set: true, secret: true }],
        name,
      );
    }
    assert.deepEqual(response.json().features, {
      database: "postgres",
      redis: true,
      oidc: false,
      upstream_providers: ["google", "corp"],
      webhooks: true,
      mfa_encryption_key: true,
      mail_transport: "smtp",
      dynamic_client_registration: true,
      metrics: false,
      signing_algorithm: "HS256",
    });
  });
});
