// The attacker's view of issue 35's admin users routes: no token is 401 with `WWW-Authenticate: Bearer`,
// a signed-in non-admin is 403 on every route (and nothing changes), an admin naming an unknown user or
// an unknown session, passkey, app or identity of a real user is 404, bad ids and bad queries are 422
// (never a 500), every answer is `Cache-Control: no-store`, and no answer carries a hash, a secret or a
// token. The unlink of an upstream identity refuses the account's last way to sign in (409).
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import type { Config } from "../../src/config.ts";
import { NOT_AUTHENTICATED, NOT_ENOUGH_PRIVILEGES, USER_NOT_FOUND } from "../../src/errors.ts";
import { LAST_WAY_TO_SIGN_IN } from "../../src/upstream/routes.ts";
import { buildTestApp, caller, requestToken, signedInUser, TEST_SECRET } from "../helpers.ts";

const PASSWORD = "correct horse battery";
const MISSING = "01900000-0000-7000-8000-000000000000";
const UPSTREAM = {
  providers: [
    {
      kind: "oidc" as const,
      name: "corp",
      label: "Corp",
      issuer: "https://idp.invalid",
      clientId: "service",
      clientSecret: "upstream-client-secret-value",
      scopes: "openid email",
      allowedDomains: [],
    },
  ],
  autoLink: false,
  keepTokens: false,
  timeoutMs: 1000,
};

async function world(t: TestContext, config: Partial<Config> = {}) {
  const built = await buildTestApp(t, { upstream: UPSTREAM, ...config });
  const admin = await signedInUser(built.app, built.store, "root@example.com", PASSWORD, true);
  const mallory = await signedInUser(built.app, built.store, "mallory@example.com", PASSWORD);
  const victim = await signedInUser(built.app, built.store, "victim@example.com", PASSWORD);
  return { ...built, admin, mallory, victim, call: caller(built.app) };
}

/** Every new route, for a user id (and an id of the thing under it, when it has one). */
function routes(userId: string, childId = MISSING): [method: string, url: string][] {
  return [
    ["GET", `/users/${userId}/sessions`],
    ["DELETE", `/users/${userId}/sessions/${childId}`],
    ["DELETE", `/users/${userId}/sessions`],
    ["GET", `/users/${userId}/passkeys`],
    ["DELETE", `/users/${userId}/passkeys/${childId}`],
    ["GET", `/users/${userId}/apps`],
    ["DELETE", `/users/${userId}/apps/some-client`],
    ["DELETE", `/users/${userId}/identities/${childId}`],
    ["POST", `/users/${userId}/password-reset`],
  ];
}

function assertError(response: LightMyRequestResponse, status: number, detail?: string): void {
  assert.equal(response.statusCode, status, `${response.statusCode} ${response.body}`);
  assert.deepEqual(Object.keys(response.json()), ["detail"]);
  if (detail !== undefined) assert.equal(response.json().detail, detail);
  assert.equal(response.headers["cache-control"], "no-store");
  if (status === 401) assert.equal(response.headers["www-authenticate"], "Bearer");
}

describe("admin users routes: who may call them", () => {
  test("no token: 401 with WWW-Authenticate: Bearer, on every route and the new list filters", async (t) => {
    const w = await world(t);
    for (const [method, url] of [...routes(w.victim.id), ["GET", "/users?email_prefix=v"] as [string, string]]) {
      assertError(await w.call(method, url), 401, NOT_AUTHENTICATED);
      assertError(await w.call(method, url, "not-a-token"), 401);
    }
  });

  test("a non-admin: 403 on every route, about anyone (itself included), and nothing ends", async (t) => {
    const w = await world(t);
    const login = await requestToken(w.app, { username: "victim@example.com", password: PASSWORD });
    const refreshToken = login.json().refresh_token as string;
    for (const target of [w.victim.id, w.mallory.id, MISSING]) {
      for (const [method, url] of routes(target)) {
        assertError(await w.call(method, url, w.mallory.token), 403, NOT_ENOUGH_PRIVILEGES);
      }
    }
    assertError(await w.call("GET", "/users?has_second_factor=true", w.mallory.token), 403, NOT_ENOUGH_PRIVILEGES);
    const verify = await w.call("PATCH", `/users/${w.mallory.id}`, w.mallory.token, { email_verified: true });
    assert.equal(verify.statusCode, 403);
    assert.equal((await w.store.findById(w.mallory.id))?.emailVerifiedAt, null);
    const refresh = await requestToken(w.app, { grant_type: "refresh_token", refresh_token: refreshToken });
    assert.equal(refresh.statusCode, 200, "the victim's session is untouched");
    assert.equal((await w.call("GET", "/me", w.victim.token)).statusCode, 200);
    const events = await w.store.listEvents({ userId: w.victim.id, limit: 100 });
    assert.deepEqual(
      events.filter((event) => event.actorId),
      [],
    );
  });

  test("an admin: 404 for an unknown user on every route, and for an unknown child of a real user", async (t) => {
    const w = await world(t);
    for (const [method, url] of routes(MISSING)) {
      // The user comes first: an unknown user is the users resource's 404 whatever the path names under it.
      assertError(await w.call(method, url, w.admin.token), 404, USER_NOT_FOUND);
    }
    const children = routes(w.victim.id).filter(([, url]) => /\/(sessions|passkeys|apps|identities)\/./.test(url));
    assert.equal(children.length, 4);
    const details = [];
    for (const [method, url] of children) {
      const response = await w.call(method, url, w.admin.token);
      assertError(response, 404);
      details.push(response.json().detail);
    }
    assert.deepEqual(details, [
      "Session not found",
      "Passkey not found",
      "No application has access to your account under this id",
      "Identity not found",
    ]);
  });

  test("bad ids and bad queries: 422 in the error shape, never a 500", async (t) => {
    const w = await world(t);
    const badPaths: [string, string][] = [
      ["GET", "/users/not-a-uuid/sessions"],
      ["DELETE", `/users/${w.victim.id}/sessions/not-a-uuid`],
      ["DELETE", "/users/1/sessions"],
      ["GET", "/users/%00/passkeys"],
      ["DELETE", `/users/${w.victim.id}/passkeys/${"9".repeat(90)}`],
      ["GET", "/users/x/apps"],
      ["DELETE", `/users/${w.victim.id}/apps/a%00b`],
      ["DELETE", `/users/${w.victim.id}/identities/zz`],
      ["POST", "/users/zz/password-reset"],
      ["GET", `/users/${w.victim.id}/sessions?limit=0`],
      ["GET", `/users/${w.victim.id}/sessions?limit=1000000000000`],
      ["GET", `/users/${w.victim.id}/sessions?cursor=bad`],
      ["GET", "/users?email_prefix=a%00b"],
      ["GET", `/users?email_prefix=${"a".repeat(300)}`],
      ["GET", `/users?name=${"n".repeat(201)}`],
      ["GET", "/users?name=%0A"],
      ["GET", "/users?is_verified=maybe"],
      ["GET", "/users?has_second_factor=2"],
      ["GET", "/users?upstream_provider="],
      ["GET", "/users?upstream_provider=a%00"],
      ["GET", "/users?cursor=bad&email_prefix=a"],
      ["GET", "/users?unknown=1"],
    ];
    for (const [method, url] of badPaths) {
      const response = await w.call(method, url, w.admin.token);
      assertError(response, 422);
    }
    const patch = await w.call("PATCH", `/users/${w.victim.id}`, w.admin.token, { email_verified: "yes" });
    assertError(patch, 422);
    // Odd but valid input finds nothing and breaks nothing.
    for (const query of [
      "email_prefix=%25",
      "email_prefix=%F0%9F%98%80",
      "name=%5C",
      "name=_",
      "upstream_provider=%27",
    ]) {
      const response = await w.call("GET", `/users?${query}`, w.admin.token);
      assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
      assert.deepEqual(response.json().items, []);
    }
  });
});

