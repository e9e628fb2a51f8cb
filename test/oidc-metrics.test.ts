// The OAuth and OpenID Connect metrics: authorizations, code exchanges,
// client_credentials grants, introspections, userinfo, consent and logouts,
// each counted by outcome as requests happen, and never labelled by a client
// (no client id or secret in the exposition).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { createMetrics } from "../src/operations/metrics.ts";
import { bearer, requestToken } from "./helpers.ts";
import { authorizeCode, clientTokens, RP, redeemCode, setUp } from "./oidc/client-flow.ts";
import { pkcePair } from "./oidc/fixture.ts";

const COUNTERS = [
  "oidc_authorizations_total",
  "oidc_code_exchanges_total",
  "oauth_client_credentials_grants_total",
  "oauth_introspections_total",
  "oidc_userinfo_requests_total",
  "oidc_consents_total",
  "oidc_logouts_total",
];

/** Every sample of the seven counters, as "name{outcome}" -> value. */
async function samples(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const name of COUNTERS) {
    for (const line of (await metrics.registry.getSingleMetricAsString(name)).split("\n")) {
      const match = /^(\w+)\{outcome="(\w+)"\} (\d+)$/.exec(line);
      if (match) found[`${match[1]}{${match[2]}}`] = Number(match[3]);
    }
  }
  return found;
}

