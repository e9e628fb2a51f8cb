// Redirect URIs as an attacker would present them (issue 32, defects 8 and 9).
// Registration refuses a port outside 1-65535 (422 on /clients, RFC 7591's
// 400 invalid_redirect_uri at /auth/register) and still accepts a
// confidential client's http loopback URI (development setups), which then
// matches exactly, port included: the any-port loopback rule of RFC 8252
// section 7.3 is a native (public) app's only (RFC 9700 section 2.1). The
// authorization endpoint, walked with a table of hostile redirect_uri values
// (ports 0, 65536, 99999, userinfo, IPv6 literals, percent-encoding, trailing
// dots), answers each as the table says and never with a 5xx; a URI an
// older release stored with an impossible port gets the error page, never a
// redirect. SQLite by default, PostgreSQL with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { DEFAULT_DYNAMIC_GRANT_TYPES, DEFAULT_DYNAMIC_SCOPES } from "../src/oidc/registration-policy.ts";
import { bearer, buildTestApp, createUser, loginToken, TEST_ISSUER } from "./helpers.ts";
import { OIDC_KEY, pkcePair } from "./oidc/fixture.ts";

const PASSWORD = "correct horse battery";
const REGISTRATION_TOKEN = "an-initial-access-token-of-32-bytes-or-more";
const NOT_REGISTERED = "The application asked to return to an address it has not registered.";
const NOT_USABLE = "The application's return address is not a usable address.";

async function setUp(t: TestContext) {
  const built = await buildTestApp(t, {
    oidcSigningKeys: [OIDC_KEY],
    dynamicRegistration: {
      initialAccessToken: REGISTRATION_TOKEN,
      grantTypes: DEFAULT_DYNAMIC_GRANT_TYPES,
      scopes: DEFAULT_DYNAMIC_SCOPES,
    },
  });
  const registry = createClientRegistry(built.store);
  const by = { userId: null, clientAddress: null };
  const native = await registry.register(
    clientMetadata({
      client_name: "Desktop",
      redirect_uris: ["http://127.0.0.1/cb", "http://[::1]/cb", "com.example.desktop:/cb"],
      token_endpoint_auth_method: "none",
    }),
    by,
  );
  const web = await registry.register(
    clientMetadata({
      client_name: "Web",
      redirect_uris: ["http://127.0.0.1:8080/cb", "https://rp.example/cb"],
      token_endpoint_auth_method: "client_secret_basic",
    }),
    by,
  );
  // What an older release may have stored, unchecked: impossible ports.
  const older = await built.store.createClient({
    ...clientMetadata({ client_name: "Older", redirect_uris: ["https://older.example/cb"] }),
    redirectUris: ["http://127.0.0.1:99999/cb", "https://older.example:0/cb", "http://[::1]:65536/cb"],
    registeredBy: "admin",
    secretHash: null,
    tokenEndpointAuthMethod: "none",
  });
  return { ...built, native: native.client.id, web: web.client.id, older: older.id };
}

function request(clientId: string, redirectUri: string, extra: Record<string, string> = {}) {
  return {
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: "openid",
    code_challenge: pkcePair().challenge,
    code_challenge_method: "S256",
    state: "st",
    ...extra,
  };
}

type Outcome = "page" | "sign-in" | "error-redirect";

/** The answer's kind, its whole shape checked: the error page, the sign-in page, or an error at the URI. */
function outcomeOf(answer: LightMyRequestResponse, redirectUri: string, detail = NOT_REGISTERED): Outcome {
  assert.ok(answer.statusCode < 500, `${answer.statusCode} ${answer.body}`);
  if (answer.statusCode === 400) {
    assert.equal(answer.headers.location, undefined);
    assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
    assert.match(answer.body, /This sign-in request cannot be used/);
    assert.ok(answer.body.includes(detail.replaceAll("'", "&#39;")), answer.body);
    return "page";
  }
  assert.equal(answer.statusCode, 303, answer.body);
  const location = new URL(answer.headers.location as string, "http://service.test");
  if (location.origin === "http://service.test" && location.pathname === "/sign-in") return "sign-in";
  assert.ok((answer.headers.location as string).startsWith(new URL(redirectUri).href), answer.headers.location);
  assert.deepEqual(Object.fromEntries(location.searchParams), {
    error: "unsupported_response_type",
    error_description: "Only response_type=code is supported",
    state: "st",
    iss: TEST_ISSUER,
  });
  return "error-redirect";
}

