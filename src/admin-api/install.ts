// The service-wide admin API (issue 35): what the admin console reads beyond
// the users, clients and webhooks resources: the whole audit log
// (GET /events, with its CSV and JSON Lines export), the dashboard's counts
// (GET /admin/overview) and the effective configuration (GET /admin/settings).
// Admins only, every answer uncached (platform/hardening.ts).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { serviceEventRoutes } from "./event-routes.ts";
import { overviewRoutes } from "./overview-routes.ts";
import { settingsRoutes } from "./settings-routes.ts";

export async function installAdminApi(
  api: FastifyInstance,
  { config, store, guards, clock, keys, oidcKeys }: Services,
): Promise<void> {
  await api.register(serviceEventRoutes, { store, guards, clock });
  await api.register(overviewRoutes, { store, guards, clock, keys, oidcKeys });
  await api.register(settingsRoutes, { config, guards, oidc: oidcKeys !== undefined });
}
