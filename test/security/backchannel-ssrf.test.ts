// Server-side request forgery through a client's backchannel_logout_uri (issue 32, defect 5), and the
// IPv6 forms that carry an IPv4 address in the outbound block list (defect 12). The URI goes through
// the webhooks' outbound guard when it is registered or changed (POST, PUT, PATCH /clients, the CLI,
// dynamic registration) and again at every delivery, on the address actually connected to: https to
// a public address; plain http and private addresses only for an admin's client while
// WEBHOOK_REFUSE_PRIVATE_ADDRESSES is off (and plain http then only to loopback); never for a
// dynamically registered client. DNS is steered by the test (buildApp's `resolve`) to play a host
// that is public at registration and private at delivery (rebinding). SQLite by default, PostgreSQL
// with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { lookup } from "node:dns/promises";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import pg from "pg";
import type { Config } from "../../src/config.ts";
import { migrations } from "../../src/store/migrations.ts";
import { openPostgresStore } from "../../src/store/postgres.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { bearer, buildTestApp, caller, requestToken, signedInUser } from "../helpers.ts";
import { clientTokens, PASSWORD, type Setup, setUp } from "../oidc/client-flow.ts";
import { pkcePair } from "../oidc/fixture.ts";
import { CLI, run, scratchDir } from "../process.ts";

const PUBLIC = "93.184.215.14";
const REGISTRATION_TOKEN = "an-initial-access-token-of-32-bytes-or-more";
const webhooks = (refusePrivateAddresses: boolean): Config["webhooks"] => ({
  refusePrivateAddresses,
  timeoutMs: 2000,
  secretGraceSeconds: 3600,
  pollIntervalMs: 50,
});

const PRIVATE = "backchannel_logout_uri: the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES is on)";
const NOT_HTTPS =
  "backchannel_logout_uri: must be https (plain http only to a loopback host, and only with " +
  "WEBHOOK_REFUSE_PRIVATE_ADDRESSES off)";
const UNRESOLVABLE = "backchannel_logout_uri: the host name does not resolve";
const CREDENTIALS = "backchannel_logout_uri: must not carry a user name or password";
const DYNAMIC_PRIVATE = "backchannel_logout_uri: the host has no public address";
const DYNAMIC_NOT_HTTPS = "backchannel_logout_uri: must be https";

/** https URIs whose host has no public address: literals in every spelling, and names that resolve to one. */
const PRIVATE_URIS = [
  "https://127.0.0.1/logout",
  "https://2130706433/logout",
  "https://10.1.2.3/logout",
  "https://169.254.169.254/latest/meta-data",
  "https://0.0.0.0/logout",
  "https://[::1]/logout",
  "https://[::ffff:127.0.0.1]/logout",
  "https://[::127.0.0.1]/logout",
  "https://[::ffff:0:127.0.0.1]/logout",
  "https://[fd00::1]/logout",
  "https://localhost/logout",
  "https://metadata.example/latest",
];

/**
 * DNS as the test says: its table first (a name it maps to nothing fails like an unknown name), the
 * system's resolver for other names (localhost). `asked` records every name looked up.
 */
function steeredDns() {
  const table: Record<string, string[]> = {
    "public.example": [PUBLIC],
    "metadata.example": ["169.254.169.254"],
    "nowhere.example": [],
  };
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const addresses = table[host];
    if (addresses === undefined) return lookup(host, { all: true });
    if (addresses.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: isIP(address) }));
  };
  return { table, asked, resolve };
}

const metadata = (uri: string) => ({
  client_name: "Partner",
  redirect_uris: ["https://rp.example/cb"],
  backchannel_logout_uri: uri,
});

function expectDetail(response: LightMyRequestResponse, status: number, detail: string, uri: string) {
  assert.equal(response.statusCode, status, `${uri}: ${response.body}`);
  assert.deepEqual(response.json(), { detail }, uri);
}

