// A dynamic registrant (RFC 7591, POST /auth/register with the initial access token) must not choose
// its own privileges (issue 32, defect 2). By default it gets the code flow and refresh only, and the
// OpenID Connect scopes: a client_credentials client, any other grant type, and scopes such as `admin`
// or `invoices:write` are refused with RFC 7591 section 3.2.2's invalid_client_metadata naming what was
// refused, and nothing is stored. first_party is never the registrant's. The operator widens each with
// DYNAMIC_CLIENT_GRANT_TYPES and DYNAMIC_CLIENT_SCOPES (checked at start-up), and the tokens such a
// client then gets stay within what was registered. Admins (POST /clients) keep every option.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { type Config, loadConfig } from "../../src/config.ts";
import { ConfigError } from "../../src/errors.ts";
import { bearer, buildTestApp, caller, requestToken, signedInUser } from "../helpers.ts";
import { cleanEnv, SERVER, scratchDir } from "../process.ts";

const TOKEN = "an-initial-access-token-of-32-bytes-or-more";
const PASSWORD = "correct horse battery";
const DEFAULTS = {
  grantTypes: ["authorization_code", "refresh_token"] as const,
  scopes: ["openid", "profile", "email", "offline_access"],
};
const CODE_FLOW = { client_name: "Partner", redirect_uris: ["https://partner.example/cb"] };

async function registration(
  t: TestContext,
  policy: Pick<NonNullable<Config["dynamicRegistration"]>, "grantTypes" | "scopes"> = DEFAULTS,
) {
  const testApp = await buildTestApp(t, { dynamicRegistration: { initialAccessToken: TOKEN, ...policy } });
  const admin = await signedInUser(testApp.app, testApp.store, "admin@example.com", PASSWORD, true);
  const register = (payload: object) =>
    testApp.app.inject({ method: "POST", url: "/auth/register", headers: bearer(TOKEN), payload });
  /** The clients that exist, as an admin lists them. */
  const clientIds = async () =>
    ((await caller(testApp.app)("GET", "/clients", admin.token)).json().items as { client_id: string }[]).map(
      (client) => client.client_id,
    );
  return { ...testApp, admin, register, clientIds };
}

function refused(response: LightMyRequestResponse, detail: string) {
  assert.equal(response.statusCode, 400, response.body);
  assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
  assert.deepEqual(response.json(), { error: "invalid_client_metadata", error_description: detail, detail });
}

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
});

