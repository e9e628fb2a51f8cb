// Pushed authorization requests (RFC 9126, issue 36) against an attacker:
// request_uris guessed, forged, reused, expired, or presented for another
// client; a push with bad client authentication, or with a request_uri
// inside, or of a request the authorization endpoint would refuse; the
// resolved request's continuation through the sign-in page edited, or its
// seal forged, stripped or expired; the race of two uses at once; a second
// instance on the same store; what a copy of the database gives away; and
// hostile input. Every refusal is the RFC's error (an error page where the
// client cannot safely be told), never a 5xx.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../../src/app.ts";
import { clientMetadata, createClientRegistry } from "../../src/oidc/clients.ts";
import type { UserStore } from "../../src/store/store.ts";
import { bearer, createUser, requestToken, TEST_ISSUER, TestClock, testConfig } from "../helpers.ts";
import { credentials, PASSWORD, REDIRECTS, redeemCode, type Setup, setUp } from "../oidc/client-flow.ts";
import { OIDC_KEY, registerClients } from "../oidc/fixture.ts";
import { authorizeWith, FORM, push, pushed, recordedEvents, requestFields } from "../oidc/par.ts";
import { rawStore } from "../raw-store.ts";

const UNKNOWN = "The request_uri is unknown, expired or already used. Go back to the application.";
const SEAL_BROKEN = "The authorization request has expired or was altered. Go back to the application.";

/** An error page of the authorization endpoint: 400, HTML, no redirect, the words given. */
function assertErrorPage(
  answer: { statusCode: number; headers: Record<string, unknown>; body: string },
  words: string,
) {
  assert.equal(answer.statusCode, 400, answer.body);
  assert.equal(answer.headers.location, undefined);
  assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
  assert.match(answer.body, /This sign-in request cannot be used/);
  assert.ok(answer.body.includes(words), answer.body);
}

function codeOf(answer: { statusCode: number; headers: Record<string, unknown>; body: string }): string {
  assert.equal(answer.statusCode, 303, answer.body);
  const code = new URL(answer.headers.location as string).searchParams.get("code");
  assert.ok(code, answer.headers.location as string);
  return code;
}

/** The OAuth error answer of the push endpoint, whole. */
function assertOAuthError(
  answer: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  status: number,
  error: string,
  description: string,
) {
  assert.equal(answer.statusCode, status);
  assert.match(answer.headers["content-type"] as string, /^application\/json/);
  assert.equal(answer.headers["cache-control"], "no-store");
  assert.deepEqual(answer.json(), { error, error_description: description, detail: description });
}

/** The test's clients on `store`, a user signed in with a browser session: what setUp gives, on a given store. */
async function setUpOn(t: TestContext, store: UserStore, clock: TestClock) {
  const app = await buildApp({ config: testConfig({ oidcSigningKeys: [OIDC_KEY] }), store, clock: clock.read });
  t.after(() => app.close());
  const clients = await registerClients(store, "https://rp.example");
  const user = await createUser(store, "ada@example.com", PASSWORD);
  const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
  const opened = await app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
  await store.grantConsent(user.id, clients.partner.id, "openid email", new Date().toISOString());
  return { app, store, clock, clients, user, cookie } as unknown as Setup;
}