describe("OAuth and OpenID Connect metrics", () => {
  test("count each action by outcome, without naming a client", async (t) => {
    const metrics = createMetrics();
    const setup = await setUp(t, {}, { metrics });
    const { app, clients, cookie } = setup;
    const registry = createClientRegistry(setup.store, setup.clock.read);
    const service = await registry.register(
      clientMetadata({ client_name: "Orders API", grant_types: ["client_credentials"] }),
      { userId: null, clientAddress: null },
    );
    const serviceAuth = {
      authorization: `Basic ${Buffer.from(`${service.client.id}:${service.secret}`).toString("base64")}`,
    };
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const authorizeQuery = (fields: Record<string, string>) =>
      new URLSearchParams({
        response_type: "code",
        client_id: clients.partner.id,
        redirect_uri: `${RP}/callback`,
        scope: "openid email",
        code_challenge: pkcePair().challenge,
        code_challenge_method: "S256",
        state: "s",
        ...fields,
      }).toString();

    // Authorizations: a code, a sign-in, login_required, an error page, a POST retried as a GET, a consent page.
    const tokens = await clientTokens(setup, "partner");
    // Userinfo: success (before the consent is taken back below, which ends the app's sessions), no token.
    assert.equal((await app.inject({ url: "/oauth/userinfo", headers: bearer(tokens.access_token) })).statusCode, 200);
    assert.equal((await app.inject({ url: "/oauth/userinfo" })).statusCode, 401);
    await app.inject({ url: `/oauth/authorize?${authorizeQuery({})}` });
    await app.inject({ url: `/oauth/authorize?${authorizeQuery({ prompt: "none" })}` });
    await app.inject({ url: `/oauth/authorize?${authorizeQuery({ client_id: "nobody" })}` });
    await app.inject({ method: "POST", url: "/oauth/authorize", headers: form, payload: authorizeQuery({}) });
    const consentPage = await app.inject({
      url: `/oauth/authorize?${authorizeQuery({ prompt: "consent" })}`,
      headers: { cookie },
    });
    assert.equal(consentPage.statusCode, 200);

    // Consent: granted, denied, an expired form; revoked, then not found.
    const formToken = /name="form_token" value="([^"]+)"/.exec(consentPage.body)?.[1] as string;
    // The form answers the request its page was shown for (its token is bound to it).
    const shown = (/name="request" value="([^"]+)"/.exec(consentPage.body)?.[1] ?? "").replaceAll("&#38;", "&");
    const answer = (decision: string, token: string) =>
      app.inject({
        method: "POST",
        url: "/oauth/consent",
        headers: { ...form, cookie },
        payload: new URLSearchParams({ request: shown, decision, form_token: token }).toString(),
      });
    assert.equal((await answer("allow", formToken)).statusCode, 303);
    assert.equal((await answer("deny", formToken)).statusCode, 303);
    assert.equal((await answer("allow", "forged")).statusCode, 400);
    const own = bearer(setup.own.access_token);
    assert.equal(
      (await app.inject({ method: "DELETE", url: `/me/apps/${clients.partner.id}`, headers: own })).statusCode,
      204,
    );
    assert.equal(
      (await app.inject({ method: "DELETE", url: `/me/apps/${clients.partner.id}`, headers: own })).statusCode,
      404,
    );

    // Code exchanges: success (above), a code presented twice, a wrong verifier, a wrong secret.
    const spa = await authorizeCode(setup, "spa");
    assert.equal((await redeemCode(setup, "spa", spa.code, spa.verifier)).statusCode, 200);
    assert.equal((await redeemCode(setup, "spa", spa.code, spa.verifier)).statusCode, 400);
    const again = await authorizeCode(setup, "spa");
    assert.equal((await redeemCode(setup, "spa", again.code, pkcePair().verifier)).statusCode, 400);
    const wrongSecret = await requestToken(
      app,
      { grant_type: "authorization_code", code: "x", redirect_uri: `${RP}/callback`, code_verifier: "y" },
      { authorization: `Basic ${Buffer.from(`${clients.partner.id}:wrong`).toString("base64")}` },
    );
    assert.equal(wrongSecret.statusCode, 401);

    // client_credentials: success, a wrong secret, a scope it was not given.
    const granted = await requestToken(app, { grant_type: "client_credentials" }, serviceAuth);
    assert.equal(granted.statusCode, 200);
    await requestToken(
      app,
      { grant_type: "client_credentials", client_id: service.client.id, client_secret: "wrong" },
      {},
    );
    await requestToken(app, { grant_type: "client_credentials", scope: "admin" }, serviceAuth);

    // Introspection: active, inactive, a caller without credentials.
    const introspect = (token: string, headers: Record<string, string>) =>
      app.inject({
        method: "POST",
        url: "/auth/introspect",
        headers: { ...form, ...headers },
        payload: new URLSearchParams({ token }).toString(),
      });
    assert.equal((await introspect(granted.json().access_token, serviceAuth)).json().active, true);
    assert.equal((await introspect("not-a-token", serviceAuth)).json().active, false);
    assert.equal((await introspect("not-a-token", {})).statusCode, 401);

    // Logouts: the confirmation page, an ID token hint not ours, signed out.
    assert.equal((await app.inject({ url: "/oauth/logout", headers: { cookie } })).statusCode, 200);
    assert.equal((await app.inject({ url: "/oauth/logout?id_token_hint=x.y.z" })).statusCode, 400);
    assert.equal((await app.inject({ url: "/oauth/logout" })).statusCode, 200);

    assert.deepEqual(await samples(metrics), {
      "oidc_authorizations_total{code}": 3,
      "oidc_authorizations_total{sign_in}": 1,
      "oidc_authorizations_total{login_required}": 1,
      "oidc_authorizations_total{error_page}": 1,
      "oidc_authorizations_total{retry_as_get}": 1,
      "oidc_authorizations_total{consent_page}": 1,
      "oidc_consents_total{granted}": 1,
      "oidc_consents_total{denied}": 1,
      "oidc_consents_total{expired_form}": 1,
      "oidc_consents_total{revoked}": 1,
      "oidc_consents_total{not_found}": 1,
      "oidc_code_exchanges_total{success}": 2,
      "oidc_code_exchanges_total{replayed}": 1,
      "oidc_code_exchanges_total{invalid_grant}": 1,
      "oidc_code_exchanges_total{invalid_client}": 1,
      "oauth_client_credentials_grants_total{success}": 1,
      "oauth_client_credentials_grants_total{invalid_client}": 1,
      "oauth_client_credentials_grants_total{invalid_scope}": 1,
      "oauth_introspections_total{active}": 1,
      "oauth_introspections_total{inactive}": 1,
      "oauth_introspections_total{unauthorized}": 1,
      "oidc_userinfo_requests_total{success}": 1,
      "oidc_userinfo_requests_total{unauthorized}": 1,
      "oidc_logouts_total{confirmation_page}": 1,
      "oidc_logouts_total{error_page}": 1,
      "oidc_logouts_total{signed_out}": 1,
    });
    const exposition = await metrics.exposition();
    for (const secret of [clients.partner.id, clients.partner.secret, service.client.id, service.secret as string])
      assert.ok(!exposition.includes(secret), "no client id or secret in the metrics");
  });
});
