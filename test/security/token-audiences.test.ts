// Tokens presented where they were not meant for (issue 32, defects 3, 4, 10, 11 and 12's
// introspection point), as an attacker and a careful relying party try them, through HTTP:
// - a relying party's token and a client's own token carry audiences of their own, never the
//   service's first-party audience, and no internal claim; /me refuses them, a resource server that
//   checks its audience as the README says refuses them, userinfo takes only a relying party's;
// - a client asks only for the resources an admin registered for it (RFC 8707 invalid_target);
// - introspection shows every token only to resource servers and admins; another client sees its own
//   tokens, and `{"active": false}` for a user's first-party token or another client's;
// - a registered client's refresh refusals are RFC 6749's; revocation takes what the token endpoint
//   takes from a first-party app (simple-oauth2's `Basic app-id:`).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { jwtVerify } from "jose";
import { clientMetadata, createClientRegistry, metadataInputOf } from "../../src/oidc/clients.ts";
import { DEFAULT_DYNAMIC_GRANT_TYPES, DEFAULT_DYNAMIC_SCOPES } from "../../src/oidc/registration-policy.ts";
import { bearer, requestToken, TEST_AUDIENCE, TEST_ISSUER, TEST_SECRET } from "../helpers.ts";
import { authorizeCode, clientTokens, credentials, REDIRECTS, type Setup, setUp } from "../oidc/client-flow.ts";

const INVOICES = "https://invoices.example";
const REPORTS = "https://reports.example";
const BY = { userId: null, clientAddress: null };

const payloadOf = (token: string) =>
  JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as Record<string, unknown>;
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
});
const form = { "content-type": "application/x-www-form-urlencoded" };

/** The userinfo endpoint as discovery names it: the audience of a relying party's token. */
async function userinfoUrl(setup: Setup): Promise<string> {
  const discovery = await setup.app.inject({ url: "/.well-known/openid-configuration" });
  return discovery.json().userinfo_endpoint as string;
}