describe("request_uri at the authorization endpoint", () => {
  test("unknown, malformed, reused, expired: an error page, audited", async (t) => {
    const setup = await setUp(t);
    const events = recordedEvents(setup.store);
    const partner = setup.clients.partner.id;
    for (const requestUri of [
      `urn:ietf:params:oauth:request_uri:${"A".repeat(43)}`,
      "urn:ietf:params:oauth:request_uri:short",
      "https://evil.example/request.jwt",
      `urn:ietf:params:oauth:request_uri:${"A".repeat(5000)}`,
    ]) {
      const answer = await setup.app.inject({
        url: authorizeWith(partner, requestUri),
        headers: { cookie: setup.cookie },
      });
      assertErrorPage(answer, UNKNOWN);
    }
    const requestUri = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    codeOf(await setup.app.inject({ url: authorizeWith(partner, requestUri), headers: { cookie: setup.cookie } }));
    assertErrorPage(
      await setup.app.inject({ url: authorizeWith(partner, requestUri), headers: { cookie: setup.cookie } }),
      UNKNOWN,
    );
    const late = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    setup.clock.advanceSeconds(60);
    assertErrorPage(
      await setup.app.inject({ url: authorizeWith(partner, late), headers: { cookie: setup.cookie } }),
      UNKNOWN,
    );
    assert.deepEqual(
      events.filter((event) => event.outcome.startsWith("par_")).map((event) => event.outcome),
      [...Array(4).fill("par_refused"), "par_pushed", "par_used", "par_refused", "par_pushed", "par_refused"],
    );
  });

  test("another client's request_uri is refused and not spent: its own client still uses it", async (t) => {
    const setup = await setUp(t);
    const requestUri = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    assertErrorPage(
      await setup.app.inject({
        url: authorizeWith(setup.clients.spa.id, requestUri),
        headers: { cookie: setup.cookie },
      }),
      UNKNOWN,
    );
    assertErrorPage(
      await setup.app.inject({ url: authorizeWith("no-such-client", requestUri), headers: { cookie: setup.cookie } }),
      UNKNOWN,
    );
    codeOf(
      await setup.app.inject({
        url: authorizeWith(setup.clients.partner.id, requestUri),
        headers: { cookie: setup.cookie },
      }),
    );
  });

  test("request_uri without client_id, or either repeated: an error page", async (t) => {
    const setup = await setUp(t);
    const requestUri = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    const id = setup.clients.partner.id;
    for (const query of [
      new URLSearchParams({ request_uri: requestUri }),
      new URLSearchParams([
        ["client_id", id],
        ["request_uri", requestUri],
        ["request_uri", requestUri],
      ]),
      new URLSearchParams([
        ["client_id", id],
        ["client_id", id],
        ["request_uri", requestUri],
      ]),
    ]) {
      const answer = await setup.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie: setup.cookie } });
      assertErrorPage(answer, "A request_uri needs exactly one client_id and one request_uri.");
    }
    // None of those spent it.
    codeOf(await setup.app.inject({ url: authorizeWith(id, requestUri), headers: { cookie: setup.cookie } }));
  });

  test("two uses at once: exactly one code", async (t) => {
    const setup = await setUp(t);
    const requestUri = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    const url = authorizeWith(setup.clients.partner.id, requestUri);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => setup.app.inject({ url, headers: { cookie: setup.cookie } })),
    );
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [303, 400, 400, 400, 400, 400, 400, 400]);
  });

  test("pushed on one instance, used on another; a reuse refused on the first; the continuation honoured on either", async (t) => {
    const setup = await setUp(t);
    const second = await buildApp({
      config: testConfig({ oidcSigningKeys: [OIDC_KEY] }),
      store: setup.store,
      clock: setup.clock.read,
    });
    const { fields, verifier } = requestFields(setup, "partner");
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const url = authorizeWith(setup.clients.partner.id, requestUri);
    const code = codeOf(await second.inject({ url, headers: { cookie: setup.cookie } }));
    assertErrorPage(await setup.app.inject({ url, headers: { cookie: setup.cookie } }), UNKNOWN);
    assert.equal((await redeemCode(setup, "partner", code, verifier)).statusCode, 200);
    // Sent to sign in by the first instance, brought back to the second.
    const other = await pushed(setup.app, setup, "partner", requestFields(setup, "partner").fields);
    const toSignIn = await setup.app.inject({ url: authorizeWith(setup.clients.partner.id, other) });
    const continuation = new URL(toSignIn.headers.location as string, TEST_ISSUER).searchParams.get("continue") ?? "";
    codeOf(await second.inject({ url: continuation, headers: { cookie: setup.cookie } }));
    await second.close();
  });
});