describe("registration: ports and confidential loopback redirect URIs", () => {
  test("a port outside 1-65535 is refused: 422 on /clients, 400 invalid_redirect_uri at /auth/register", async (t) => {
    const setup = await setUp(t);
    await setup.store.create({
      email: "root@example.com",
      hashedPassword: (await createUser(setup.store, "ada@example.com", PASSWORD)).hashedPassword,
      isAdmin: true,
    });
    const admin = await loginToken(setup.app, "root@example.com", PASSWORD);
    const cases: [string, string][] = [
      ["redirect_uris", "http://127.0.0.1:99999/cb"],
      ["redirect_uris", "http://127.0.0.1:65536/cb"],
      ["redirect_uris", "http://127.0.0.1:0/cb"],
      ["redirect_uris", "https://app.example:0/cb"],
      ["redirect_uris", "http://[::1]:99999/cb"],
      ["post_logout_redirect_uris", "https://app.example:70000/bye"],
    ];
    for (const [field, uri] of cases) {
      const metadata = {
        client_name: "Ports",
        token_endpoint_auth_method: "none",
        redirect_uris: ["http://127.0.0.1/cb"],
        [field]: [uri],
      };
      const detail = `${field}: the port must be between 1 and 65535`;
      const byAdmin = await setup.app.inject({
        method: "POST",
        url: "/clients",
        headers: bearer(admin),
        payload: metadata,
      });
      assert.equal(byAdmin.statusCode, 422, uri);
      assert.deepEqual(byAdmin.json(), { detail });
      const dynamic = await setup.app.inject({
        method: "POST",
        url: "/auth/register",
        headers: bearer(REGISTRATION_TOKEN),
        payload: metadata,
      });
      assert.equal(dynamic.statusCode, 400, uri);
      assert.deepEqual(dynamic.json(), { error: "invalid_redirect_uri", error_description: detail, detail });
    }
    // The edges are allowed.
    const edges = await setup.app.inject({
      method: "POST",
      url: "/clients",
      headers: bearer(admin),
      payload: {
        client_name: "Edges",
        token_endpoint_auth_method: "none",
        redirect_uris: ["http://127.0.0.1:1/cb", "http://127.0.0.1:65535/cb"],
      },
    });
    assert.equal(edges.statusCode, 201, edges.body);
  });

  test("a confidential client may still register an http loopback URI (development), matched exactly", async (t) => {
    const setup = await setUp(t);
    const registered = await setup.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: bearer(REGISTRATION_TOKEN),
      payload: { client_name: "Dev", redirect_uris: ["http://127.0.0.1:3000/cb", "http://localhost:3000/cb"] },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    const { client_id, token_endpoint_auth_method } = registered.json();
    assert.equal(token_endpoint_auth_method, "client_secret_basic");
    for (const [uri, expected] of [
      ["http://127.0.0.1:3000/cb", "sign-in"],
      ["http://localhost:3000/cb", "sign-in"],
      ["http://127.0.0.1:3001/cb", "page"],
      ["http://127.0.0.1/cb", "page"],
      ["http://[::1]:3000/cb", "page"],
    ] as const) {
      const answer = await setup.app.inject({
        url: `/oauth/authorize?${new URLSearchParams(request(client_id, uri))}`,
      });
      assert.equal(outcomeOf(answer, uri), expected, uri);
    }
  });
});

