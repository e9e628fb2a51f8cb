// Pushed authorization requests (RFC 9126, issue 36), in process: a push by
// each kind of client (Basic, post, a public client) answered 201 with a
// request_uri, the authorization endpoint using it (the pushed parameters,
// not the query's), through the sign-in and consent pages, a client (or the
// whole service) that requires pushed requests refused a plain one,
// discovery, the client metadata by both ways in, the audit events and the
// metrics. The refusals an attacker would try are in test/security/par.test.ts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { loadConfig } from "../src/config.ts";
import { ConfigError } from "../src/errors.ts";
import { createMetrics } from "../src/operations/metrics.ts";
import { bearer, requestToken, TEST_ISSUER } from "./helpers.ts";
import { credentials, REDIRECTS, RP, redeemCode, type Setup, setUp } from "./oidc/client-flow.ts";
import { authorizeWith, FORM, oidcEvents, pushed, requestFields } from "./oidc/par.ts";

/** The code sent back to the client's redirect URI, with everything else the redirect carries. */
function callback(answer: { statusCode: number; headers: Record<string, unknown>; body: string }) {
  assert.equal(answer.statusCode, 303, answer.body);
  const location = new URL(answer.headers.location as string);
  const { code, ...rest } = Object.fromEntries(location.searchParams);
  assert.match(code ?? "", /^[\w-]{43}$/);
  return { to: location.origin + location.pathname, code: code as string, rest };
}

async function adminToken(setup: Setup): Promise<string> {
  await setup.store.update(setup.user.id, { isAdmin: true });
  const login = await requestToken(setup.app, { username: "ada@example.com", password: "correct horse battery" });
  return login.json().access_token;
}