function expectRegistrationRefused(response: LightMyRequestResponse, detail: string, uri: string) {
  assert.equal(response.statusCode, 400, `${uri}: ${response.body}`);
  assert.deepEqual(response.json(), { error: "invalid_client_metadata", error_description: detail, detail }, uri);
}

async function adminWorld(t: TestContext, refusePrivateAddresses: boolean) {
  const dns = steeredDns();
  const built = await buildTestApp(
    t,
    {
      webhooks: webhooks(refusePrivateAddresses),
      dynamicRegistration: {
        initialAccessToken: REGISTRATION_TOKEN,
        grantTypes: ["authorization_code", "refresh_token"],
        scopes: ["openid", "email"],
      },
    },
    { resolve: dns.resolve },
  );
  const admin = await signedInUser(built.app, built.store, "admin@example.com", PASSWORD, true);
  const call = caller(built.app);
  const create = (uri: string) => call("POST", "/clients", admin.token, metadata(uri));
  const register = (uri: string) =>
    built.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: bearer(REGISTRATION_TOKEN),
      payload: metadata(uri),
    });
  return { ...built, dns, admin, call, create, register };
}

describe("a backchannel_logout_uri at registration", () => {
  test("WEBHOOK_REFUSE_PRIVATE_ADDRESSES on (the default): an admin's client gets https to a public address only", async (t) => {
    const { create, call, admin, dns } = await adminWorld(t, true);
    for (const uri of PRIVATE_URIS) expectDetail(await create(uri), 422, PRIVATE, uri);
    expectDetail(await create("http://127.0.0.1:9/logout"), 422, PRIVATE, "http loopback");
    expectDetail(await create(`http://${PUBLIC}/logout`), 422, NOT_HTTPS, "http public");
    expectDetail(await create("http://public.example/logout"), 422, NOT_HTTPS, "http public name");
    expectDetail(await create("https://nowhere.example/logout"), 422, UNRESOLVABLE, "unresolvable");
    expectDetail(await create(`https://user:secret@${PUBLIC}/logout`), 422, CREDENTIALS, "credentials");
    assert.ok(dns.asked.includes("localhost") && dns.asked.includes("metadata.example"));
    assert.deepEqual((await call("GET", "/clients", admin.token)).json().items, []);
    // https to a public address, by literal or by name, is registered.
    for (const uri of [`https://${PUBLIC}/logout`, "https://public.example/logout"]) {
      const created = await create(uri);
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.json().backchannel_logout_uri, uri);
    }
    // A change is checked as a registration is.
    const id = (await create("https://public.example/logout")).json().client_id;
    expectDetail(
      await call("PATCH", `/clients/${id}`, admin.token, { backchannel_logout_uri: "https://10.0.0.1/x" }),
      422,
      PRIVATE,
      "PATCH",
    );
    expectDetail(await call("PUT", `/clients/${id}`, admin.token, metadata("https://[::1]/x")), 422, PRIVATE, "PUT");
    const renamed = await call("PATCH", `/clients/${id}`, admin.token, { client_name: "Renamed" });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().backchannel_logout_uri, "https://public.example/logout");
  });

  test("WEBHOOK_REFUSE_PRIVATE_ADDRESSES off: an admin's client may reach private addresses, plain http only on loopback", async (t) => {
    const { create } = await adminWorld(t, false);
    for (const uri of [
      "http://127.0.0.1:9/logout",
      "http://localhost:9/logout",
      "http://[::1]:9/logout",
      "https://10.0.0.1/logout",
      "https://metadata.example/logout",
      `https://${PUBLIC}/logout`,
    ]) {
      const created = await create(uri);
      assert.equal(created.statusCode, 201, `${uri}: ${created.body}`);
    }
    for (const uri of [
      `http://${PUBLIC}/logout`,
      "http://public.example/logout",
      "http://10.0.0.1/logout",
      "http://169.254.169.254/latest",
    ])
      expectDetail(await create(uri), 422, NOT_HTTPS, uri);
  });

  test("a dynamically registered client never gets a private address or plain http, even with the setting off", async (t) => {
    const { register, call, admin } = await adminWorld(t, false);
    for (const uri of [...PRIVATE_URIS, "https://nowhere.example/logout", "http://127.0.0.1:9/logout"])
      expectRegistrationRefused(await register(uri), DYNAMIC_PRIVATE, uri);
    for (const uri of [`http://${PUBLIC}/logout`, "http://public.example/logout"])
      expectRegistrationRefused(await register(uri), DYNAMIC_NOT_HTTPS, uri);
    assert.deepEqual((await call("GET", "/clients", admin.token)).json().items, []);
    const registered = await register("https://public.example/logout");
    assert.equal(registered.statusCode, 201, registered.body);
    // Nor may an admin give it one later.
    const id = registered.json().client_id;
    for (const uri of ["http://127.0.0.1:9/logout", "https://10.0.0.1/logout"])
      expectDetail(
        await call("PATCH", `/clients/${id}`, admin.token, { backchannel_logout_uri: uri }),
        422,
        DYNAMIC_PRIVATE,
        uri,
      );
  });

  test("the CLI applies the same rules (the setting on by default)", async (t) => {
    const created = await run(
      [CLI, "clients", "create", JSON.stringify(metadata("https://169.254.169.254/latest/meta-data"))],
      { cwd: scratchDir(t) },
    );
    assert.equal(created.code, 1, created.stdout);
    assert.equal(created.stderr, `error: ${PRIVATE}\n`);
  });
});

