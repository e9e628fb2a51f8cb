// Builds the whole service from its inputs: buildApp({ config, store, clock })
// returns a ready Fastify instance and touches no process state, so tests
// build their own on an in-memory store and call inject(). This file is the
// table of contents of the service, in registration order: the instance and
// its hardening, the shared services, then one install per capability, each
// in its own folder (src/<capability>/install.ts) with its routes, hooks and
// workers. The API routes share one encapsulated context, which documents
// the statuses every API route can answer; every answer is uncached unless
// its route says otherwise (platform/hardening.ts).
//
// A new capability is a folder with an install.ts and one line below; if it
// brings a grant of the token endpoint, its install adds it to the grant
// table (core/grants/registry.ts), and discovery publishes it.
import type { FastifyInstance } from "fastify";
import type { DestinationStream } from "pino";
import { installAdminConsole } from "./admin/install.ts";
import { installAdminApi } from "./admin-api/install.ts";
import type { CounterStore } from "./auth/rate-limits.ts";
import type { Clock } from "./auth/tokens.ts";
import { installBranding, installBrandingApi } from "./branding/install.ts";
import type { Config } from "./config.ts";
import { installCore } from "./core/install.ts";
import { installDevice } from "./device/install.ts";
import { installDiscovery } from "./discovery/install.ts";
import { installFactors } from "./factors/install.ts";
import { installOpenIdConnect } from "./oidc/install.ts";
import { installOperations } from "./operations/install.ts";
import type { Metrics } from "./operations/metrics.ts";
import { type Resolve, systemResolve } from "./outbound/guard.ts";
import { installPages } from "./pages/install.ts";
import { installPasswordless } from "./passwordless/install.ts";
import { documentCommonResponses } from "./platform/common-responses.ts";
import { harden } from "./platform/hardening.ts";
import { createInstance } from "./platform/instance.ts";
import { createServices } from "./platform/services.ts";
import { installRecovery } from "./recovery/install.ts";
import { installSessions } from "./sessions/install.ts";
import type { UserStore } from "./store/store.ts";
import { installUpstream } from "./upstream/install.ts";
import { installUsers } from "./users/install.ts";
import { installWebhooks } from "./webhooks/install.ts";

export interface AppOptions {
  config: Config;
  store: UserStore;
  clock?: Clock;
  /** Where rate-limit counters live; in this process unless given. */
  counters?: CounterStore;
  /** Prometheus metrics to record into; none are recorded (and no hook runs) without it. */
  metrics?: Metrics;
  /** Where log lines go (standard output unless given; tests capture them here). */
  logStream?: DestinationStream;
  /**
   * Aborted when the process starts draining (SIGTERM): from then on /readyz answers 503 and every
   * response carries `Connection: close`, so each keep-alive connection ends cleanly after its next
   * answer instead of being cut while a request may be on its way.
   */
  draining?: AbortSignal;
  /**
   * The DNS of the outbound guard (webhooks, back-channel logout): the system's resolver unless given.
   * Tests give one to make a host name resolve one way at registration and another at delivery.
   */
  resolve?: Resolve;
}

export async function buildApp({
  config,
  store,
  clock = Date.now,
  counters,
  logStream,
  metrics,
  draining,
  resolve = systemResolve,
}: AppOptions): Promise<FastifyInstance> {
  // The instance: logger, limits and timeouts, parsers, the error handler; then the hooks every answer
  // passes through (common headers, lingering close, draining, access log, CORS).
  const app = createInstance(config, { metrics, logStream });
  await harden(app, config, draining);
  const services = createServices(app, { config, store, clock, counters, metrics, draining, resolve });

  // First: the OpenAPI document lists the routes registered after it. Then the docs page, metrics,
  // housekeeping and the health probes.
  await installOperations(app, services);
  // Before the pages: the brand is filled into every page as it is sent.
  await installBranding(app, services);
  await installPages(app, services);
  await installDiscovery(app, services);
  await installAdminConsole(app, services);

  await app.register(async function apiRoutes(api) {
    documentCommonResponses(api);
    await installCore(api, services);
    await installSessions(api, services);
    await installUsers(api, services);
    await installRecovery(api, services);
    await installPasswordless(api, services);
    await installFactors(api, services);
    await installUpstream(api, services);
    await installOpenIdConnect(api, services);
    await installDevice(api, services);
    await installWebhooks(api, services);
    await installAdminApi(api, services);
    await installBrandingApi(api, services);
  });

  await app.ready();
  return app;
}
