// Statuses a route can answer whatever its handler does, added to the
// documented responses of every API route so the OpenAPI document tells the
// whole truth: a malformed JSON body (400), an oversized one (413), a body of
// another type (415) on routes that parse bodies, and an unreachable store
// (503). Headers are declared where the service sends them: WWW-Authenticate
// on every 401 (spec, Errors rules) and Retry-After on 429 and 503. Routes
// that declare one of these statuses themselves keep their own entry.
import type { FastifyInstance, RouteOptions } from "fastify";
import { SERVICE_UNAVAILABLE } from "../errors.ts";
import { errorResponse } from "./openapi.ts";

const HEADERS_BY_STATUS: Record<string, Record<string, { type: "string"; description: string }>> = {
  401: {
    "WWW-Authenticate": {
      type: "string",
      description:
        "Always starts with `Bearer` (spec, Errors rules); for a DPoP-bound token or a refused DPoP proof (RFC 9449) " +
        'followed by a DPoP challenge: `Bearer, DPoP error="...", algs="..."`, with the nonce a proof must carry ' +
        "in a `DPoP-Nonce` header (RFC 9449 section 9).",
    },
  },
  429: { "Retry-After": { type: "string", description: "Seconds to wait before trying again." } },
  503: { "Retry-After": { type: "string", description: "Seconds to wait before trying again." } },
};

/** Fastify parses a body on every method but GET and HEAD. */
function parsesBodies(route: RouteOptions): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  return methods.some((method) => method !== "GET" && method !== "HEAD");
}

/** Adds the declared headers to a response entry (in place: the OpenAPI generator keeps a reference). */
export function declareHeaders(responses: Record<string, object>): void {
  for (const [status, headers] of Object.entries(HEADERS_BY_STATUS)) {
    const entry = responses[status] as { headers?: object } | undefined;
    if (entry) entry.headers = { ...entry.headers, ...headers };
  }
}

/** Declares the headers on every route registered from here on (health probes and metadata included). */
export function documentResponseHeaders(app: FastifyInstance): void {
  app.addHook("onRoute", function addResponseHeaders(route) {
    const responses = (route.schema as { response?: Record<string, object> } | undefined)?.response;
    if (responses) declareHeaders(responses);
  });
}

/** Adds the statuses above to every API route registered from here on, with their headers. */
export function documentCommonResponses(app: FastifyInstance): void {
  app.addHook("onRoute", function addCommonResponses(route) {
    const schema = route.schema as { response?: Record<string, object>; hide?: boolean } | undefined;
    if (!schema?.response || schema.hide) return;
    const responses = schema.response;
    if (parsesBodies(route)) {
      responses[400] ??= errorResponse(
        "The body is not valid JSON (or, on form endpoints, repeats a field).",
        "The request body is not valid JSON",
      );
      responses[413] ??= errorResponse("The body is over the size limit (16 KiB).", "Request body is too large");
      responses[415] ??= errorResponse("The body is not of the type this route takes.", "Unsupported Media Type");
    }
    responses[503] ??= errorResponse(
      "The database or the shared counters cannot be reached; `Retry-After` says when to try again.",
      SERVICE_UNAVAILABLE,
    );
    declareHeaders(responses);
  });
}
