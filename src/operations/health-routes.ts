// Probes for load balancers and orchestrators: /healthz answers while the
// process lives; /readyz answers 200 only while the database and the shared
// counters can be reached and the process is not draining, and 503 otherwise,
// so traffic moves elsewhere.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { CounterStore } from "../auth/rate-limits.ts";
import { HttpError, SERVICE_UNAVAILABLE, SHUTTING_DOWN } from "../errors.ts";
import { errorResponse, NO_SECURITY } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";

export interface HealthRouteOptions {
  store: UserStore;
  counters: CounterStore;
  /** Aborted once the process drains (SIGTERM): readiness fails at once, liveness does not. */
  draining?: AbortSignal;
}

const Status = (status: string) =>
  Type.Object({ status: Type.Literal(status) }, { examples: [{ status }], description: `The literal "${status}".` });

export const healthRoutes: FastifyPluginAsyncTypebox<HealthRouteOptions> = async (
  app,
  { store, counters, draining },
) => {
  app.get(
    "/healthz",
    {
      logLevel: "warn",
      schema: {
        operationId: "liveness",
        security: NO_SECURITY,
        tags: ["health"],
        summary: "Liveness",
        description: "200 while the process is alive and serving. Touches no store.",
        response: { 200: Status("ok") },
      },
    },
    async function liveness() {
      return { status: "ok" as const };
    },
  );

  app.get(
    "/readyz",
    {
      logLevel: "warn",
      schema: {
        operationId: "readiness",
        security: NO_SECURITY,
        tags: ["health"],
        summary: "Readiness",
        description:
          "200 when the database and the rate-limit counters answer; 503 when either cannot be reached, " +
          "and from the moment the process starts shutting down (SIGTERM), while it still serves requests.",
        response: {
          200: Status("ready"),
          503: errorResponse("A store cannot be reached, or the service is shutting down.", SERVICE_UNAVAILABLE),
        },
      },
    },
    async function readiness() {
      if (draining?.aborted) throw new HttpError(503, SHUTTING_DOWN);
      await Promise.all([store.ping(), counters.ping()]);
      return { status: "ready" as const };
    },
  );
};
