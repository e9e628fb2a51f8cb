// `npm run cli -- clients ...`: create from RFC 7591 JSON (the secret printed once), list, show
// (never the secret), rotate-secret with a grace period, delete; clear failures with exit codes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { hashClientSecret } from "../src/oidc/clients.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { CLI, run, scratchDir } from "./process.ts";

describe("npm run cli -- clients", () => {
  test("create, list, show, rotate-secret, delete", async (t) => {
    const cwd = scratchDir(t);
    const metadata = { client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:read" };
    const created = await run([CLI, "clients", "create", JSON.stringify(metadata)], { cwd });
    assert.equal(created.code, 0, created.stderr);
    const client = JSON.parse(created.stdout);
    assert.deepEqual(client, {
      client_id: client.client_id,
      client_name: "Billing",
      redirect_uris: [],
      post_logout_redirect_uris: [],
      grant_types: ["client_credentials"],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      scope: "invoices:read",
      backchannel_logout_uri: null,
      first_party: false,
      resources: [],
      resource_server: false,
      require_pushed_authorization_requests: false,
      dpop_bound_access_tokens: false,
      client_id_issued_at: client.client_id_issued_at,
      client_secret_expires_at: 0,
      previous_secret_expires_at: null,
      registered_by: "admin",
      client_secret: client.client_secret,
    });
    assert.match(client.client_secret, /^[A-Za-z0-9_-]{43}$/);

    const listed = await run([CLI, "clients", "list"], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trim().split("\n");
    assert.equal(lines[0], "client_id\tclient_name\ttoken_endpoint_auth_method\tgrant_types\tcreated_at");
    assert.match(
      lines[1] ?? "",
      new RegExp(`^${client.client_id}\\tBilling\\tclient_secret_basic\\tclient_credentials\\t\\d{4}-`),
    );

    const shown = await run([CLI, "clients", "show", client.client_id], { cwd });
    assert.equal(shown.code, 0, shown.stderr);
    const { client_secret: _once, ...withoutSecret } = client;
    assert.deepEqual(JSON.parse(shown.stdout), withoutSecret);
    assert.ok(!shown.stdout.includes(client.client_secret));

    const rotated = await run([CLI, "clients", "rotate-secret", client.client_id, "--grace-seconds", "600"], { cwd });
    assert.equal(rotated.code, 0, rotated.stderr);
    const after = JSON.parse(rotated.stdout);
    assert.notEqual(after.client_secret, client.client_secret);
    const store = openSqliteStore(join(cwd, "data", "users.db"));
    t.after(() => store.close());
    const stored = await store.findClient(client.client_id);
    assert.equal(stored?.secretHash, hashClientSecret(after.client_secret));
    assert.equal(stored?.previousSecretHash, hashClientSecret(client.client_secret));
    assert.ok(Date.parse(stored?.previousSecretExpiresAt ?? "") > Date.now() + 590_000);

    const deleted = await run([CLI, "clients", "delete", client.client_id], { cwd });
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(deleted.stdout, `deleted client ${client.client_id}\n`);
    assert.equal(await store.findClient(client.client_id), undefined);
  });

  test("failures: bad JSON or metadata, unknown ids, a public client's secret (exit 1); bad usage (exit 2)", async (t) => {
    const cwd = scratchDir(t);
    const spa = await run(
      [
        CLI,
        "clients",
        "create",
        '{"client_name":"SPA","token_endpoint_auth_method":"none","redirect_uris":["https://spa.example/cb"]}',
      ],
      { cwd },
    );
    assert.equal(spa.code, 0, spa.stderr);
    const spaId = JSON.parse(spa.stdout).client_id as string;
    assert.equal(JSON.parse(spa.stdout).client_secret, undefined);
    const unknown = "0190a000-0000-7000-8000-000000000000";
    const cases: [string[], number, RegExp][] = [
      [["clients", "create", "{not json"], 1, /^error: the client metadata is not JSON\n$/],
      [
        ["clients", "create", '{"client_name":"x","redirect_uris":["http://a.example/cb"]}'],
        1,
        /^error: redirect_uris: http is allowed only on a loopback host/,
      ],
      [
        ["clients", "create", '{"client_name":"x","secret":"mine"}'],
        1,
        /^error: metadata must not have additional properties\n$/,
      ],
      [["clients", "show", unknown], 1, new RegExp(`^error: no client with the id ${unknown}\\n$`)],
      [["clients", "show", "grafana"], 1, /^error: no client with the id grafana\n$/],
      [["clients", "delete", unknown], 1, new RegExp(`^error: no client with the id ${unknown}\\n$`)],
      [["clients", "rotate-secret", spaId], 1, new RegExp(`^error: ${spaId} is a public client: it has no secret\\n$`)],
      [
        ["clients", "rotate-secret", spaId, "--grace-seconds", "9999999"],
        2,
        /^error: --grace-seconds takes a whole number from 0 to 2592000\n/,
      ],
      [["clients", "show"], 2, /^error: clients show takes exactly one client_id\n/],
      [["clients", "frobnicate"], 2, /^error: unknown command: clients frobnicate\n/],
    ];
    for (const [args, code, stderr] of cases) {
      const result = await run([CLI, ...args], { cwd });
      assert.equal(result.code, code, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, stderr, args.join(" "));
    }
  });
});
