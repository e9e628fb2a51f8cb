// Sign-in with GitHub (issue 25), in process against the fake GitHub server
// (test/upstream/fixture.ts) over HTTP: each way GitHub fails (its token
// endpoint's error answered as GitHub does, with 200 and `error`; the user
// API's 401 and 500; no verified primary address; an answer, or a body,
// slower than UPSTREAM_TIMEOUT_MS) ends on a 4xx page with one sentence and
// creates nothing. Upstream tokens are not stored by default; with
// UPSTREAM_KEEP_TOKENS they are stored sealed (no token in clear in any row,
// nor in the SQLite file) and go with the identity when it is unlinked.
// Sign-ups through a provider count against the sign-up limit of POST /users.
// Both backends (TEST_BACKEND=postgres).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TOO_MANY_SIGNUPS } from "../src/auth/rate-limits.ts";
import { PROVIDER_REFUSED, PROVIDER_UNREACHABLE } from "../src/upstream/relying-party.ts";
import { NO_EMAIL } from "../src/upstream/sign-in.ts";
import { bearer, createUser, loginToken, testConfig } from "./helpers.ts";
import { rawStore } from "./raw-store.ts";
import {
  assertUpstreamPage as assertPage,
  octo,
  startGithubService as setUp,
  GITHUB_TIMEOUT_MS as TIMEOUT_MS,
} from "./upstream/github-service.ts";

describe("GitHub failing", () => {
  for (const [fault, detail] of [
    ["token-error", PROVIDER_REFUSED],
    ["user-401", PROVIDER_REFUSED],
    ["user-500", PROVIDER_UNREACHABLE],
    ["slow-token", PROVIDER_UNREACHABLE],
    ["slow-user-body", PROVIDER_UNREACHABLE],
  ] as const) {
    test(`${fault}: a 400 page in time, nothing created`, async (t) => {
      const s = await setUp(t);
      s.setFault(fault);
      const { callback, took } = await s.signIn();
      assertPage(callback, 400, detail);
      assert.ok(took < TIMEOUT_MS + 1500, `answered after ${took} ms`);
      assert.deepEqual(await s.users(), []);
      // GitHub working again: the same browser signs in.
      s.setFault("none");
      assert.match((await s.signIn()).callback.headers.location as string, /^\/sign-in#upstream=[\w-]{43}$/);
      assert.deepEqual(await s.users(), ["octo@example.com"]);
    });
  }

  test("no verified primary address (unverified primary, or none at all): a 400 page, nothing created", async (t) => {
    const s = await setUp(t);
    s.setUser({
      ...octo(),
      emails: [
        { email: "octo@example.com", primary: true, verified: false },
        { email: "other@example.com", primary: false, verified: true },
      ],
    });
    assertPage((await s.signIn()).callback, 400, NO_EMAIL);
    s.setUser({ ...octo(), emails: [] });
    assertPage((await s.signIn()).callback, 400, NO_EMAIL);
    assert.deepEqual(await s.users(), []);
    // An unverified primary address never links to the account that has it either.
    const owner = await createUser(s.store, "octo@example.com", "correct horse battery");
    s.setUser({ ...octo(), emails: [{ email: "octo@example.com", primary: true, verified: false }] });
    assertPage((await s.signIn()).callback, 400, NO_EMAIL);
    assert.deepEqual(await s.store.listIdentities(owner.id), []);
  });
});

describe("upstream tokens at rest", () => {
  test("not stored by default", async (t) => {
    const raw = await rawStore(t, Date.now);
    const s = await setUp(t, { store: raw.store });
    assert.match((await s.signIn()).callback.headers.location as string, /^\/sign-in#upstream=/);
    const dump = await raw.dump();
    assert.doesNotMatch(dump, /gho_/);
    assert.match(dump, /"sealed_tokens":null/);
    assert.doesNotMatch(dump, /"sealed_tokens":"/);
    for (const file of raw.files()) assert.equal(file.includes("gho_"), false);
  });

  test("with UPSTREAM_KEEP_TOKENS: sealed (never in clear), renewed at each sign-in, deleted on unlink", async (t) => {
    const raw = await rawStore(t, Date.now);
    const s = await setUp(t, { store: raw.store, upstream: { keepTokens: true } });
    const owner = await createUser(s.store, "octo@example.com", "correct horse battery");
    const token = await loginToken(s.app, "octo@example.com", "correct horse battery");
    // Linked from the security page (a signed-in user), then signed in with twice.
    const started = await s.app.inject({
      method: "POST",
      url: "/me/identities",
      headers: bearer(token),
      payload: { provider: "github" },
    });
    assert.equal(started.statusCode, 200, started.body);
    const cookie = String(started.headers["set-cookie"]).split(";")[0] as string;
    const atGithub = await fetch(started.json().location, { redirect: "manual" });
    const back = new URL(atGithub.headers.get("location") as string);
    const linked = await s.app.inject({ method: "GET", url: `${back.pathname}${back.search}`, headers: { cookie } });
    assert.equal(linked.headers.location, "/account/security#linked");
    const sealed = async () =>
      (JSON.parse(await raw.dump()) as Record<string, unknown>[])
        .filter((row) => row.subject === "4242" && "last_used_at" in row)
        .map((row) => row.sealed_tokens);
    const [first] = await sealed();
    assert.match(String(first), /^[\w-]{60,}$/);
    await s.signIn();
    const [second] = await sealed();
    assert.match(String(second), /^[\w-]{60,}$/);
    assert.notEqual(second, first, "a sign-in keeps its new tokens");
    const dump = await raw.dump();
    assert.doesNotMatch(dump, /gho_/);
    for (const file of raw.files()) assert.equal(file.includes("gho_"), false);

    const [identity] = await s.store.listIdentities(owner.id);
    const unlink = await s.app.inject({
      method: "DELETE",
      url: `/me/identities/${identity!.id}`,
      headers: bearer(token),
    });
    assert.equal(unlink.statusCode, 204);
    assert.deepEqual(await sealed(), []);
  });
});

describe("sign-ups through a provider and the sign-up limit", () => {
  test("past the limit of POST /users: a 429 page with Retry-After, nothing created; known identities still sign in", async (t) => {
    const base = testConfig();
    const s = await setUp(t, { config: { rateLimit: { ...base.rateLimit, enabled: true, signupPerAddress: 2 } } });
    // One sign-up through POST /users and one through GitHub use the address's two.
    const created = await s.app.inject({
      method: "POST",
      url: "/users",
      payload: { email: "ada@example.com", password: "correct horse battery" },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.match((await s.signIn()).callback.headers.location as string, /^\/sign-in#upstream=/);
    s.setUser(octo(4343, "hubot@example.com"));
    const refused = (await s.signIn()).callback;
    assertPage(refused, 429, TOO_MANY_SIGNUPS);
    assert.match(String(refused.headers["retry-after"]), /^\d+$/);
    assert.ok(Number(refused.headers["retry-after"]) <= 900);
    assert.deepEqual((await s.users()).sort(), ["ada@example.com", "octo@example.com"]);
    const api = await s.app.inject({
      method: "POST",
      url: "/users",
      payload: { email: "bob@example.com", password: "correct horse battery" },
    });
    assert.equal(api.statusCode, 429);
    assert.deepEqual(api.json(), { detail: TOO_MANY_SIGNUPS });
    // An account that exists is no sign-up: its identity signs in.
    s.setUser(octo());
    assert.match((await s.signIn()).callback.headers.location as string, /^\/sign-in#upstream=/);
  });
});