/** A confidential client_credentials client, registered straight in the store. */
async function service(setup: Setup, extra: Parameters<typeof clientMetadata>[0] = {}) {
  const registry = createClientRegistry(setup.store);
  const registered = await registry.register(
    clientMetadata({ client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:read", ...extra }),
    BY,
  );
  return { id: registered.client.id, secret: registered.secret as string };
}

function introspect(setup: Setup, token: string, headers: Record<string, string>) {
  return setup.app.inject({
    method: "POST",
    url: "/auth/introspect",
    headers: { ...form, ...headers },
    payload: new URLSearchParams({ token }).toString(),
  });
}

/** What a resource server that follows the README does with an HS256 token: iss, aud, typ, algorithm. */
async function resourceServerAccepts(token: string, audience = TEST_AUDIENCE): Promise<boolean> {
  try {
    await jwtVerify(token, new TextEncoder().encode(TEST_SECRET), {
      issuer: TEST_ISSUER,
      audience,
      algorithms: ["HS256"],
      typ: "at+jwt",
    });
    return true;
  } catch {
    return false;
  }
}

const COULD_NOT_VALIDATE = { detail: "Could not validate credentials" };

describe("token audiences: each kind of token only where it is meant for", () => {
  test("a relying party's token: aud is userinfo, no stamp; /me and a first-party resource server refuse it; userinfo takes it", async (t) => {
    const setup = await setUp(t);
    const userinfo = await userinfoUrl(setup);
    const { access_token } = await clientTokens(setup, "partner");
    const claims = payloadOf(access_token);
    assert.deepEqual(claims, {
      iss: TEST_ISSUER,
      sub: setup.user.id,
      aud: userinfo,
      iat: claims.iat,
      exp: (claims.iat as number) + 1800,
      jti: claims.jti,
      client_id: setup.clients.partner.id,
      scope: "openid email",
      sid: claims.sid,
      amr: ["pwd"],
    });
    assert.equal("stamp" in claims, false, "no internal claim leaves the service in a third party's token");

    const me = await setup.app.inject({ url: "/me", headers: bearer(access_token) });
    assert.equal(me.statusCode, 401);
    assert.equal(me.headers["www-authenticate"], "Bearer");
    assert.deepEqual(me.json(), COULD_NOT_VALIDATE);
    assert.equal(await resourceServerAccepts(access_token), false);
    // The user's own token is still what such a resource server takes.
    assert.equal(await resourceServerAccepts(setup.own.access_token), true);

    const answer = await setup.app.inject({ url: "/oauth/userinfo", headers: bearer(access_token) });
    assert.equal(answer.statusCode, 200);
    assert.deepEqual(answer.json(), { sub: setup.user.id, email: "ada@example.com", email_verified: false });
  });

  test("userinfo refuses a first-party token and a client's own token", async (t) => {
    const setup = await setUp(t);
    const billing = await service(setup, { resources: [INVOICES] });
    const own = await requestToken(setup.app, { grant_type: "client_credentials" }, basic(billing.id, billing.secret));
    for (const [name, token] of [
      ["first-party", setup.own.access_token],
      ["client_credentials", own.json().access_token],
    ] as const) {
      const answer = await setup.app.inject({ url: "/oauth/userinfo", headers: bearer(token) });
      assert.equal(answer.statusCode, 401, name);
      assert.equal(answer.headers["www-authenticate"], 'Bearer error="invalid_token"', name);
      assert.deepEqual(answer.json(), COULD_NOT_VALIDATE, name);
    }
  });

  test("a relying party's registered resources: in aud by default, one asked with resource, any other invalid_target (the code still works)", async (t) => {
    const setup = await setUp(t);
    const userinfo = await userinfoUrl(setup);
    const registry = createClientRegistry(setup.store);
    const current = await setup.store.findClient(setup.clients.partner.id);
    assert.ok(current);
    const metadata = clientMetadata({ ...metadataInputOf(current), resources: [INVOICES, REPORTS] });
    await registry.update(setup.clients.partner.id, metadata, BY);

    const all = await clientTokens(setup, "partner");
    assert.deepEqual(payloadOf(all.access_token).aud, [userinfo, INVOICES, REPORTS]);
    assert.equal(await resourceServerAccepts(all.access_token, INVOICES), true);

    const { code, verifier } = await authorizeCode(setup, "partner");
    const { headers } = credentials(setup, "partner");
    const exchange = (resource: string) =>
      requestToken(
        setup.app,
        { grant_type: "authorization_code", code, redirect_uri: REDIRECTS.partner, code_verifier: verifier, resource },
        headers,
      );
    const refused = await exchange("https://elsewhere.example");
    assert.equal(refused.statusCode, 400);
    assert.deepEqual(refused.json(), {
      error: "invalid_target",
      error_description: "The requested resource is not one this client is registered for",
      detail: "The requested resource is not one this client is registered for",
    });
    const narrowed = await exchange(INVOICES);
    assert.equal(narrowed.statusCode, 200, "the refused request did not spend the code");
    assert.deepEqual(payloadOf(narrowed.json().access_token).aud, [userinfo, INVOICES]);

    // The refresh takes the same parameter, and refuses the same way without spending the refresh token.
    const refresh = (resource: string) =>
      requestToken(
        setup.app,
        { grant_type: "refresh_token", refresh_token: narrowed.json().refresh_token, resource },
        headers,
      );
    assert.equal((await refresh(setup.clients.partner.id)).json().error, "invalid_target");
    const refreshed = await refresh(REPORTS);
    assert.equal(refreshed.statusCode, 200);
    assert.deepEqual(payloadOf(refreshed.json().access_token).aud, [userinfo, REPORTS]);
  });

  test("a client's own token: its resources or its own id, never the service's audience; /me refuses it", async (t) => {
    const setup = await setUp(t);
    const bare = await service(setup);
    const token = (
      await requestToken(setup.app, { grant_type: "client_credentials" }, basic(bare.id, bare.secret))
    ).json().access_token as string;
    assert.equal(payloadOf(token).aud, bare.id);
    assert.equal(await resourceServerAccepts(token), false);
    const me = await setup.app.inject({ url: "/me", headers: bearer(token) });
    assert.equal(me.statusCode, 401);
    assert.deepEqual(me.json(), COULD_NOT_VALIDATE);

    const billing = await service(setup, { client_name: "Billing 2", resources: [INVOICES, REPORTS] });
    const ask = (fields: Record<string, string>) =>
      requestToken(setup.app, { grant_type: "client_credentials", ...fields }, basic(billing.id, billing.secret));
    assert.deepEqual(payloadOf((await ask({})).json().access_token).aud, [INVOICES, REPORTS]);
    const one = (await ask({ resource: INVOICES })).json().access_token as string;
    assert.equal(payloadOf(one).aud, INVOICES);
    assert.equal(await resourceServerAccepts(one, INVOICES), true);
    assert.equal(await resourceServerAccepts(one, REPORTS), false);
    const refused = await ask({ resource: TEST_AUDIENCE });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.headers["cache-control"], "no-store");
    assert.deepEqual(refused.json(), {
      error: "invalid_target",
      error_description: "The requested resource is not one this client is registered for",
      detail: "The requested resource is not one this client is registered for",
    });
  });

  test("an admin cannot make the service's own audience a client's resource (422); a registrant cannot set resources", async (t) => {
    const setup = await setUp(t, {
      dynamicRegistration: {
        initialAccessToken: "registration-token-of-32-bytes-at-least!",
        grantTypes: DEFAULT_DYNAMIC_GRANT_TYPES,
        scopes: DEFAULT_DYNAMIC_SCOPES,
      },
    });
    await setup.store.update(setup.user.id, { isAdmin: true });
    const admin = (
      await requestToken(setup.app, { username: "ada@example.com", password: "correct horse battery" })
    ).json().access_token as string;
    for (const reserved of [TEST_AUDIENCE, TEST_ISSUER, `${TEST_ISSUER}/`]) {
      const answer = await setup.app.inject({
        method: "POST",
        url: "/clients",
        headers: bearer(admin),
        payload: { client_name: "Sneaky", grant_types: ["client_credentials"], resources: [reserved] },
      });
      assert.equal(answer.statusCode, 422, reserved);
      assert.deepEqual(answer.json(), {
        detail: `resources: '${reserved}' is this service's own audience (its first-party tokens'), not a client's`,
      });
    }
    for (const bad of ["http://invoices.example", "invoices", "https://invoices.example/#x"]) {
      const answer = await setup.app.inject({
        method: "POST",
        url: "/clients",
        headers: bearer(admin),
        payload: { client_name: "Bad", grant_types: ["client_credentials"], resources: [bad] },
      });
      assert.equal(answer.statusCode, 422, bad);
      assert.match(answer.json().detail, /^resources: /);
    }

    const registered = await setup.app.inject({
      method: "POST",
      url: "/auth/register",
      headers: bearer("registration-token-of-32-bytes-at-least!"),
      payload: {
        client_name: "Registrant",
        redirect_uris: ["https://registrant.example/cb"],
        resources: [INVOICES],
        resource_server: true,
      },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    assert.deepEqual([registered.json().resources, registered.json().resource_server], [[], false]);
  });
});

describe("introspection: who may see which token (RFC 7662 section 4)", () => {
  test("an ordinary client sees only its own tokens: a user's first-party token and another client's are inactive", async (t) => {
    const setup = await setUp(t);
    const billing = await service(setup);
    const other = await service(setup, { client_name: "Other" });
    const billingToken = (
      await requestToken(setup.app, { grant_type: "client_credentials" }, basic(billing.id, billing.secret))
    ).json().access_token as string;
    const otherToken = (
      await requestToken(setup.app, { grant_type: "client_credentials" }, basic(other.id, other.secret))
    ).json().access_token as string;
    const partnerTokens = await clientTokens(setup, "partner");
    const asBilling = basic(billing.id, billing.secret);
    for (const [name, token] of [
      ["a user's first-party token", setup.own.access_token],
      ["another client's own token", otherToken],
      ["a relying party's token", partnerTokens.access_token],
    ] as const) {
      const answer = await introspect(setup, token, asBilling);
      assert.equal(answer.statusCode, 200, name);
      assert.deepEqual(answer.json(), { active: false }, name);
    }
    const own = await introspect(setup, billingToken, asBilling);
    assert.equal(own.json().active, true);
    assert.equal(own.json().client_id, billing.id);
  });

  test("a relying party introspects its own code-flow token: active, its client and scope, no e-mail; inactive after logout", async (t) => {
    const setup = await setUp(t);
    const userinfo = await userinfoUrl(setup);
    const tokens = await clientTokens(setup, "partner");
    const claims = payloadOf(tokens.access_token);
    const asPartner = credentials(setup, "partner").headers;
    const answer = await introspect(setup, tokens.access_token, asPartner);
    assert.equal(answer.statusCode, 200);
    assert.deepEqual(answer.json(), {
      active: true,
      token_type: "Bearer",
      client_id: setup.clients.partner.id,
      scope: "openid email",
      sub: setup.user.id,
      iss: TEST_ISSUER,
      aud: userinfo,
      iat: claims.iat,
      exp: claims.exp,
      jti: claims.jti,
    });
    // Revoked through its client: its session ends, and the token introspects inactive at once.
    const revoked = await setup.app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { ...form, ...asPartner },
      payload: new URLSearchParams({ token: tokens.access_token }).toString(),
    });
    assert.equal(revoked.statusCode, 200);
    assert.deepEqual((await introspect(setup, tokens.access_token, asPartner)).json(), { active: false });
  });

  test("a client an admin marked resource_server sees every token, as INTROSPECTION_CLIENTS do", async (t) => {
    const setup = await setUp(t);
    const gateway = await service(setup, { client_name: "Gateway", resource_server: true });
    const partnerTokens = await clientTokens(setup, "partner");
    const asGateway = basic(gateway.id, gateway.secret);
    const user = await introspect(setup, setup.own.access_token, asGateway);
    assert.equal(user.json().active, true);
    assert.equal(user.json().username, "ada@example.com");
    const relyingParty = await introspect(setup, partnerTokens.access_token, asGateway);
    assert.equal(relyingParty.json().active, true);
    assert.equal(relyingParty.json().client_id, setup.clients.partner.id);
  });
});

describe("refresh and revocation answers for registered clients and first-party apps", () => {
  test("a confidential client's made-up or foreign refresh token: 400 invalid_grant, and a user's own stays usable", async (t) => {
    const setup = await setUp(t);
    const { headers, fields } = credentials(setup, "partner");
    const invalidGrant = {
      error: "invalid_grant",
      error_description: "Invalid or expired refresh token",
      detail: "Invalid or expired refresh token",
    };
    for (const [name, refreshToken] of [
      ["made up", "made-up-refresh-token"],
      ["the user's own (first-party)", setup.own.refresh_token],
    ] as const) {
      const answer = await requestToken(
        setup.app,
        { grant_type: "refresh_token", refresh_token: refreshToken, ...fields },
        headers,
      );
      assert.equal(answer.statusCode, 400, name);
      assert.equal(answer.headers["cache-control"], "no-store", name);
      assert.deepEqual(answer.json(), invalidGrant, name);
    }
    // Not spent by the client's attempt: the first-party app refreshes it as before.
    const own = await requestToken(setup.app, { grant_type: "refresh_token", refresh_token: setup.own.refresh_token });
    assert.equal(own.statusCode, 200);
    // A public client (its id alone) is refused the same way.
    const spa = await requestToken(setup.app, {
      grant_type: "refresh_token",
      refresh_token: "made-up-refresh-token",
      client_id: setup.clients.spa.id,
    });
    assert.equal(spa.statusCode, 400);
    assert.deepEqual(spa.json(), invalidGrant);
    // No registered client named: the spec-style answer, to the byte.
    const firstParty = await requestToken(setup.app, { grant_type: "refresh_token", refresh_token: "made-up" });
    assert.equal(firstParty.statusCode, 401);
    assert.equal(firstParty.headers["www-authenticate"], "Bearer");
    assert.deepEqual(firstParty.json(), { detail: "Invalid or expired refresh token" });
  });

  test("simple-oauth2's `Basic app-id:` (no such client, empty secret): the token endpoint and revocation both take it", async (t) => {
    const setup = await setUp(t);
    const simpleOauth2 = basic("app-id", "");
    const login = await requestToken(
      setup.app,
      { username: "ada@example.com", password: "correct horse battery" },
      simpleOauth2,
    );
    assert.equal(login.statusCode, 200);
    const revoked = await setup.app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { ...form, ...simpleOauth2 },
      payload: new URLSearchParams({ token: login.json().refresh_token }).toString(),
    });
    assert.equal(revoked.statusCode, 200);
    assert.deepEqual(revoked.json(), {});
    const spent = await requestToken(
      setup.app,
      { grant_type: "refresh_token", refresh_token: login.json().refresh_token },
      simpleOauth2,
    );
    assert.equal(spent.statusCode, 401);
    assert.deepEqual(spent.json(), { detail: "Invalid or expired refresh token" });
    // A registered client's id with a wrong secret is still a failed client authentication.
    const wrong = await setup.app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { ...form, ...basic(setup.clients.partner.id, "wrong") },
      payload: new URLSearchParams({ token: setup.own.refresh_token }).toString(),
    });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().error, "invalid_client");
  });
});
