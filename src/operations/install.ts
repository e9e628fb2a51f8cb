// Operations: what an operator and a load balancer see of the service. The
// OpenAPI document and the docs page (first, because the document lists the
// routes registered after it, and the headers every documented answer
// carries), the request metrics when they are on, the database's
// housekeeping (stopped when the app closes), and the health probes.
import type { FastifyInstance } from "fastify";
import { documentResponseHeaders } from "../platform/common-responses.ts";
import type { Services } from "../platform/services.ts";
import { registerDocs } from "./docs.ts";
import { healthRoutes } from "./health-routes.ts";
import { startHousekeeping } from "./housekeeping.ts";
import { recordRequestMetrics } from "./request-metrics.ts";

export async function installOperations(
  app: FastifyInstance,
  { config, store, clock, metrics, counters, draining }: Services,
): Promise<void> {
  await registerDocs(app);
  documentResponseHeaders(app);
  if (metrics) recordRequestMetrics(app, metrics);
  startHousekeeping(app, store, clock, config.auditRetentionDays);
  await app.register(healthRoutes, { store, counters, ...(draining ? { draining } : {}) });
}
