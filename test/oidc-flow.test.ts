// The OpenID Connect flow's refusals and documents, in process (inject):
// each refusal per its RFC and never a 5xx. The authorization endpoint shows
// an error page (never a redirect) for an unknown client or a redirect URI
// that is not registered exactly; after that, errors go back to the client
// with state and iss. The token endpoint refuses a wrong verifier, a replayed
// code (revoking what it issued), another client's code, an expired code and
// a wrong secret. prompt=none answers login_required and consent_required.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { OIDC_WITHOUT_PUBLIC_URL } from "../src/oidc/settings.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import {
  bearer,
  buildTestApp,
  createUser,
  openPostgresSchema,
  requestToken,
  TEST_ISSUER,
  testConfig,
} from "./helpers.ts";
import { OIDC_KEY, pkcePair, registerClients, type TestClients } from "./oidc/fixture.ts";

const RP = "https://rp.example";
const PASSWORD = "correct horse battery";

async function setUp(t: TestContext) {
  const built = await buildTestApp(t, { oidcSigningKeys: [OIDC_KEY] });
  const clients = await registerClients(built.store, RP);
  const user = await createUser(built.store, "ada@example.com", PASSWORD);
  return { ...built, clients, user };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** Signs in with the password grant and opens the browser session: the cookie header to send. */
async function browserCookie({ app }: Setup): Promise<string> {
  const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
  const opened = await app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  assert.equal(opened.statusCode, 204);
  const cookie = opened.headers["set-cookie"] as string;
  assert.match(cookie, /^uts_session=[0-9a-f-]{36}\.[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
  return cookie.split(";")[0] as string;
}

function authorizeUrl(fields: Record<string, string>): string {
  return `/oauth/authorize?${new URLSearchParams(fields)}`;
}

/** What both discovery documents say of OAuth (RFC 8414) while OpenID Connect is on. */
function servedMetadata(base: string) {
  return {
    issuer: TEST_ISSUER,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/auth/token`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    scopes_supported: ["openid", "profile", "email", "offline_access"],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [
      "password",
      "refresh_token",
      "urn:user-token-service:grant-type:mfa-otp",
      "urn:user-token-service:grant-type:mfa-recovery-code",
      "urn:user-token-service:grant-type:mfa-webauthn",
      "urn:user-token-service:grant-type:webauthn",
      "client_credentials",
      "authorization_code",
      "urn:ietf:params:oauth:grant-type:device_code",
    ],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    service_documentation: `${base}/docs`,
    revocation_endpoint: `${base}/auth/revoke`,
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    introspection_endpoint: `${base}/auth/introspect`,
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    device_authorization_endpoint: `${base}/oauth/device_authorization`,
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
    access_token_signing_alg_values_supported: ["HS256"],
    pushed_authorization_request_endpoint: `${base}/oauth/par`,
    require_pushed_authorization_requests: false,
    dpop_signing_alg_values_supported: ["ES256", "ES384", "EdDSA", "Ed25519", "RS256", "PS256"],
  };
}

function codeRequest(clients: TestClients, pkce: { challenge: string }, extra: Record<string, string> = {}) {
  return {
    response_type: "code",
    client_id: clients.partner.id,
    redirect_uri: `${RP}/callback`,
    scope: "openid email",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    state: "st-1",
    nonce: "n-1",
    ...extra,
  };
}

/** A code for the partner app (consent given first), with its PKCE pair. */
async function obtainCode(setup: Setup, cookie: string, clientKey: "partner" | "post" = "partner") {
  const client = setup.clients[clientKey];
  await setup.store.grantConsent(setup.user.id, setup.clients.partner.id, "openid email", new Date().toISOString());
  const pkce = pkcePair();
  const redirect = clientKey === "partner" ? `${RP}/callback` : `${RP}/post/callback`;
  const answer = await setup.app.inject({
    url: authorizeUrl(codeRequest(setup.clients, pkce, { client_id: client.id, redirect_uri: redirect })),
    headers: { cookie },
  });
  assert.equal(answer.statusCode, 303, answer.body);
  const location = new URL(answer.headers.location as string);
  assert.equal(location.origin + location.pathname, redirect);
  assert.equal(location.searchParams.get("state"), "st-1");
  assert.equal(location.searchParams.get("iss"), TEST_ISSUER);
  return { code: location.searchParams.get("code") as string, pkce, redirect };
}

function basic(id: string, secret: string) {
  return { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` };
}

describe("the authorization endpoint", () => {
  test("an unknown client, or a redirect URI not registered exactly, gets an error page, never a redirect", async (t) => {
    const setup = await setUp(t);
    const pkce = pkcePair();
    for (const fields of [
      codeRequest(setup.clients, pkce, { client_id: "no-such-client" }),
      codeRequest(setup.clients, pkce, { redirect_uri: "https://evil.example/callback" }),
      codeRequest(setup.clients, pkce, { redirect_uri: `${RP}/callback?x=1` }),
      codeRequest(setup.clients, pkce, { redirect_uri: `${RP}/callback/` }),
    ]) {
      const answer = await setup.app.inject({ url: authorizeUrl(fields) });
      assert.equal(answer.statusCode, 400);
      assert.equal(answer.headers.location, undefined);
      assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
      assert.match(answer.body, /This sign-in request cannot be used/);
    }
  });

  test("missing or plain PKCE, an unknown scope or response type: an error back at the client with state and iss", async (t) => {
    const setup = await setUp(t);
    const pkce = pkcePair();
    const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = codeRequest(setup.clients, pkce);
    const cases: [Record<string, string>, string, string][] = [
      [withoutPkce, "invalid_request", "PKCE is required: send code_challenge (S256)"],
      [
        codeRequest(setup.clients, pkce, { code_challenge_method: "plain", code_challenge: "a".repeat(43) }),
        "invalid_request",
        "code_challenge_method must be S256",
      ],
      [
        codeRequest(setup.clients, pkce, { scope: "openid admin" }),
        "invalid_scope",
        "The scope admin is not available",
      ],
      [
        codeRequest(setup.clients, pkce, { response_type: "token" }),
        "unsupported_response_type",
        "Only response_type=code is supported",
      ],
    ];
    for (const [fields, error, description] of cases) {
      const answer = await setup.app.inject({ url: authorizeUrl(fields) });
      assert.equal(answer.statusCode, 303);
      const location = new URL(answer.headers.location as string);
      assert.equal(location.origin + location.pathname, `${RP}/callback`);
      assert.deepEqual(Object.fromEntries(location.searchParams), {
        error,
        error_description: description,
        state: "st-1",
        iss: TEST_ISSUER,
      });
    }
  });

  test("prompt=none: login_required without a session, consent_required for a third-party client without consent", async (t) => {
    const setup = await setUp(t);
    const pkce = pkcePair();
    const none = authorizeUrl(codeRequest(setup.clients, pkce, { prompt: "none" }));
    const anonymous = await setup.app.inject({ url: none });
    assert.equal(anonymous.statusCode, 303);
    assert.deepEqual(Object.fromEntries(new URL(anonymous.headers.location as string).searchParams), {
      error: "login_required",
      error_description: "Sign-in required",
      state: "st-1",
      iss: TEST_ISSUER,
    });
    const cookie = await browserCookie(setup);
    const withoutConsent = await setup.app.inject({ url: none, headers: { cookie } });
    assert.deepEqual(Object.fromEntries(new URL(withoutConsent.headers.location as string).searchParams), {
      error: "consent_required",
      error_description: "The user has not allowed this application",
      state: "st-1",
      iss: TEST_ISSUER,
    });
    // Without prompt=none: the sign-in page (no session), the consent page (a session, no consent).
    const toSignIn = await setup.app.inject({
      url: authorizeUrl(codeRequest(setup.clients, pkce, { login_hint: "ada@example.com" })),
    });
    assert.equal(toSignIn.statusCode, 303);
    const signIn = new URL(toSignIn.headers.location as string, "http://service.test");
    assert.equal(signIn.pathname, "/sign-in");
    assert.equal(signIn.searchParams.get("login_hint"), "ada@example.com");
    // The continuation is the request itself; nothing asked for a fresh sign-in, so no proof is kept.
    assert.equal(
      signIn.searchParams.get("continue"),
      authorizeUrl(codeRequest(setup.clients, pkce, { login_hint: "ada@example.com" })),
    );
    assert.equal(toSignIn.headers["set-cookie"], undefined);
    const consentPage = await setup.app.inject({
      url: authorizeUrl(codeRequest(setup.clients, pkce)),
      headers: { cookie },
    });
    assert.equal(consentPage.statusCode, 200);
    assert.match(consentPage.body, /<strong id="client-name">Partner &#60;App&#62;<\/strong>/);
    assert.match(consentPage.headers["content-security-policy"] as string, /form-action 'self' https:\/\/rp\.example/);
    // A consent form without the session's form token is refused.
    const forged = await setup.app.inject({
      method: "POST",
      url: "/oauth/consent",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({
        request: new URLSearchParams(codeRequest(setup.clients, pkce)).toString(),
        decision: "allow",
        form_token: "forged",
      }).toString(),
    });
    assert.equal(forged.statusCode, 400);
    assert.equal(await setup.store.findConsent(setup.user.id, setup.clients.partner.id), undefined);
  });

  test("prompt=login, max_age and acr_values (a second factor) send a signed-in user to sign in again, once", async (t) => {
    const setup = await setUp(t);
    const cookie = await browserCookie(setup);
    await setup.store.grantConsent(setup.user.id, setup.clients.partner.id, "openid email", new Date().toISOString());
    const pkce = pkcePair();
    let proof = "";
    const where = async (extra: Record<string, string>) => {
      const answer = await setup.app.inject({
        url: authorizeUrl(codeRequest(setup.clients, pkce, extra)),
        headers: { cookie },
      });
      assert.equal(answer.statusCode, 303);
      proof = String(answer.headers["set-cookie"] ?? "");
      return new URL(answer.headers.location as string, "http://service.test");
    };
    const multiFactor = "http://schemas.openid.net/pape/policies/2007/06/multi-factor";
    assert.equal((await where({})).searchParams.has("code"), true, "the session answers");
    setup.clock.advanceSeconds(120);
    const asks: Record<string, string>[] = [{ prompt: "login" }, { max_age: "60" }, { acr_values: multiFactor }];
    let continuation = "";
    for (const extra of asks) {
      const signIn = await where(extra);
      assert.equal(signIn.pathname, "/sign-in", JSON.stringify(extra));
      // The continuation is the request as it came (prompt kept); the browser keeps, in a cookie, the
      // signed proof that this request was sent to sign in now (oidc/reauthentication.ts).
      continuation = signIn.searchParams.get("continue") as string;
      assert.equal(continuation, authorizeUrl(codeRequest(setup.clients, pkce, extra)));
      assert.match(
        proof,
        new RegExp(
          `^uts_reauth=${setup.clock.seconds}\\.[\\w-]{43}\\.[\\w-]{43}; Path=/; HttpOnly; SameSite=Lax; Max-Age=600$`,
        ),
      );
    }
    const multiFactorProof = proof.split(";")[0] as string;
    // An auth_after the client made up (the parameter of an older release) counts for nothing.
    assert.equal((await where({ max_age: "0", prompt: "login", auth_after: "0" })).pathname, "/sign-in");
    assert.equal(
      (await where({ prompt: "login", auth_after: `${setup.clock.seconds - 500}.forged` })).pathname,
      "/sign-in",
    );
    // A session signed in since then, with the proof, satisfies the continuation: no loop.
    const fresh = await browserCookie(setup);
    const continued = await setup.app.inject({
      url: continuation,
      headers: { cookie: `${fresh}; ${multiFactorProof}` },
    });
    assert.equal(new URL(continued.headers.location as string).searchParams.has("code"), true);
    // The proof has served: it is cleared.
    assert.equal(continued.headers["set-cookie"], "uts_reauth=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
  });

  test("ending the session by any route ends the browser session", async (t) => {
    const setup = await setUp(t);
    const cookie = await browserCookie(setup);
    const [session] = await setup.store.listSessions(setup.user.id, new Date().toISOString(), { limit: 1 });
    await setup.store.revokeSession(session?.id as string, new Date().toISOString());
    const answer = await setup.app.inject({
      url: authorizeUrl(codeRequest(setup.clients, pkcePair(), { prompt: "none" })),
      headers: { cookie },
    });
    assert.equal(new URL(answer.headers.location as string).searchParams.get("error"), "login_required");
  });
});

describe("consent", () => {
  test("allowed on the consent page, listed on the account, taken back (which ends the app's sessions)", async (t) => {
    const setup = await setUp(t);
    const { app, clients, user } = setup;
    const cookie = await browserCookie(setup);
    const pkce = pkcePair();
    const page = await app.inject({ url: authorizeUrl(codeRequest(clients, pkce)), headers: { cookie } });
    assert.equal(page.statusCode, 200);
    const field = (name: string) =>
      (new RegExp(`name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? "").replaceAll("&#38;", "&");
    const allowed = await app.inject({
      method: "POST",
      url: "/oauth/consent",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({
        request: field("request"),
        form_token: field("form_token"),
        decision: "allow",
      }).toString(),
    });
    assert.equal(allowed.statusCode, 303);
    const back = new URL(allowed.headers.location as string);
    assert.equal(back.searchParams.get("state"), "st-1");
    const code = back.searchParams.get("code") as string;
    const tokens = (
      await requestToken(
        app,
        { grant_type: "authorization_code", code, redirect_uri: `${RP}/callback`, code_verifier: pkce.verifier },
        basic(clients.partner.id, clients.partner.secret),
      )
    ).json();
    const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
    const mine = bearer(login.json().access_token);
    const listed = await app.inject({ url: "/me/apps", headers: mine });
    assert.equal(listed.statusCode, 200);
    const consent = await setup.store.findConsent(user.id, clients.partner.id);
    assert.deepEqual(listed.json(), {
      items: [
        {
          client_id: clients.partner.id,
          client_name: "Partner <App>",
          scope: "openid email",
          granted_at: consent?.grantedAt,
        },
      ],
    });
    const removed = await app.inject({ method: "DELETE", url: `/me/apps/${clients.partner.id}`, headers: mine });
    assert.equal(removed.statusCode, 204);
    assert.deepEqual((await app.inject({ url: "/me/apps", headers: mine })).json(), { items: [] });
    const again = await app.inject({ method: "DELETE", url: `/me/apps/${clients.partner.id}`, headers: mine });
    assert.equal(again.statusCode, 404);
    assert.deepEqual(again.json(), { detail: "No application has access to your account under this id" });
    // The app's session ended with its access: its refresh token is refused.
    const refresh = await requestToken(
      app,
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token },
      basic(clients.partner.id, clients.partner.secret),
    );
    assert.equal(refresh.statusCode, 400);
    // prompt=none asks again: consent_required.
    const none = await app.inject({
      url: authorizeUrl(codeRequest(clients, pkce, { prompt: "none" })),
      headers: { cookie },
    });
    assert.equal(new URL(none.headers.location as string).searchParams.get("error"), "consent_required");
  });
});

describe("the authorization endpoint by form POST (OpenID Connect Core 3.1.2.1)", () => {
  const form = (fields: Record<string, string>) => ({
    "content-type": "application/x-www-form-urlencoded",
    payload: new URLSearchParams(fields).toString(),
  });

  test("answers as the GET does: a code with state and iss, redeemable with the verifier", async (t) => {
    const setup = await setUp(t);
    const cookie = await browserCookie(setup);
    await setup.store.grantConsent(setup.user.id, setup.clients.partner.id, "openid email", new Date().toISOString());
    const pkce = pkcePair();
    const { payload, ...type } = form(codeRequest(setup.clients, pkce));
    const answer = await setup.app.inject({
      method: "POST",
      url: "/oauth/authorize",
      headers: { cookie, ...type },
      payload,
    });
    assert.equal(answer.statusCode, 303);
    assert.equal(answer.body, "");
    const location = new URL(answer.headers.location as string);
    assert.equal(location.origin + location.pathname, `${RP}/callback`);
    assert.deepEqual([...location.searchParams.keys()], ["code", "state", "iss"]);
    assert.equal(location.searchParams.get("state"), "st-1");
    assert.equal(location.searchParams.get("iss"), TEST_ISSUER);
    const redeemed = await requestToken(
      setup.app,
      {
        grant_type: "authorization_code",
        code: location.searchParams.get("code") as string,
        redirect_uri: `${RP}/callback`,
        code_verifier: pkce.verifier,
      },
      basic(setup.clients.partner.id, setup.clients.partner.secret),
    );
    assert.equal(redeemed.statusCode, 200, redeemed.body);
  });

  test("without the session cookie (a cross-site POST carries no SameSite=Lax cookie): the same request as a GET", async (t) => {
    const setup = await setUp(t);
    const fields = codeRequest(setup.clients, pkcePair(), { prompt: "none" });
    const { payload, ...type } = form(fields);
    const answer = await setup.app.inject({ method: "POST", url: "/oauth/authorize", headers: type, payload });
    assert.equal(answer.statusCode, 303);
    assert.equal(answer.body, "");
    assert.equal(answer.headers.location, authorizeUrl(fields));
    assert.equal(answer.headers["set-cookie"], undefined);
  });

  test("refuses as the GET does: an error page for an unknown client, an error at the client for missing PKCE", async (t) => {
    const setup = await setUp(t);
    const pkce = pkcePair();
    const unknown = form(codeRequest(setup.clients, pkce, { client_id: "no-such-client" }));
    const page = await setup.app.inject({
      method: "POST",
      url: "/oauth/authorize",
      headers: { "content-type": unknown["content-type"] },
      payload: unknown.payload,
    });
    const byGet = await setup.app.inject({
      url: authorizeUrl(codeRequest(setup.clients, pkce, { client_id: "no-such-client" })),
    });
    assert.equal(page.statusCode, 400);
    assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(page.body, byGet.body);
    assert.equal(page.headers.location, undefined);

    const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = codeRequest(setup.clients, pkce);
    const noPkce = form(withoutPkce);
    const refused = await setup.app.inject({
      method: "POST",
      url: "/oauth/authorize",
      headers: { "content-type": noPkce["content-type"] },
      payload: noPkce.payload,
    });
    assert.equal(refused.statusCode, 303);
    assert.deepEqual(Object.fromEntries(new URL(refused.headers.location as string).searchParams), {
      error: "invalid_request",
      error_description: "PKCE is required: send code_challenge (S256)",
      state: "st-1",
      iss: TEST_ISSUER,
    });

    // A repeated parameter is the same error as in a query, not the form parser's JSON 400.
    const repeated = await setup.app.inject({
      method: "POST",
      url: "/oauth/authorize",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `${new URLSearchParams(codeRequest(setup.clients, pkce))}&scope=openid`,
    });
    const repeatedByGet = await setup.app.inject({
      url: `${authorizeUrl(codeRequest(setup.clients, pkce))}&scope=openid`,
    });
    assert.equal(repeated.statusCode, repeatedByGet.statusCode);
    assert.equal(repeated.headers.location, repeatedByGet.headers.location);
    assert.equal(repeated.body, repeatedByGet.body);
  });

  test("a JSON body is refused with 415", async (t) => {
    const setup = await setUp(t);
    const answer = await setup.app.inject({
      method: "POST",
      url: "/oauth/authorize",
      payload: codeRequest(setup.clients, pkcePair()),
    });
    assert.equal(answer.statusCode, 415);
    assert.deepEqual(answer.json(), { detail: "Unsupported Media Type" });
  });
});

describe("the authorization_code grant", () => {
  test("a right redemption, then every refusal per RFC 6749 5.2", async (t) => {
    const setup = await setUp(t);
    const { app, clients } = setup;
    const cookie = await browserCookie(setup);
    const auth = basic(clients.partner.id, clients.partner.secret);

    const first = await obtainCode(setup, cookie);
    const fields = (code: string, verifier: string) => ({
      grant_type: "authorization_code",
      code,
      redirect_uri: `${RP}/callback`,
      code_verifier: verifier,
    });
    const invalidGrant = {
      error: "invalid_grant",
      error_description: "The authorization code is invalid, expired, already used or not for this request",
      detail: "The authorization code is invalid, expired, already used or not for this request",
    };

    // A wrong verifier: refused, and the code is spent.
    const wrongVerifier = await requestToken(app, fields(first.code, pkcePair().verifier), auth);
    assert.equal(wrongVerifier.statusCode, 400);
    assert.deepEqual(wrongVerifier.json(), invalidGrant);

    // A right redemption.
    const second = await obtainCode(setup, cookie);
    const redeemed = await requestToken(app, fields(second.code, second.pkce.verifier), auth);
    assert.equal(redeemed.statusCode, 200, redeemed.body);
    assert.equal(redeemed.headers["cache-control"], "no-store");
    assert.equal(redeemed.headers.pragma, "no-cache");
    const tokens = redeemed.json();
    assert.deepEqual(Object.keys(tokens).sort(), [
      "access_token",
      "expires_in",
      "id_token",
      "refresh_token",
      "scope",
      "token_type",
    ]);
    assert.equal(tokens.scope, "openid email");
    // The client's token opens userinfo (GET and POST) and not /me; the spec's token does not open userinfo.
    for (const method of ["GET", "POST"] as const) {
      const info = await app.inject({ method, url: "/oauth/userinfo", headers: bearer(tokens.access_token) });
      assert.equal(info.statusCode, 200);
      assert.deepEqual(info.json(), { sub: setup.user.id, email: "ada@example.com", email_verified: false });
    }
    assert.equal((await app.inject({ url: "/me", headers: bearer(tokens.access_token) })).statusCode, 401);
    const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
    const specAtUserinfo = await app.inject({ url: "/oauth/userinfo", headers: bearer(login.json().access_token) });
    assert.equal(specAtUserinfo.statusCode, 401);
    assert.equal(specAtUserinfo.headers["www-authenticate"], 'Bearer error="invalid_token"');
    assert.deepEqual(specAtUserinfo.json(), { detail: "Could not validate credentials" });

    // The same code again: refused, and what it issued is revoked.
    const replay = await requestToken(app, fields(second.code, second.pkce.verifier), auth);
    assert.equal(replay.statusCode, 400);
    assert.deepEqual(replay.json(), invalidGrant);
    const refresh = await requestToken(app, { grant_type: "refresh_token", refresh_token: tokens.refresh_token }, auth);
    assert.equal(refresh.statusCode, 400);
    assert.equal(refresh.json().error, "invalid_grant");
    assert.equal((await app.inject({ url: "/oauth/userinfo", headers: bearer(tokens.access_token) })).statusCode, 401);

    // Another client's code.
    const third = await obtainCode(setup, cookie);
    const otherClient = await requestToken(app, {
      ...fields(third.code, third.pkce.verifier),
      client_id: clients.post.id,
      client_secret: clients.post.secret,
    });
    assert.equal(otherClient.statusCode, 400);
    assert.deepEqual(otherClient.json(), invalidGrant);

    // An expired code (61 seconds later).
    const fourth = await obtainCode(setup, cookie);
    setup.clock.advanceSeconds(61);
    const expired = await requestToken(app, fields(fourth.code, fourth.pkce.verifier), auth);
    assert.equal(expired.statusCode, 400);
    assert.deepEqual(expired.json(), invalidGrant);

    // A wrong client secret.
    const fifth = await obtainCode(setup, cookie);
    const wrongSecret = await requestToken(
      app,
      fields(fifth.code, fifth.pkce.verifier),
      basic(clients.partner.id, "not-the-secret"),
    );
    assert.equal(wrongSecret.statusCode, 401);
    assert.equal(wrongSecret.headers["www-authenticate"], 'Basic realm="clients"');
    assert.deepEqual(wrongSecret.json(), {
      error: "invalid_client",
      error_description: "Client authentication failed",
      detail: "Client authentication failed",
    });
  });
});

describe("discovery and keys", () => {
  test("the OpenID configuration is true to what is served, and the JWK Set holds the RS256 key", async (t) => {
    const { app } = await setUp(t);
    const discovery = await app.inject({ url: "/.well-known/openid-configuration" });
    assert.equal(discovery.statusCode, 200);
    const base = "http://127.0.0.1:0";
    assert.deepEqual(discovery.json(), {
      ...servedMetadata(base),
      userinfo_endpoint: `${base}/oauth/userinfo`,
      end_session_endpoint: `${base}/oauth/logout`,
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256"],
      claims_supported: [
        "sub",
        "iss",
        "aud",
        "exp",
        "iat",
        "auth_time",
        "nonce",
        "amr",
        "acr",
        "at_hash",
        "sid",
        "name",
        "updated_at",
        "email",
        "email_verified",
      ],
      prompt_values_supported: ["none", "login", "consent"],
      acr_values_supported: ["0", "http://schemas.openid.net/pape/policies/2007/06/multi-factor"],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
    });
    const jwks = (await app.inject({ url: "/.well-known/jwks.json" })).json();
    assert.equal(jwks.keys.length, 1);
    assert.deepEqual(Object.keys(jwks.keys[0]).sort(), ["alg", "e", "kid", "kty", "n", "use"]);
    assert.equal(jwks.keys[0].alg, "RS256");
  });

  test("the RFC 8414 metadata lists the same as the OpenID configuration, the registration endpoint when on", async (t) => {
    const token = "r".repeat(40);
    const { app } = await buildTestApp(t, {
      oidcSigningKeys: [OIDC_KEY],
      dynamicRegistration: { initialAccessToken: token, grantTypes: ["authorization_code"], scopes: ["openid"] },
    });
    const base = "http://127.0.0.1:0";
    const metadata = await app.inject({ url: "/.well-known/oauth-authorization-server" });
    assert.equal(metadata.statusCode, 200);
    assert.equal(metadata.headers["cache-control"], "public, max-age=3600");
    assert.deepEqual(metadata.json(), {
      ...servedMetadata(base),
      registration_endpoint: `${base}/auth/register`,
    });
    const discovery = (await app.inject({ url: "/.well-known/openid-configuration" })).json();
    for (const [name, value] of Object.entries(metadata.json())) assert.deepEqual(discovery[name], value, name);
    // The endpoint named is the one served.
    const registered = await app.inject({
      method: "POST",
      url: "/auth/register",
      headers: bearer(token),
      payload: { client_name: "Listed", redirect_uris: ["https://listed.example/cb"] },
    });
    assert.equal(registered.statusCode, 201);
  });

  test("without an OIDC key there is no discovery and no authorization endpoint", async (t) => {
    const { app } = await buildTestApp(t);
    assert.equal((await app.inject({ url: "/.well-known/openid-configuration" })).statusCode, 404);
    assert.equal((await app.inject({ url: "/oauth/authorize" })).statusCode, 404);
    assert.deepEqual((await app.inject({ url: "/.well-known/jwks.json" })).json(), { keys: [] });
  });

  test("OIDC_SIGNING_KEY_FILE: a generated key on SQLite (without PUBLIC_URL too, with a warning), off on PostgreSQL without it, a bad key named", () => {
    // Issue 35: without PUBLIC_URL the provider runs with the listen address as its issuer, so that the
    // admin console signs in right after `npm start`; one notice says production needs PUBLIC_URL.
    const bare = loadConfig({ DATABASE_URL: "sqlite::memory:" });
    assert.equal(bare.config.oidcSigningKeys?.length, 1, "no PUBLIC_URL: a per-process key");
    assert.ok(bare.notices.includes(OIDC_WITHOUT_PUBLIC_URL));
    const memory = loadConfig({ DATABASE_URL: "sqlite::memory:", PUBLIC_URL: "https://id.example.com" });
    assert.equal(memory.config.oidcSigningKeys?.length, 1);
    assert.ok(!memory.notices.includes(OIDC_WITHOUT_PUBLIC_URL));
    const postgres = loadConfig({
      DATABASE_URL: "postgres://db/users",
      SIGNING_SECRET: "s".repeat(32),
      PUBLIC_URL: "https://id.example.com",
    });
    assert.deepEqual(postgres.config.oidcSigningKeys, []);
    assert.ok(postgres.notices.some((notice) => notice.startsWith("OIDC_SIGNING_KEY_FILE is unset: OpenID Connect")));
    assert.throws(
      () => loadConfig({ DATABASE_URL: "sqlite::memory:", OIDC_SIGNING_KEY_FILE: "/no/such/file.pem" }),
      /^ConfigError: OIDC_SIGNING_KEY_FILE: cannot read \/no\/such\/file\.pem: ENOENT/,
    );
  });
});

describe("two instances on one PostgreSQL database", {
  skip: process.env.POSTGRES_URL ? false : "needs POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test)",
}, () => {
  test("a code issued on one instance is redeemed on the other, once", async (t) => {
    const { store: storeA, schema } = await openPostgresSchema(t, "oidc_two");
    const storeB = await openPostgresStore({
      url: process.env.POSTGRES_URL as string,
      schema,
      poolSize: 2,
      timeoutMs: 10_000,
    });
    t.after(() => storeB.close());
    const config = testConfig({ oidcSigningKeys: [OIDC_KEY] });
    const instanceA = await buildApp({ config, store: storeA });
    const instanceB = await buildApp({ config, store: storeB });
    t.after(async () => {
      await instanceA.close();
      await instanceB.close();
    });
    const clients = await registerClients(storeA, RP);
    const user = await createUser(storeA, "ada@example.com", PASSWORD);
    await storeA.grantConsent(user.id, clients.partner.id, "openid email", new Date().toISOString());
    const login = await requestToken(instanceA, { username: "ada@example.com", password: PASSWORD });
    const opened = await instanceA.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: bearer(login.json().access_token),
    });
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const pkce = pkcePair();
    const answer = await instanceA.inject({ url: authorizeUrl(codeRequest(clients, pkce)), headers: { cookie } });
    const code = new URL(answer.headers.location as string).searchParams.get("code") as string;
    const fields = {
      grant_type: "authorization_code",
      code,
      redirect_uri: `${RP}/callback`,
      code_verifier: pkce.verifier,
    };
    const auth = basic(clients.partner.id, clients.partner.secret);
    const onB = await requestToken(instanceB, fields, auth);
    assert.equal(onB.statusCode, 200, onB.body);
    const info = await instanceA.inject({ url: "/oauth/userinfo", headers: bearer(onB.json().access_token) });
    assert.deepEqual(info.json(), { sub: user.id, email: "ada@example.com", email_verified: false });
    const againOnA = await requestToken(instanceA, fields, auth);
    assert.equal(againOnA.statusCode, 400);
    assert.equal(againOnA.json().error, "invalid_grant");
  });
});
