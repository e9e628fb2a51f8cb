// The device authorization grant (RFC 8628, issue 36): for command-line
// tools, TVs and other devices without a browser. While OpenID Connect is on
// (its keys sign the ID tokens, its browser session says who approves): the
// device authorization endpoint, the /device page where a person signs in
// and approves, and the token endpoint's device_code grant, added to the
// grant table after the authorization_code grant (discovery publishes it
// and the endpoint). Every state lives in the store, so a code approved on
// one instance is redeemed on another; wrong codes are counted in the shared
// rate-limit counters.
import type { FastifyInstance } from "fastify";
import { clientOf } from "../auth/sessions.ts";
import { createBrowserSessions } from "../oidc/browser-session.ts";
import { createIdTokens } from "../oidc/id-tokens.ts";
import { USERINFO_PATH } from "../oidc/paths.ts";
import type { Services } from "../platform/services.ts";
import { deviceAuthorizationRoutes } from "./authorization-routes.ts";
import { deviceCodeGrant } from "./grant.ts";
import { devicePageRoutes } from "./page-routes.ts";
import { DEFAULT_DEVICE_SETTINGS } from "./settings.ts";

export async function installDevice(
  api: FastifyInstance,
  {
    config,
    store,
    clock,
    counters,
    limits,
    signingMaterial,
    oidcKeys,
    addresses,
    tokens,
    sessions,
    clients,
    audit,
    grants,
  }: Services,
): Promise<void> {
  if (!oidcKeys) return;
  const settings = config.device ?? DEFAULT_DEVICE_SETTINGS;
  const secure = addresses.baseUrl().startsWith("https:");
  const idTokens = createIdTokens(oidcKeys, addresses.issuer, clock);
  grants.add(
    deviceCodeGrant({
      store,
      sessions,
      tokens,
      idTokens,
      audit,
      clock,
      clientInfo: clientOf,
      userinfoUrl: () => `${addresses.baseUrl()}${USERINFO_PATH}`,
      counters,
    }),
  );
  await api.register(deviceAuthorizationRoutes, {
    store,
    clients,
    audit,
    settings,
    clock,
    limits,
    baseUrl: () => addresses.baseUrl(),
  });
  // The authorization endpoint's browser session: the same cookie, read with the same keys.
  const browserSessions = createBrowserSessions({ store, signingMaterial, secure, clock });
  await api.register(devicePageRoutes, { store, clients, browserSessions, counters, audit, clock });
}