describe("the sealed continuation through the sign-in page", () => {
  async function continuation(setup: Setup) {
    const { fields } = requestFields(setup, "partner");
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const toSignIn = await setup.app.inject({ url: authorizeWith(setup.clients.partner.id, requestUri) });
    const next = new URL(toSignIn.headers.location as string, TEST_ISSUER).searchParams.get("continue") ?? "";
    return new URLSearchParams(next.slice(next.indexOf("?") + 1));
  }
  const authorize = (setup: Setup, params: URLSearchParams) =>
    setup.app.inject({ url: `/oauth/authorize?${params}`, headers: { cookie: setup.cookie } });

  test("any parameter edited, added or removed, or the seal forged: refused", async (t) => {
    const setup = await setUp(t);
    await setup.store.updateClient(setup.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const edits: ((params: URLSearchParams) => void)[] = [
      (params) => params.set("scope", "openid email profile offline_access"),
      (params) => params.set("state", "forged"),
      (params) => params.set("code_challenge", "B".repeat(43)),
      (params) => params.set("prompt", "none"),
      (params) => params.set("login_hint", "mallory@example.com"),
      (params) => params.delete("nonce"),
      (params) => params.set("max_age", "999999"),
      (params) => params.set("pushed_request_seal", "99999999999.AAAA"),
      (params) => params.set("pushed_request_seal", `${params.get("pushed_request_seal")}.x`),
      (params) => params.append("pushed_request_seal", "1.A"),
    ];
    for (const edit of edits) {
      const params = await continuation(setup);
      edit(params);
      assertErrorPage(await authorize(setup, params), SEAL_BROKEN);
    }
    // Moved to another of the client's registered addresses: the same.
    await setup.store.updateClient(setup.clients.partner.id, {
      redirectUris: [REDIRECTS.partner, "https://rp.example/other"],
    });
    const moved = await continuation(setup);
    moved.set("redirect_uri", "https://rp.example/other");
    assertErrorPage(await authorize(setup, moved), SEAL_BROKEN);
    // Unedited, it works.
    codeOf(await authorize(setup, await continuation(setup)));
  });

  test("the seal stripped, for a client that must push: refused at its redirect URI as a plain request", async (t) => {
    const setup = await setUp(t);
    await setup.store.updateClient(setup.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const params = await continuation(setup);
    params.delete("pushed_request_seal");
    const answer = await authorize(setup, params);
    assert.equal(answer.statusCode, 303);
    const location = new URL(answer.headers.location as string);
    assert.equal(location.origin + location.pathname, REDIRECTS.partner);
    assert.equal(location.searchParams.get("error"), "invalid_request");
    assert.equal(location.searchParams.get("code"), null);
  });

  test("the seal expires after ten minutes", async (t) => {
    const setup = await setUp(t);
    const params = await continuation(setup);
    setup.clock.advanceSeconds(601);
    assertErrorPage(await authorize(setup, params), SEAL_BROKEN);
  });

  test("a seal the client pushed itself is not kept: only the service's own counts", async (t) => {
    const setup = await setUp(t);
    const { fields } = requestFields(setup, "partner", { pushed_request_seal: "1.forged" });
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const toSignIn = await setup.app.inject({ url: authorizeWith(setup.clients.partner.id, requestUri) });
    const next = new URL(toSignIn.headers.location as string, TEST_ISSUER).searchParams.get("continue") ?? "";
    const seals = new URLSearchParams(next.slice(next.indexOf("?") + 1)).getAll("pushed_request_seal");
    assert.equal(seals.length, 1);
    assert.notEqual(seals[0], "1.forged");
    codeOf(await setup.app.inject({ url: next, headers: { cookie: setup.cookie } }));
  });
});

describe("the push endpoint", () => {
  test("bad client authentication: 401 invalid_client, the same words whatever was wrong", async (t) => {
    const setup = await setUp(t);
    const { fields } = requestFields(setup, "partner");
    const { client_id: _id, ...withoutId } = fields;
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
    const cases: [Record<string, string>, Record<string, string>, string][] = [
      [{ authorization: basic(setup.clients.partner.id, "wrong") }, withoutId, 'Basic realm="clients"'],
      [{ authorization: basic("no-such-client", "wrong") }, withoutId, 'Basic realm="clients"'],
      [{ authorization: "Basic !!!" }, withoutId, 'Basic realm="clients"'],
      // A confidential client presenting its id alone, as a public client would.
      [{}, fields, "Bearer"],
      [{}, { ...fields, client_id: "no-such-client" }, "Bearer"],
      [{}, withoutId, "Bearer"],
      [{}, { ...fields, client_id: setup.clients.post.id, client_secret: "wrong" }, "Bearer"],
    ];
    for (const [headers, form, challenge] of cases) {
      const answer = await setup.app.inject({
        method: "POST",
        url: "/oauth/par",
        headers: { ...headers, ...FORM },
        payload: new URLSearchParams(form).toString(),
      });
      assertOAuthError(answer, 401, "invalid_client", "Client authentication failed");
      assert.equal(answer.headers["www-authenticate"], challenge);
    }
    // Two methods at once.
    const both = await setup.app.inject({
      method: "POST",
      url: "/oauth/par",
      headers: { ...credentials(setup, "partner").headers, ...FORM },
      payload: new URLSearchParams({ ...fields, client_secret: setup.clients.partner.secret }).toString(),
    });
    assertOAuthError(
      both,
      400,
      "invalid_request",
      "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form",
    );
  });

  test("a request_uri inside a push, or a request the authorization endpoint would refuse: 400 with its error", async (t) => {
    const setup = await setUp(t);
    const registry = createClientRegistry(setup.store, setup.clock.read);
    const service = await registry.register(
      clientMetadata({ client_name: "Orders API", grant_types: ["client_credentials"] }),
      { userId: null, clientAddress: null },
    );
    const cases: [Record<string, string>, string, string][] = [
      [
        { request_uri: `urn:ietf:params:oauth:request_uri:${"A".repeat(43)}` },
        "invalid_request",
        "request_uri must not be pushed (RFC 9126 section 2.1)",
      ],
      [
        { redirect_uri: "https://evil.example/callback" },
        "invalid_request",
        "The application asked to return to an address it has not registered.",
      ],
      [{ scope: "openid admin" }, "invalid_scope", "The scope admin is not available"],
      [{ scope: "email" }, "invalid_scope", "The openid scope is required"],
      [{ response_type: "token" }, "unsupported_response_type", "Only response_type=code is supported"],
      [{ code_challenge_method: "plain" }, "invalid_request", "code_challenge_method must be S256"],
      [{ code_challenge: "short" }, "invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)"],
      [{ prompt: "none login" }, "invalid_request", "prompt=none cannot be combined with another value"],
      [{ max_age: "-1" }, "invalid_request", "max_age must be a whole number of seconds"],
      [{ request: "eyJhbGciOiJub25lIn0.e30." }, "request_not_supported", "Request objects are not supported"],
    ];
    for (const [extra, error, description] of cases) {
      const answer = await push(setup.app, setup, "partner", requestFields(setup, "partner", extra).fields);
      assertOAuthError(answer, 400, error, description);
    }
    const { code_challenge: _c, ...withoutPkce } = requestFields(setup, "partner").fields;
    assertOAuthError(
      await push(setup.app, setup, "partner", withoutPkce),
      400,
      "invalid_request",
      "PKCE is required: send code_challenge (S256)",
    );
    const notSignIn = await setup.app.inject({
      method: "POST",
      url: "/oauth/par",
      headers: {
        authorization: `Basic ${Buffer.from(`${service.client.id}:${service.secret}`).toString("base64")}`,
        ...FORM,
      },
      payload: new URLSearchParams(requestFields(setup, "partner").fields).toString(),
    });
    assertOAuthError(
      notSignIn,
      400,
      "invalid_request",
      "client_id in the form is not the client of the HTTP Basic credentials",
    );
    const { client_id: _id, ...anyId } = requestFields(setup, "partner").fields;
    const serviceOnly = await setup.app.inject({
      method: "POST",
      url: "/oauth/par",
      headers: {
        authorization: `Basic ${Buffer.from(`${service.client.id}:${service.secret}`).toString("base64")}`,
        ...FORM,
      },
      payload: new URLSearchParams(anyId).toString(),
    });
    assertOAuthError(
      serviceOnly,
      400,
      "unauthorized_client",
      "The client is not registered for the authorization_code grant",
    );
  });

  test("hostile input: repeated, over-long and wrongly typed fields, huge bodies, JSON: 4xx with error, never 5xx", async (t) => {
    const setup = await setUp(t);
    const { headers } = credentials(setup, "partner");
    const { fields } = requestFields(setup, "partner");
    const post = (payload: string, type = FORM["content-type"]) =>
      setup.app.inject({ method: "POST", url: "/oauth/par", headers: { ...headers, "content-type": type }, payload });
    const repeated = await post(`${new URLSearchParams(fields)}&scope=openid`);
    assertOAuthError(repeated, 400, "invalid_request", "Form field 'scope' is repeated");
    const long = await post(new URLSearchParams({ ...fields, state: "s".repeat(5000) }).toString());
    assert.equal(long.statusCode, 400);
    assert.equal(long.json().error, "invalid_request");
    const huge = await post(new URLSearchParams({ ...fields, junk: "x".repeat(100_000) }).toString());
    // Refused before any route reads it, as at every endpoint (platform/hardening.ts): the service's shape.
    assert.equal(huge.statusCode, 413);
    assert.deepEqual(huge.json(), { detail: "Request body is too large" });
    const json = await post(JSON.stringify(fields), "application/json");
    assert.equal(json.statusCode, 415);
    assert.deepEqual(json.json(), { detail: "Unsupported Media Type" });
    for (const payload of ["%", "=&=&", "client_id[]=x", "\u0000=\u0000", "a".repeat(10_000)]) {
      const answer = await post(payload);
      assert.ok(answer.statusCode >= 400 && answer.statusCode < 500, `${payload.slice(0, 20)}: ${answer.statusCode}`);
      assert.equal(typeof answer.json().error, "string");
    }
  });
});

describe("what the database keeps", () => {
  test("the request_uri only as a hash, and never the client's secret", async (t) => {
    const clock = new TestClock();
    const { store, dump } = await rawStore(t, clock.read);
    const setup = await setUpOn(t, store, clock);
    const requestUri = await pushed(setup.app, setup, "post", requestFields(setup, "post").fields);
    const reference = requestUri.slice(requestUri.lastIndexOf(":") + 1);
    const rows = await dump();
    assert.ok(rows.includes(setup.clients.post.id), "the request is there");
    assert.ok(!rows.includes(reference), "not the request_uri");
    assert.ok(!rows.includes(setup.clients.post.secret), "not the secret");
  });
});