describe("the authorization endpoint's redirect_uri", () => {
  test("the loopback any-port rule is a native app's only: a confidential client's loopback URI matches exactly", async (t) => {
    const setup = await setUp(t);
    const cases: [string, string, Outcome][] = [
      [setup.native, "http://127.0.0.1:51004/cb", "sign-in"],
      [setup.native, "http://[::1]:51004/cb", "sign-in"],
      [setup.web, "http://127.0.0.1:8080/cb", "sign-in"],
      [setup.web, "http://127.0.0.1:8081/cb", "page"],
      [setup.web, "http://127.0.0.1/cb", "page"],
      [setup.web, "http://127.0.0.1:51004/cb", "page"],
    ];
    for (const [clientId, uri, expected] of cases) {
      const answer = await setup.app.inject({ url: `/oauth/authorize?${new URLSearchParams(request(clientId, uri))}` });
      assert.equal(outcomeOf(answer, uri), expected, `${clientId === setup.web ? "web" : "native"} ${uri}`);
    }
  });

  test("a table of hostile redirect_uri values: each answered as expected, never a 5xx", async (t) => {
    const setup = await setUp(t);
    // For each value, a well-formed request (the sign-in page, or the error page) and one with an
    // error the client hears of (an error redirect to the URI, or the error page): the redirect is
    // where an impossible port used to answer 500.
    const table: ["native" | "web", string, "page" | "match"][] = [
      ["native", "http://127.0.0.1:0/cb", "page"],
      ["native", "http://127.0.0.1:65536/cb", "page"],
      ["native", "http://127.0.0.1:99999/cb", "page"],
      ["native", "http://127.0.0.1:999999/cb", "page"],
      ["native", "http://127.0.0.1:00080/cb", "page"],
      ["native", "http://127.0.0.1:/cb", "page"],
      ["native", "http://127.0.0.1:1/cb", "match"],
      ["native", "http://127.0.0.1:65535/cb", "match"],
      ["native", "http://[::1]:99999/cb", "page"],
      ["native", "http://[::1]:0/cb", "page"],
      ["native", "http://[::1]:8080/cb", "match"],
      ["native", "http://[0:0:0:0:0:0:0:1]:8080/cb", "page"],
      ["native", "http://[::ffff:127.0.0.1]:8080/cb", "page"],
      ["native", "http://[::ffff:7f00:1]/cb", "page"],
      ["native", "http://[::1%25eth0]:8080/cb", "page"],
      ["native", "http://[::1]]:8080/cb", "page"],
      ["native", "http://user:pass@127.0.0.1:8080/cb", "page"],
      ["native", "http://user@127.0.0.1/cb", "page"],
      ["native", "http://127.0.0.1:8080@evil.example/cb", "page"],
      ["native", "http://127.0.0.1:8080\\@evil.example/cb", "page"],
      ["native", "http://127.0.0.1.:8080/cb", "page"],
      ["native", "http://127.0.0.1%2e:8080/cb", "page"],
      ["native", "http://127.0.0.1:8080/%63b", "page"],
      ["native", "http://127.0.0.1:8080/cb%00", "page"],
      ["native", "http://127.0.0.1:8080/cb\n", "page"],
      ["native", "http://127.0.0.1:8080/cb/..", "page"],
      ["native", "http://2130706433:8080/cb", "page"],
      ["native", "http://0x7f.0.0.1:8080/cb", "page"],
      ["native", "http://localhost:8080/cb", "page"],
      ["native", "https://127.0.0.1:8080/cb", "page"],
      ["native", "com.example.desktop:/cb", "match"],
      ["native", "com.example.desktop://cb", "page"],
      ["native", "", "page"],
      ["web", "http://127.0.0.1:99999/cb", "page"],
      ["web", "http://127.0.0.1:0/cb", "page"],
      ["web", "http://127.0.0.1:8080/cb", "match"],
      ["web", "http://127.0.0.1:08080/cb", "page"],
      ["web", "https://rp.example/cb", "match"],
      ["web", "https://rp.example./cb", "page"],
      ["web", "https://rp.example/cb.", "page"],
      ["web", "https://RP.example/cb", "page"],
      ["web", "https://rp.example:443/cb", "page"],
      ["web", "https://rp.example:99999/cb", "page"],
      ["web", "https://rp.example/%63b", "page"],
      ["web", "https://user@rp.example/cb", "page"],
      ["web", "https://rp.example/cb#x", "page"],
      ["web", "https://rp.example%2fcb", "page"],
    ];
    // Every row is tried; the rows answered otherwise than the table says are listed at the end.
    const wrong: string[] = [];
    for (const [kind, uri, expected] of table) {
      const clientId = kind === "native" ? setup.native : setup.web;
      for (const [extra, wanted] of [
        [{}, expected === "page" ? "page" : "sign-in"],
        [{ response_type: "token" }, expected === "page" ? "page" : "error-redirect"],
      ] as const) {
        const answer = await setup.app.inject({
          url: `/oauth/authorize?${new URLSearchParams(request(clientId, uri, extra))}`,
        });
        let actual: string;
        try {
          actual = outcomeOf(answer, uri);
        } catch (error) {
          actual = `${answer.statusCode}: ${(error as Error).message.split("\n")[0]}`;
        }
        if (actual !== wanted) wrong.push(`${kind} ${JSON.stringify(uri)} ${JSON.stringify(extra)}: ${actual}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  test("a registered URI with an impossible port (stored by an older release): the error page, never a redirect or a 500", async (t) => {
    const setup = await setUp(t);
    for (const uri of ["http://127.0.0.1:99999/cb", "https://older.example:0/cb", "http://[::1]:65536/cb"]) {
      for (const extra of [{}, { response_type: "token" }, { prompt: "none" }] as Record<string, string>[]) {
        const answer = await setup.app.inject({
          url: `/oauth/authorize?${new URLSearchParams(request(setup.older, uri, extra))}`,
        });
        assert.equal(outcomeOf(answer, uri, NOT_USABLE), "page", `${uri} ${JSON.stringify(extra)}`);
      }
    }
  });
});