describe("admin users routes: what the answers never carry", () => {
  test("no hash, secret or token in any answer of the new routes", async (t) => {
    const w = await world(t);
    const login = await requestToken(w.app, { username: "victim@example.com", password: PASSWORD });
    const { refresh_token, access_token } = login.json() as { refresh_token: string; access_token: string };
    const victim = await w.store.findById(w.victim.id);
    assert.ok(victim);
    const bodies: string[] = [];
    for (const [method, url] of routes(w.victim.id).filter(([method]) => method === "GET")) {
      const response = await w.call(method, url, w.admin.token);
      assert.equal(response.statusCode, 200);
      bodies.push(response.body);
    }
    bodies.push((await w.call("GET", "/users?email_prefix=victim", w.admin.token)).body);
    bodies.push((await w.call("POST", `/users/${w.victim.id}/password-reset`, w.admin.token)).body);
    const secrets = [
      victim.hashedPassword,
      victim.credentialStamp,
      refresh_token,
      refresh_token.split(".")[2] as string,
      access_token,
      TEST_SECRET,
      "upstream-client-secret-value",
    ];
    for (const body of bodies) {
      for (const secret of secrets) assert.ok(!body.includes(secret), `an answer carries a secret: ${body}`);
      assert.doesNotMatch(body, /hashed_password|argon2|token_hash|public_key|credential_stamp/);
    }
  });
});

describe("admin unlink of an upstream identity", () => {
  test("unlinks with the admin as actor; refuses the last way to sign in (409)", async (t) => {
    const w = await world(t);
    const at = new Date(w.clock.read()).toISOString();
    const identity = (id: string, userId: string, subject: string) => ({
      id,
      userId,
      provider: "corp",
      issuer: "https://idp.invalid",
      subject,
      email: null,
      createdAt: at,
      sealedTokens: null,
    });
    const first = await w.store.linkIdentity(identity("01900000-0000-7000-8000-0000000000a1", w.victim.id, "v1"));
    assert.ok(first);
    const listed = await w.call("GET", `/users/${w.victim.id}/identities`, w.admin.token);
    assert.equal(listed.json().items.length, 1);
    const unlinked = await w.call("DELETE", `/users/${w.victim.id}/identities/${first.id}`, w.admin.token);
    assert.equal(unlinked.statusCode, 204);
    assert.equal(unlinked.body, "");
    assert.deepEqual(await w.store.listIdentities(w.victim.id), []);
    const events = (await w.store.listEvents({ userId: w.victim.id, limit: 100 })).filter((e) => e.actorId);
    assert.deepEqual(
      events.map(({ type, outcome, actorId }) => ({ type, outcome, actorId })),
      [{ type: "upstream", outcome: "unlinked_by_admin:corp", actorId: w.admin.id }],
    );

    // An account made by an upstream sign-in has no password (an empty hash): its only identity stays.
    const upstreamOnly = await w.store.create({ email: "only@example.com", hashedPassword: "" });
    const only = await w.store.linkIdentity(identity("01900000-0000-7000-8000-0000000000a2", upstreamOnly.id, "o1"));
    assert.ok(only);
    const refused = await w.call("DELETE", `/users/${upstreamOnly.id}/identities/${only.id}`, w.admin.token);
    assertError(refused, 409, LAST_WAY_TO_SIGN_IN);
    assert.equal((await w.store.listIdentities(upstreamOnly.id)).length, 1);
  });
});