describe("the outbound block list (WEBHOOK_REFUSE_PRIVATE_ADDRESSES on)", () => {
  test("webhooks refuse the IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96) forms", async (t) => {
    const { call, admin } = await adminWorld(t, true);
    for (const url of [
      "http://[::7f00:1]/x",
      "http://[::a9fe:a9fe]/x",
      "http://[::808:808]/x",
      "http://[::ffff:0:7f00:1]/x",
      "http://[::ffff:0:a9fe:a9fe]/x",
      "http://[::ffff:0:808:808]/x",
    ])
      expectDetail(
        await call("POST", "/webhooks", admin.token, { url, event_types: ["user.created"] }),
        422,
        "url: the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES is on)",
        url,
      );
  });
});

/** A plain receiver on loopback: counts what arrives. */
async function receiver(t: TestContext) {
  const received: string[] = [];
  const server = createServer((request, response) => {
    request.resume().on("end", () => {
      received.push(request.url ?? "");
      response.writeHead(200).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { received, port: (server.address() as AddressInfo).port };
}

/** Ends the user's browser session (the sign-out of the login), then waits for each logout's first outcome. */
async function signOutAndAwaitAttempts(setup: Setup, count: number) {
  const revoked = await setup.app.inject({
    method: "POST",
    url: "/auth/revoke",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({ token: setup.own.refresh_token }).toString(),
  });
  assert.equal(revoked.statusCode, 200);
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await setup.store.listBackchannelLogouts({ limit: 10 });
    // attempts counts a claim; the outcome is written when the attempt ends.
    if (rows.length === count && rows.every((row) => row.status !== "pending" || row.lastError !== null)) return rows;
    if (Date.now() > deadline) throw new Error(`no attempt recorded: ${JSON.stringify(rows)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A dynamically registered client signed in to by the user (consent given): its id. */
async function dynamicClientSession(setup: Setup, backchannelLogoutUri: string): Promise<string> {
  const redirect = "https://rp.example/dynamic/callback";
  const registered = await setup.app.inject({
    method: "POST",
    url: "/auth/register",
    headers: bearer(REGISTRATION_TOKEN),
    payload: { client_name: "Dynamic", redirect_uris: [redirect], backchannel_logout_uri: backchannelLogoutUri },
  });
  assert.equal(registered.statusCode, 201, registered.body);
  const { client_id: id, client_secret: secret } = registered.json();
  await setup.store.grantConsent(setup.user.id, id, "openid email", new Date().toISOString());
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: id,
    redirect_uri: redirect,
    scope: "openid email",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    state: "s",
  });
  const answer = await setup.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie: setup.cookie } });
  assert.equal(answer.statusCode, 303, answer.body);
  const code = new URL(answer.headers.location as string).searchParams.get("code") as string;
  const tokens = await requestToken(
    setup.app,
    { grant_type: "authorization_code", code, redirect_uri: redirect, code_verifier: pkce.verifier },
    { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` },
  );
  assert.equal(tokens.statusCode, 200, tokens.body);
  return id;
}

async function deliveryWorld(t: TestContext, refusePrivateAddresses: boolean) {
  const dns = steeredDns();
  const setup = await setUp(
    t,
    {
      webhooks: webhooks(refusePrivateAddresses),
      dynamicRegistration: {
        initialAccessToken: REGISTRATION_TOKEN,
        grantTypes: ["authorization_code", "refresh_token"],
        scopes: ["openid", "email"],
      },
    },
    { resolve: dns.resolve },
  );
  const admin = await signedInUser(setup.app, setup.store, "admin@example.com", PASSWORD, true);
  const setPartnerUri = (uri: string) =>
    caller(setup.app)("PATCH", `/clients/${setup.clients.partner.id}`, admin.token, { backchannel_logout_uri: uri });
  return { setup, dns, setPartnerUri };
}

const outcome = (rows: { clientId: string; status: string; lastError: string | null }[]) =>
  rows.map((row) => [row.clientId, row.status, row.lastError]).sort();

describe("a backchannel_logout_uri at delivery", () => {
  test("DNS rebinding: a host public at registration and loopback at delivery is refused on the address looked up", async (t) => {
    const { setup, dns, setPartnerUri } = await deliveryWorld(t, true);
    dns.table["rebound.example"] = [PUBLIC];
    assert.equal((await setPartnerUri("https://rebound.example/logout")).statusCode, 200);
    await clientTokens(setup, "partner");
    dns.table["rebound.example"] = ["127.0.0.1"];
    dns.asked.length = 0;
    const rows = await signOutAndAwaitAttempts(setup, 1);
    assert.deepEqual(outcome(rows), [
      [setup.clients.partner.id, "pending", "the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES)"],
    ]);
    assert.deepEqual(dns.asked, ["rebound.example"]);
  });

  test("a dynamically registered client is refused private addresses at delivery, with the setting off", async (t) => {
    const { setup, dns } = await deliveryWorld(t, false);
    const listening = await receiver(t);
    // One public at registration, loopback at delivery; one changed behind the API to a loopback receiver.
    dns.table["rebound.example"] = [PUBLIC];
    const rebound = await dynamicClientSession(setup, "https://rebound.example/logout");
    const behind = await dynamicClientSession(setup, "https://public.example/logout");
    await setup.store.updateClient(behind, { backchannelLogoutUri: `http://127.0.0.1:${listening.port}/logout` });
    dns.table["rebound.example"] = ["127.0.0.1"];
    const rows = await signOutAndAwaitAttempts(setup, 2);
    const refusal = "the host has no public address (a dynamically registered client)";
    assert.deepEqual(
      outcome(rows),
      [
        [rebound, "pending", refusal],
        [behind, "pending", refusal],
      ].sort(),
    );
    assert.deepEqual(listening.received, []);
  });

  test("an admin's client with the setting off: plain http reaches a loopback receiver, and nothing else", async (t) => {
    const { setup, dns, setPartnerUri } = await deliveryWorld(t, false);
    const listening = await receiver(t);
    dns.table["receiver.test"] = ["127.0.0.1"];
    assert.equal((await setPartnerUri(`http://receiver.test:${listening.port}/logout`)).statusCode, 200);
    await clientTokens(setup, "partner");
    // A URI stored before these rules (behind the API): plain http to a public address.
    await setup.store.updateClient(setup.clients.post.id, { backchannelLogoutUri: "http://public.example:9/logout" });
    await clientTokens(setup, "post");
    const rows = await signOutAndAwaitAttempts(setup, 2);
    assert.deepEqual(
      outcome(rows),
      [
        [setup.clients.partner.id, "sent", null],
        [setup.clients.post.id, "pending", "plain http goes only to a loopback address: use https"],
      ].sort(),
    );
    assert.deepEqual(listening.received, ["/logout"]);
  });
});

describe("migration 80 on a database with logouts queued before it", () => {
  const before = migrations.filter((migration) => migration.version < 80);
  const ADMIN_CLIENT = "01900000-0000-7000-8000-00000000000a";
  const DYNAMIC_CLIENT = "01900000-0000-7000-8000-00000000000d";
  const GONE_CLIENT = "01900000-0000-7000-8000-0000000000ff";
  const at = "2026-01-01T00:00:00.000Z";
  /** Two clients, and a pending logout for each and for a client deleted since: the rows and their values. */
  const seed: [string, unknown[]][] = [
    ...[
      [ADMIN_CLIENT, "admin"],
      [DYNAMIC_CLIENT, "dynamic"],
    ].map(([id, by]): [string, unknown[]] => [
      `INSERT INTO oauth_clients (id, name, grant_types, response_types, token_endpoint_auth_method, scope,
         registered_by, created_at, updated_at) VALUES ($1, 'c', '["authorization_code"]', '["code"]', 'none', '', $2, $3, $3)`,
      [id, by, at],
    ]),
    ...[ADMIN_CLIENT, DYNAMIC_CLIENT, GONE_CLIENT].map((clientId, i): [string, unknown[]] => [
      `INSERT INTO backchannel_logouts (id, client_id, user_id, sid, uri, next_attempt_at, created_at)
         VALUES ($1, $2, $3, 'sid', 'https://rp.example/logout', $4, $4)`,
      [`01900000-0000-7000-8000-00000000010${i}`, clientId, "01900000-0000-7000-8000-000000000001", at],
    ]),
  ];
  const expected = [
    [ADMIN_CLIENT, "admin"],
    [DYNAMIC_CLIENT, "dynamic"],
    [GONE_CLIENT, "dynamic"],
  ];
  const found = (rows: { clientId: string; registeredBy: string }[]) =>
    rows.map((row) => [row.clientId, row.registeredBy]).sort();

  test("SQLite: each takes its client's registration; a deleted client's counts as dynamic", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "migration-80-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "users.db");
    const db = new DatabaseSync(file);
    db.exec(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT",
    );
    for (const migration of before) {
      db.exec(migration.sqlite);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(migration.version, migration.name, at);
    }
    for (const [sql, params] of seed)
      db.prepare(sql.replace(/\$\d/g, (n) => `?${n.slice(1)}`)).run(...(params as string[]));
    db.close();
    const store = openSqliteStore(file);
    t.after(() => store.close());
    assert.deepEqual(found(await store.listBackchannelLogouts({ limit: 10 })), expected);
  });

  test("PostgreSQL: the same", { skip: process.env.POSTGRES_URL ? false : "needs POSTGRES_URL" }, async (t) => {
    const url = process.env.POSTGRES_URL as string;
    const schema = `migration80_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    t.after(async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    await admin.query(`CREATE SCHEMA ${schema}; SET search_path = ${schema}`);
    await admin.query(
      "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)",
    );
    for (const migration of before) {
      await admin.query(migration.postgres);
      await admin.query("INSERT INTO schema_migrations VALUES ($1, $2, now())", [migration.version, migration.name]);
    }
    for (const [sql, params] of seed) await admin.query(sql, params);
    const store = await openPostgresStore({ url, schema, poolSize: 1, timeoutMs: 10_000 });
    t.after(() => store.close());
    assert.deepEqual(found(await store.listBackchannelLogouts({ limit: 10 })), expected);
  });
});
