// Client sessions through the code flow, for the tests of what a client may do with them
// (revocation, the session cap): a user signed in with a browser session, registered clients
// (test/oidc/fixture.ts) with the partner's consent given, each client's authentication as it
// registered, and a client's tokens from one authorization and code exchange.
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { Config } from "../../src/config.ts";
import type { Metrics } from "../../src/operations/metrics.ts";
import type { Resolve } from "../../src/outbound/guard.ts";
import { bearer, buildTestApp, createUser, requestToken } from "../helpers.ts";
import { OIDC_KEY, pkcePair, registerClients, type TestClients } from "./fixture.ts";

export const RP = "https://rp.example";
export const PASSWORD = "correct horse battery";
export const EMPTY_SWAGGER_BASIC = `Basic ${Buffer.from(":").toString("base64")}`;

export type ClientKey = keyof TestClients;

export async function setUp(
  t: TestContext,
  config: Partial<Config> = {},
  extra: { metrics?: Metrics; resolve?: Resolve } = {},
) {
  const built = await buildTestApp(t, { oidcSigningKeys: [OIDC_KEY], ...config }, extra);
  const clients = await registerClients(built.store, RP);
  const user = await createUser(built.store, "ada@example.com", PASSWORD);
  const login = await requestToken(built.app, { username: "ada@example.com", password: PASSWORD });
  const opened = await built.app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
  const at = new Date().toISOString();
  await built.store.grantConsent(user.id, clients.partner.id, "openid email", at);
  return { ...built, clients, user, cookie, own: login.json() as { access_token: string; refresh_token: string } };
}
export type Setup = Awaited<ReturnType<typeof setUp>>;

export const REDIRECTS: Record<ClientKey, string> = {
  partner: `${RP}/callback`,
  spa: `${RP}/spa/callback`,
  post: `${RP}/post/callback`,
};

/** How each test client authenticates at the token and revocation endpoints (as it registered). */
export function credentials(
  setup: Setup,
  key: ClientKey,
): { headers: Record<string, string>; fields: Record<string, string> } {
  if (key === "partner") {
    const { id, secret } = setup.clients.partner;
    return { headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` }, fields: {} };
  }
  if (key === "post") {
    const { id, secret } = setup.clients.post;
    return { headers: {}, fields: { client_id: id, client_secret: secret } };
  }
  return { headers: {}, fields: { client_id: setup.clients.spa.id } };
}

/** A code for a client through the authorization endpoint (the browser session open, consent given). */
export async function authorizeCode(
  setup: Setup,
  key: ClientKey,
  extra: Record<string, string> = {},
): Promise<{ code: string; verifier: string }> {
  const pkce = pkcePair();
  const query = new URLSearchParams({
    response_type: "code",
    client_id: setup.clients[key].id,
    redirect_uri: REDIRECTS[key],
    scope: "openid email",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    state: "s",
    ...extra,
  });
  const answer = await setup.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie: setup.cookie } });
  assert.equal(answer.statusCode, 303, answer.body);
  const code = new URL(answer.headers.location as string).searchParams.get("code") as string;
  return { code, verifier: pkce.verifier };
}

/** The code exchange of a client, authenticated as it registered. */
export function redeemCode(setup: Setup, key: ClientKey, code: string, verifier: string) {
  const { headers, fields } = credentials(setup, key);
  return requestToken(
    setup.app,
    { grant_type: "authorization_code", code, redirect_uri: REDIRECTS[key], code_verifier: verifier, ...fields },
    headers,
  );
}

/** A client's tokens through the code flow (the browser session already open, consent given). */
export async function clientTokens(
  setup: Setup,
  key: ClientKey,
): Promise<{ access_token: string; refresh_token: string }> {
  const { code, verifier } = await authorizeCode(setup, key);
  const redeemed = await redeemCode(setup, key, code, verifier);
  assert.equal(redeemed.statusCode, 200, redeemed.body);
  return redeemed.json();
}

/** Whether the session of this refresh token is still live: the client refreshes it (and keeps the successor). */
export async function stillLive(
  setup: Setup,
  key: ClientKey | "own",
  tokens: { refresh_token: string },
): Promise<boolean> {
  const { headers, fields } = key === "own" ? { headers: {}, fields: {} } : credentials(setup, key);
  const answer = await requestToken(
    setup.app,
    { grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...fields },
    headers,
  );
  if (answer.statusCode === 200) tokens.refresh_token = answer.json().refresh_token;
  return answer.statusCode === 200;
}