describe("a dynamic registrant's privileges", () => {
  test("by default only the code flow and refresh: client_credentials and other grant types are refused, naming them", async (t) => {
    const { register, clientIds } = await registration(t);
    const notAvailable = (grant: string) =>
      `grant_types: '${grant}' is not available to dynamically registered clients (authorization_code, refresh_token)`;
    refused(
      await register({ client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:write admin" }),
      notAvailable("client_credentials"),
    );
    refused(
      await register({ ...CODE_FLOW, grant_types: ["authorization_code", "client_credentials"] }),
      notAvailable("client_credentials"),
    );
    refused(await register({ ...CODE_FLOW, grant_types: ["password"] }), notAvailable("password"));
    refused(
      await register({ ...CODE_FLOW, grant_types: ["urn:ietf:params:oauth:grant-type:jwt-bearer"] }),
      notAvailable("urn:ietf:params:oauth:grant-type:jwt-bearer"),
    );
    assert.deepEqual(await clientIds(), []);
    // The code flow and refresh are registered as asked.
    const allowed = await register({ ...CODE_FLOW, grant_types: ["authorization_code", "refresh_token"] });
    assert.equal(allowed.statusCode, 201, allowed.body);
    assert.deepEqual(allowed.json().grant_types, ["authorization_code", "refresh_token"]);
    assert.deepEqual(await clientIds(), [allowed.json().client_id]);
  });

  test("by default the scope is within openid profile email offline_access: admin and invoices:write are refused", async (t) => {
    const { register, clientIds } = await registration(t);
    const notAvailable = (scope: string) =>
      `scope: '${scope}' is not available to dynamically registered clients (openid profile email offline_access)`;
    refused(await register({ ...CODE_FLOW, scope: "openid admin" }), notAvailable("admin"));
    refused(await register({ ...CODE_FLOW, scope: "invoices:write" }), notAvailable("invoices:write"));
    refused(await register({ ...CODE_FLOW, scope: `openid ${"x".repeat(500)}` }), notAvailable("x".repeat(64)));
    assert.deepEqual(await clientIds(), []);
    const asked = await register({ ...CODE_FLOW, scope: "openid email offline_access" });
    assert.equal(asked.statusCode, 201, asked.body);
    assert.equal(asked.json().scope, "openid email offline_access");
    // Left out: the registry's default for a client that signs users in.
    const omitted = await register(CODE_FLOW);
    assert.equal(omitted.statusCode, 201, omitted.body);
    assert.equal(omitted.json().scope, "openid profile email");
  });

  test("first_party is never the registrant's, whatever it sends and whatever the operator widened", async (t) => {
    for (const policy of [
      DEFAULTS,
      { grantTypes: ["authorization_code", "client_credentials"] as const, scopes: ["openid", "x"] },
    ]) {
      const { register, app, admin } = await registration(t, policy);
      for (const firstParty of [true, "true", 1]) {
        const response = await register({ ...CODE_FLOW, first_party: firstParty });
        assert.equal(response.statusCode, 201, response.body);
        assert.equal(response.json().first_party, false);
        const stored = await caller(app)("GET", `/clients/${response.json().client_id}`, admin.token);
        assert.equal(stored.json().first_party, false);
        assert.equal(stored.json().registered_by, "dynamic");
      }
    }
  });

  test("with the defaults, a registered client gets no client_credentials token at all", async (t) => {
    const { register, app } = await registration(t);
    const client = (await register(CODE_FLOW)).json();
    assert.equal(typeof client.client_secret, "string");
    for (const scope of [undefined, "admin", "invoices:write"]) {
      const token = await requestToken(
        app,
        { grant_type: "client_credentials", ...(scope ? { scope } : {}) },
        basic(client.client_id, client.client_secret),
      );
      assert.equal(token.statusCode, 400, token.body);
      const detail = "This client is not registered for the client_credentials grant";
      assert.deepEqual(token.json(), { error: "unauthorized_client", error_description: detail, detail });
    }
  });

  test("the operator's settings widen each; the tokens stay within what was registered", async (t) => {
    const { register, app, clientIds } = await registration(t, {
      grantTypes: ["authorization_code", "refresh_token", "client_credentials"],
      scopes: ["openid", "invoices:read"],
    });
    refused(
      await register({
        client_name: "Billing",
        grant_types: ["client_credentials"],
        scope: "invoices:read invoices:write",
      }),
      "scope: 'invoices:write' is not available to dynamically registered clients (openid invoices:read)",
    );
    assert.deepEqual(await clientIds(), []);
    const billing = await register({
      client_name: "Billing",
      grant_types: ["client_credentials"],
      scope: "invoices:read",
    });
    assert.equal(billing.statusCode, 201, billing.body);
    const body = billing.json();
    assert.deepEqual(
      { grant_types: body.grant_types, scope: body.scope, first_party: body.first_party },
      { grant_types: ["client_credentials"], scope: "invoices:read", first_party: false },
    );
    const credentials = basic(body.client_id, body.client_secret);
    const all = await requestToken(app, { grant_type: "client_credentials" }, credentials);
    assert.equal(all.statusCode, 200, all.body);
    assert.equal(all.json().scope, "invoices:read");
    const claims = JSON.parse(Buffer.from(all.json().access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.scope, "invoices:read");
    const outside = "The requested scope is not within the client's registered scope";
    for (const scope of ["invoices:write", "admin", "invoices:read admin"]) {
      const token = await requestToken(app, { grant_type: "client_credentials", scope }, credentials);
      assert.equal(token.statusCode, 400, token.body);
      assert.deepEqual(token.json(), { error: "invalid_scope", error_description: outside, detail: outside });
    }
    // A client_credentials client that names no scope gets none (the OpenID Connect default is for sign-in).
    const bare = (await register({ client_name: "Bare", grant_types: ["client_credentials"] })).json();
    assert.equal(bare.scope, "");
    const token = await requestToken(
      app,
      { grant_type: "client_credentials" },
      basic(bare.client_id, bare.client_secret),
    );
    assert.equal(token.statusCode, 200, token.body);
    assert.equal(token.json().scope, undefined);
  });

  test("admins keep every option: client_credentials, any scope, first_party", async (t) => {
    const { app, admin } = await registration(t);
    const created = await caller(app)("POST", "/clients", admin.token, {
      client_name: "Billing",
      grant_types: ["client_credentials"],
      scope: "invoices:write admin",
      first_party: true,
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual(
      {
        scope: created.json().scope,
        first_party: created.json().first_party,
        registered_by: created.json().registered_by,
      },
      { scope: "invoices:write admin", first_party: true, registered_by: "admin" },
    );
  });
});

/**
 * Starts the service with `env` and waits for it to exit; one that is still running after 10 s started
 * (the setting was not refused) and is stopped, and the test fails.
 */
async function startOrRefuse(t: TestContext, env: Record<string, string>) {
  const child = spawn(process.execPath, SERVER, { cwd: scratchDir(t), env: cleanEnv(env) });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const [code, signal] = await once(child, "exit");
  clearTimeout(timer);
  assert.equal(signal, null, `the service started: ${stdout}`);
  return { code: code as number | null, stdout, stderr };
}

describe("DYNAMIC_CLIENT_GRANT_TYPES and DYNAMIC_CLIENT_SCOPES", () => {
  test("defaults, widened values, and a bad value refused naming the setting (also while registration is off)", (t) => {
    const cwd = mkdtempSync(join(tmpdir(), "registration-policy-"));
    t.after(() => rmSync(cwd, { recursive: true, force: true }));
    const base = { SIGNING_SECRET: "s".repeat(32) };
    const on = { ...base, DYNAMIC_CLIENT_REGISTRATION: "on", REGISTRATION_ACCESS_TOKEN: TOKEN };
    assert.deepEqual(loadConfig(on, cwd).config.dynamicRegistration, { initialAccessToken: TOKEN, ...DEFAULTS });
    assert.deepEqual(
      loadConfig(
        {
          ...on,
          DYNAMIC_CLIENT_GRANT_TYPES: "authorization_code, refresh_token,client_credentials",
          DYNAMIC_CLIENT_SCOPES: "openid invoices:read,invoices:read",
        },
        cwd,
      ).config.dynamicRegistration,
      {
        initialAccessToken: TOKEN,
        grantTypes: ["authorization_code", "refresh_token", "client_credentials"],
        scopes: ["openid", "invoices:read"],
      },
    );
    for (const [env, message] of [
      [
        { DYNAMIC_CLIENT_GRANT_TYPES: "authorization_code,password" },
        'DYNAMIC_CLIENT_GRANT_TYPES: must list grant types among authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:device_code; got "password"',
      ],
      [
        { DYNAMIC_CLIENT_GRANT_TYPES: "refresh_token" },
        "DYNAMIC_CLIENT_GRANT_TYPES: refresh_token only comes with authorization_code",
      ],
      [
        { DYNAMIC_CLIENT_SCOPES: 'openid "admin"' },
        'DYNAMIC_CLIENT_SCOPES: must list scope tokens; ""admin"" is not one',
      ],
    ] as const) {
      for (const environment of [
        { ...on, ...env },
        { ...base, ...env },
      ])
        assert.throws(
          () => loadConfig(environment, cwd),
          (error: unknown) => error instanceof ConfigError && error.message === message,
        );
    }
  });

  for (const [setting, value] of [
    ["DYNAMIC_CLIENT_GRANT_TYPES", "implicit"],
    ["DYNAMIC_CLIENT_SCOPES", "openid\u00e9"],
  ] as const) {
    test(`the service does not start with an unusable ${setting}: one line naming it`, async (t) => {
      const result = await startOrRefuse(t, { [setting]: value, PORT: "0" });
      assert.notEqual(result.code, 0);
      const lines = result.stderr.trim().split("\n");
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0] as string, new RegExp(`^configuration error: ${setting}: `));
      assert.equal(result.stdout, "");
    });
  }
});
