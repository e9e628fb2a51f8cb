// What each answered request adds to the Prometheus metrics: its route,
// status and time (and the login step, and whether a 503 was the full hash
// queue's), and the outcome of the actions worth counting by name
// (observed-actions.ts). One root hook, registered only when metrics are on.
import type { FastifyInstance } from "fastify";
import { wasRefusedHashTurn } from "../platform/refused-hash-turns.ts";
import type { Metrics } from "./metrics.ts";
import { observedAction, outcomeOfStatus } from "./observed-actions.ts";

export function recordRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook("onResponse", function recordMetrics(request, reply, done) {
    const route = request.routeOptions.url ?? "(unmatched)";
    const status = reply.statusCode;
    metrics.observeRequest(
      request.method,
      route,
      status,
      reply.elapsedTime / 1000,
      request.loginStep,
      // A refusal of the full hash queue is a 503 like a store's; the error handler marked it.
      status === 503 && wasRefusedHashTurn(request),
    );
    const observed = observedAction(route, request);
    if (observed !== undefined) metrics.observeAction(observed, request.actionOutcome ?? outcomeOfStatus(status));
    done();
  });
}
