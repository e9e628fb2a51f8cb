// OAuth clients and OpenID Connect. Always: the clients resource (admins),
// dynamic client registration (RFC 7591) when DYNAMIC_CLIENT_REGISTRATION is
// on, and token introspection (RFC 7662) for resource servers and clients.
// While there is an RSA key for ID tokens (generated on SQLite;
// OIDC_SIGNING_KEY_FILE on PostgreSQL, or it stays off): the authorization
// endpoint and its browser session, userinfo, RP-initiated logout, the apps
// a user granted, the authorization_code grant, the refresh of the sessions
// clients started, and the back-channel logout worker (stopped when the app
// closes). The client registry itself is shared: the token endpoint
// authenticates clients too.
import type { FastifyInstance } from "fastify";
import { CONSOLE_CLIENT_ID } from "../admin/console-id.ts";
import { clientOf } from "../auth/sessions.ts";
import { refreshTokenGrant } from "../core/grants/refresh-token.ts";
import type { Services } from "../platform/services.ts";
import { createBackchannelLogoutSender } from "./backchannel-logout.ts";
import { createBrowserSessions } from "./browser-session.ts";
import { clientRoutes } from "./client-routes.ts";
import { createOidcGrants } from "./code-grant.ts";
import { authorizationCodeGrant } from "./grants/authorization-code.ts";
import { createIdTokens } from "./id-tokens.ts";
import { introspectRoutes } from "./introspection-routes.ts";
import { parRoutes } from "./par-routes.ts";
import { DEFAULT_PUSHED_REQUEST_LIFETIME_SECONDS } from "./par-settings.ts";
import { USERINFO_PATH } from "./paths.ts";
import { providerRoutes } from "./provider-routes.ts";
import { createPushedRequests } from "./pushed-requests.ts";
import { createReauthentication } from "./reauthentication.ts";
import { registrationRoutes } from "./registration-routes.ts";

export async function installOpenIdConnect(api: FastifyInstance, services: Services): Promise<void> {
  const { config, store, clock, guards, tokens, clients } = services;
  await installProvider(api, services);
  await api.register(clientRoutes, { clients, guards });
  if (config.dynamicRegistration)
    await api.register(registrationRoutes, {
      clients,
      initialAccessToken: config.dynamicRegistration.initialAccessToken,
      policy: config.dynamicRegistration,
    });
  await api.register(introspectRoutes, {
    store,
    guards,
    tokens,
    clients: config.introspectionClients,
    registry: clients,
    clock,
  });
}

/** The OpenID Provider's part, while there are keys for ID tokens. */
async function installProvider(
  api: FastifyInstance,
  {
    config,
    store,
    clock,
    limits,
    log,
    metrics,
    resolve,
    signingMaterial,
    oidcKeys,
    addresses,
    guards,
    tokens,
    sessions,
    clients,
    clientCors,
    audit,
    grants,
    grantDeps,
    dpop,
  }: Services,
): Promise<void> {
  if (!oidcKeys) return;
  const idTokens = createIdTokens(oidcKeys, addresses.issuer, clock);
  // The outbound settings and guard are the webhooks': both POST to addresses that admins (or a
  // dynamic registration) typed.
  const logoutSender = createBackchannelLogoutSender({
    store,
    idTokens,
    settings: config.webhooks,
    clock,
    log,
    resolve,
    ...(metrics ? { onDelivery: (result) => metrics.observeBackchannelLogout(result) } : {}),
  });
  api.addHook("onClose", async function stopBackchannelLogoutSender() {
    await logoutSender.stop();
  });
  const userinfoUrl = () => `${addresses.baseUrl()}${USERINFO_PATH}`;
  // ADMIN_CONSOLE_REQUIRE_MFA (issue 35): the console's tokens only for a sign-in with a second factor, and
  // its authorization requests send a session without one to sign in again (oidc/second-factor-rule.ts).
  const secondFactorRule =
    config.adminConsole?.enabled && config.adminConsole.requireMfa
      ? { secondFactorRequired: new Set([CONSOLE_CLIENT_ID]) }
      : {};
  const oidc = createOidcGrants({
    store,
    sessions,
    tokens,
    idTokens,
    clients,
    audit,
    clock,
    clientInfo: clientOf,
    userinfoUrl,
    // Issue 35: the admin console's tokens open the admin API (admin/console-client.ts).
    ...(config.adminConsole?.enabled ? { serviceApps: new Set([CONSOLE_CLIENT_ID]) } : {}),
    ...secondFactorRule,
  });
  // The refresh grant, in its place in the table, refreshes the sessions clients started as well.
  grants.add(refreshTokenGrant({ ...grantDeps, oidc }));
  grants.add(authorizationCodeGrant(oidc));
  const browserSessions = createBrowserSessions({
    store,
    signingMaterial,
    secure: addresses.baseUrl().startsWith("https:"),
    clock,
  });
  const reauthentication = createReauthentication({
    browserSessions,
    secure: addresses.baseUrl().startsWith("https:"),
    clock,
  });
  // Pushed authorization requests (RFC 9126, issue 36): the push endpoint, and the request_uri the
  // authorization endpoint takes.
  const pushedRequests = createPushedRequests({
    store,
    browserSessions,
    clock,
    requiredForAll: config.pushedAuthorizationRequests?.required ?? false,
    lifetimeSeconds: config.pushedAuthorizationRequests?.lifetimeSeconds ?? DEFAULT_PUSHED_REQUEST_LIFETIME_SECONDS,
  });
  await api.register(parRoutes, { clients, pushedRequests, audit, cors: clientCors, limits });
  await api.register(providerRoutes, {
    store,
    guards,
    tokens,
    sessions,
    clients,
    browserSessions,
    reauthentication,
    idTokens,
    audit,
    issuer: addresses.issuer,
    userinfoUrl,
    clock,
    cors: clientCors,
    pushedRequests,
    dpop,
    ...secondFactorRule,
  });
}
