// Which requests were answered 503 because the password-hash queue was full
// (PasswordHashQueueFull) rather than because a store could not be reached:
// the metrics count the two apart (request-metrics.ts). The error handlers
// mark them as they describe the error (error-handler.ts), so no onError
// hook runs on every refusal of every route for what only the routes that
// hash can raise.
import type { FastifyRequest } from "fastify";

const refused = new WeakSet<FastifyRequest>();

/** Marks a request whose error was the full hash queue's. */
export function noteRefusedHashTurn(request: FastifyRequest): void {
  refused.add(request);
}

/** Whether the request's 503 was the full hash queue's. */
export function wasRefusedHashTurn(request: FastifyRequest): boolean {
  return refused.has(request);
}
