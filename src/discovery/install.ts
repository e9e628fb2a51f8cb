// Discovery: what other services read to trust this one, at the root and
// cacheable (outside the API's never-cached context). The JWK Set (the keys
// of access tokens, and of ID tokens while OpenID Connect is on), the
// authorization server metadata (RFC 8414) and, while OpenID Connect is on,
// the OpenID configuration, true to what the capabilities installed: every
// grant of the token endpoint's table, read when asked.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { wellKnownRoutes } from "./well-known-routes.ts";

export async function installDiscovery(
  app: FastifyInstance,
  { config, keys, oidcKeys, addresses, clientCors, grants }: Services,
): Promise<void> {
  await app.register(wellKnownRoutes, {
    keys,
    addresses,
    cors: clientCors,
    grantTypes: () => grants.types(),
    registration: config.dynamicRegistration !== undefined,
    requirePushedAuthorizationRequests: config.pushedAuthorizationRequests?.required ?? false,
    ...(oidcKeys ? { oidcKeys } : {}),
  });
}
