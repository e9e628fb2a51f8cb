// What each answered request adds to the Prometheus metrics: its route,
// status and time (and the login step, and whether a 503 was the full hash
// queue's), and the outcome of the actions worth counting by name
// (observed-actions.ts). Two root hooks, registered only when metrics are on.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { PasswordHashQueueFull } from "../errors.ts";
import type { Metrics } from "./metrics.ts";
import { observedAction, outcomeOfStatus } from "./observed-actions.ts";

export function recordRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  // A refusal of the full hash queue is a 503 like a store's; the error itself tells them apart. Only
  // errors run this hook, and the set is only read for a 503.
  const refusedTurns = new WeakSet<FastifyRequest>();
  app.addHook("onError", function noteRefusedHashTurn(request, _reply, error, done) {
    if (error instanceof PasswordHashQueueFull) refusedTurns.add(request);
    done();
  });
  app.addHook("onResponse", function recordMetrics(request, reply, done) {
    const route = request.routeOptions.url ?? "(unmatched)";
    const status = reply.statusCode;
    metrics.observeRequest(
      request.method,
      route,
      status,
      reply.elapsedTime / 1000,
      request.loginStep,
      status === 503 && refusedTurns.has(request),
    );
    const observed = observedAction(route, request);
    if (observed !== undefined) metrics.observeAction(observed, request.actionOutcome ?? outcomeOfStatus(status));
    done();
  });
}