describe("pushed authorization requests", () => {
  for (const key of ["partner", "post", "spa"] as const) {
    test(`${key}: pushed, used by the authorization endpoint, the code redeemed`, async (t) => {
      const setup = await setUp(t);
      const { fields, verifier } = requestFields(setup, key);
      const requestUri = await pushed(setup.app, setup, key, fields);
      const answer = await setup.app.inject({
        url: authorizeWith(setup.clients[key].id, requestUri),
        headers: { cookie: setup.cookie },
      });
      const back = callback(answer);
      assert.equal(back.to, REDIRECTS[key]);
      assert.deepEqual(back.rest, { state: "pushed-state", iss: TEST_ISSUER });
      const tokens = await redeemCode(setup, key, back.code, verifier);
      assert.equal(tokens.statusCode, 200, tokens.body);
      assert.equal(tokens.json().scope, "openid email");
      assert.deepEqual(await oidcEvents(setup.store), [
        ["par_pushed", null],
        ["par_used", null],
        ["code_issued", setup.user.id],
        ["code_redeemed", setup.user.id],
      ]);
    });
  }

  test("the query's other parameters are ignored: the pushed request is the one authorized", async (t) => {
    const setup = await setUp(t);
    const { fields, verifier } = requestFields(setup, "partner");
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const answer = await setup.app.inject({
      url: authorizeWith(setup.clients.partner.id, requestUri, {
        redirect_uri: "https://evil.example/callback",
        state: "forged",
        scope: "openid profile email offline_access",
        code_challenge: "A".repeat(43),
        prompt: "none",
      }),
      headers: { cookie: setup.cookie },
    });
    const back = callback(answer);
    assert.equal(back.to, `${RP}/callback`);
    assert.deepEqual(back.rest, { state: "pushed-state", iss: TEST_ISSUER });
    const tokens = await redeemCode(setup, "partner", back.code, verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.equal(tokens.json().scope, "openid email");
  });

  test("through the sign-in page: used once, carried sealed, and a client that requires pushing is let through", async (t) => {
    const setup = await setUp(t);
    await setup.store.updateClient(setup.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const { fields, verifier } = requestFields(setup, "partner", { login_hint: "ada@example.com" });
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const toSignIn = await setup.app.inject({ url: authorizeWith(setup.clients.partner.id, requestUri) });
    assert.equal(toSignIn.statusCode, 303);
    const signIn = new URL(toSignIn.headers.location as string, TEST_ISSUER);
    assert.equal(signIn.pathname, "/sign-in");
    assert.equal(signIn.searchParams.get("login_hint"), "ada@example.com");
    const continuation = signIn.searchParams.get("continue") as string;
    assert.match(continuation, /^\/oauth\/authorize\?/);
    const carried = Object.fromEntries(new URLSearchParams(continuation.slice(continuation.indexOf("?") + 1)));
    const { pushed_request_seal: seal, ...rest } = carried;
    assert.deepEqual(rest, fields, "the pushed parameters, no request_uri, no secret");
    assert.match(seal ?? "", /^\d+\.[\w-]{43}$/);
    // The request_uri itself has served.
    const again = await setup.app.inject({
      url: authorizeWith(setup.clients.partner.id, requestUri),
      headers: { cookie: setup.cookie },
    });
    assert.equal(again.statusCode, 400);
    // Signed in, the browser comes back with the continuation: the code.
    const back = callback(await setup.app.inject({ url: continuation, headers: { cookie: setup.cookie } }));
    assert.equal(back.to, `${RP}/callback`);
    assert.deepEqual(back.rest, { state: "pushed-state", iss: TEST_ISSUER });
    assert.equal((await redeemCode(setup, "partner", back.code, verifier)).statusCode, 200);
  });

  test("through the consent page: the form answers the pushed request", async (t) => {
    const setup = await setUp(t);
    const { fields, verifier } = requestFields(setup, "partner", { scope: "openid profile" });
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const page = await setup.app.inject({
      url: authorizeWith(setup.clients.partner.id, requestUri),
      headers: { cookie: setup.cookie },
    });
    assert.equal(page.statusCode, 200);
    const field = (name: string) =>
      (new RegExp(`name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? "").replaceAll("&#38;", "&");
    const allowed = await setup.app.inject({
      method: "POST",
      url: "/oauth/consent",
      headers: { cookie: setup.cookie, ...FORM },
      payload: new URLSearchParams({
        request: field("request"),
        form_token: field("form_token"),
        decision: "allow",
      }).toString(),
    });
    const back = callback(allowed);
    assert.deepEqual(back.rest, { state: "pushed-state", iss: TEST_ISSUER });
    const tokens = await redeemCode(setup, "partner", back.code, verifier);
    assert.equal(tokens.json().scope, "openid profile");
  });

  test("prompt=login pushed: a signed-in browser is sent to sign in again, and the fresh sign-in gets the code", async (t) => {
    const setup = await setUp(t);
    const { fields, verifier } = requestFields(setup, "partner", { prompt: "login" });
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    setup.clock.advanceSeconds(30);
    const asked = await setup.app.inject({
      url: authorizeWith(setup.clients.partner.id, requestUri),
      headers: { cookie: setup.cookie },
    });
    assert.equal(asked.statusCode, 303);
    const continuation = new URL(asked.headers.location as string, TEST_ISSUER).searchParams.get("continue") as string;
    const proof = ([] as string[])
      .concat(asked.headers["set-cookie"] ?? [])
      .find((cookie) => cookie.startsWith("uts_reauth="))
      ?.split(";")[0];
    assert.ok(proof);
    setup.clock.advanceSeconds(20);
    const login = await requestToken(setup.app, { username: "ada@example.com", password: "correct horse battery" });
    const opened = await setup.app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(login.json().access_token),
    });
    const fresh = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const back = callback(await setup.app.inject({ url: continuation, headers: { cookie: `${fresh}; ${proof}` } }));
    assert.deepEqual(back.rest, { state: "pushed-state", iss: TEST_ISSUER });
    assert.equal((await redeemCode(setup, "partner", back.code, verifier)).statusCode, 200);
  });

  test("browser apps push cross-origin: CORS for public clients' origins only", async (t) => {
    const setup = await setUp(t);
    const { fields } = requestFields(setup, "spa");
    const post = (origin: string) =>
      setup.app.inject({
        method: "POST",
        url: "/oauth/par",
        headers: { ...FORM, origin },
        payload: new URLSearchParams(fields).toString(),
      });
    const allowed = await post(RP);
    assert.equal(allowed.statusCode, 201);
    assert.equal(allowed.headers["access-control-allow-origin"], RP);
    assert.equal(allowed.headers["access-control-allow-credentials"], undefined);
    const other = await post("https://evil.example");
    assert.equal(other.headers["access-control-allow-origin"], undefined);
    const preflight = await setup.app.inject({
      method: "OPTIONS",
      url: "/oauth/par",
      headers: {
        origin: RP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    assert.equal(preflight.statusCode, 204);
    assert.equal(preflight.headers["access-control-allow-origin"], RP);
  });

  test("a client registered to require pushed requests is refused a plain one, at its redirect URI", async (t) => {
    const setup = await setUp(t);
    await setup.store.updateClient(setup.clients.partner.id, { requirePushedAuthorizationRequests: true });
    const { fields } = requestFields(setup, "partner");
    const plain = await setup.app.inject({
      url: `/oauth/authorize?${new URLSearchParams(fields)}`,
      headers: { cookie: setup.cookie },
    });
    assert.equal(plain.statusCode, 303);
    const location = new URL(plain.headers.location as string);
    assert.equal(location.origin + location.pathname, `${RP}/callback`);
    assert.deepEqual(Object.fromEntries(location.searchParams), {
      error: "invalid_request",
      error_description:
        "This client must push its authorization requests first (RFC 9126): send only client_id and request_uri",
      state: "pushed-state",
      iss: TEST_ISSUER,
    });
    // Other clients are not concerned.
    const spa = requestFields(setup, "spa").fields;
    const other = await setup.app.inject({
      url: `/oauth/authorize?${new URLSearchParams(spa)}`,
      headers: { cookie: setup.cookie },
    });
    assert.equal(callback(other).to, REDIRECTS.spa);
  });

  test("REQUIRE_PUSHED_AUTHORIZATION_REQUESTS: every client refused a plain request; discovery says so", async (t) => {
    const setup = await setUp(t, { pushedAuthorizationRequests: { required: true, lifetimeSeconds: 30 } });
    const { fields, verifier } = requestFields(setup, "spa");
    const plain = await setup.app.inject({
      url: `/oauth/authorize?${new URLSearchParams(fields)}`,
      headers: { cookie: setup.cookie },
    });
    assert.equal(new URL(plain.headers.location as string).searchParams.get("error"), "invalid_request");
    const answer = await setup.app.inject({
      method: "POST",
      url: "/oauth/par",
      headers: FORM,
      payload: new URLSearchParams(fields).toString(),
    });
    assert.equal(answer.statusCode, 201);
    assert.equal(answer.json().expires_in, 30, "the lifetime setting");
    const back = callback(
      await setup.app.inject({
        url: authorizeWith(setup.clients.spa.id, answer.json().request_uri),
        headers: { cookie: setup.cookie },
      }),
    );
    assert.equal((await redeemCode(setup, "spa", back.code, verifier)).statusCode, 200);
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const document = (await setup.app.inject({ url: path })).json();
      assert.equal(document.require_pushed_authorization_requests, true, path);
    }
  });

  test("the settings: off and 60 seconds by default; checked, the error naming the setting", () => {
    const env = { SIGNING_SECRET: "s".repeat(40), DATABASE_URL: "sqlite::memory:" };
    assert.deepEqual(loadConfig(env).config.pushedAuthorizationRequests, { required: false, lifetimeSeconds: 60 });
    assert.deepEqual(
      loadConfig({
        ...env,
        REQUIRE_PUSHED_AUTHORIZATION_REQUESTS: "on",
        PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS: "30",
      }).config.pushedAuthorizationRequests,
      { required: true, lifetimeSeconds: 30 },
    );
    for (const [setting, value] of [
      ["REQUIRE_PUSHED_AUTHORIZATION_REQUESTS", "maybe"],
      ["PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS", "4"],
      ["PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS", "601"],
      ["PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS", "1e3"],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...env, [setting]: value }),
        (error: unknown) => error instanceof ConfigError && error.setting === setting,
        `${setting}=${value}`,
      );
    }
  });

  test("discovery names the endpoint in both documents; PAR is not required by default", async (t) => {
    const setup = await setUp(t);
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const document = (await setup.app.inject({ url: path })).json();
      assert.equal(
        document.pushed_authorization_request_endpoint,
        document.authorization_endpoint.replace("/oauth/authorize", "/oauth/par"),
        path,
      );
      assert.equal(document.require_pushed_authorization_requests, false, path);
    }
  });

  test("require_pushed_authorization_requests: set by an admin and by a dynamic registration, shown back", async (t) => {
    const registrationToken = "initial-access-token-of-at-least-32-bytes";
    const setup = await setUp(t, {
      dynamicRegistration: {
        initialAccessToken: registrationToken,
        grantTypes: ["authorization_code", "refresh_token"],
        scopes: ["openid", "profile", "email"],
      },
    });
    const admin = bearer(await adminToken(setup));
    const created = await setup.app.inject({
      method: "POST",
      url: "/clients",
      headers: admin,
      payload: {
        client_name: "Bank",
        redirect_uris: ["https://bank.example/cb"],
        require_pushed_authorization_requests: true,
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().require_pushed_authorization_requests, true);
    const id = created.json().client_id;
    const read = await setup.app.inject({ url: `/clients/${id}`, headers: admin });
    assert.equal(read.json().require_pushed_authorization_requests, true);
    const patched = await setup.app.inject({
      method: "PATCH",
      url: `/clients/${id}`,
      headers: admin,
      payload: { require_pushed_authorization_requests: false },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(patched.json().require_pushed_authorization_requests, false);
    const plain = await setup.app.inject({ url: "/clients", headers: admin });
    assert.ok(
      plain.json().items.every((client: Record<string, unknown>) => "require_pushed_authorization_requests" in client),
    );
    const registered = await setup.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: { authorization: `Bearer ${registrationToken}` },
      payload: {
        redirect_uris: ["https://rp2.example/cb"],
        token_endpoint_auth_method: "none",
        require_pushed_authorization_requests: true,
      },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    assert.equal(registered.json().require_pushed_authorization_requests, true);
    const stored = await setup.store.findClient(registered.json().client_id);
    assert.equal(stored?.requirePushedAuthorizationRequests, true);
    const defaulted = await setup.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: { authorization: `Bearer ${registrationToken}` },
      payload: { redirect_uris: ["https://rp3.example/cb"] },
    });
    assert.equal(defaulted.json().require_pushed_authorization_requests, false);
  });

  test("metrics: pushes and request_uri uses counted by outcome", async (t) => {
    const metrics = createMetrics();
    const setup = await setUp(t, {}, { metrics });
    const { fields } = requestFields(setup, "partner");
    const requestUri = await pushed(setup.app, setup, "partner", fields);
    const { headers } = credentials(setup, "partner");
    const refused = await setup.app.inject({
      method: "POST",
      url: "/oauth/par",
      headers: { ...headers, ...FORM },
      payload: new URLSearchParams({ ...fields, scope: "openid admin" }).toString(),
    });
    assert.equal(refused.statusCode, 400);
    const noClient = await setup.app.inject({ method: "POST", url: "/oauth/par", headers: FORM, payload: "" });
    assert.equal(noClient.statusCode, 401);
    const url = authorizeWith(setup.clients.partner.id, requestUri);
    await setup.app.inject({ url, headers: { cookie: setup.cookie } });
    await setup.app.inject({ url, headers: { cookie: setup.cookie } });
    const text = await metrics.registry.metrics();
    const sample = (name: string, outcome: string) =>
      Number(new RegExp(`^${name}\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    assert.equal(sample("oidc_pushed_authorization_requests_total", "pushed"), 1);
    assert.equal(sample("oidc_pushed_authorization_requests_total", "invalid_scope"), 1);
    assert.equal(sample("oidc_pushed_authorization_requests_total", "invalid_client"), 1);
    assert.equal(sample("oidc_authorizations_total", "code"), 1);
    assert.equal(sample("oidc_authorizations_total", "invalid_request_uri"), 1);
    assert.doesNotMatch(text, new RegExp(setup.clients.partner.id));
  });
});
