// CORS for the endpoints a browser app of a registered public client calls
// cross-origin (oidc-client-ts and the like): the token and revocation
// endpoints here; discovery, the JWKS and userinfo apply the same helper.
// An origin is allowed when it is one of CORS_ORIGINS (the operator's list,
// which platform/hardening.ts applies to the whole API) or the origin of a redirect URI of a
// registered public client; the answer names that one origin, never `*` and
// never an arbitrary one, and never allows credentials (no cookies: these
// endpoints take tokens and form fields). Within a plugin that applies it,
// the operator's CORS plugin steps aside (route config `cors: false`) so
// that one place answers, preflights included.
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ClientRegistry } from "./clients.ts";

export interface ClientCors {
  /**
   * Applies to every route registered after it in this plugin (call it first): answers preflights
   * (OPTIONS) for `paths` with their methods, and adds the CORS headers to the actual answers.
   */
  apply(app: FastifyInstance, paths: Readonly<Record<string, readonly string[]>>): void;
  /** The request's Origin when it may call these endpoints; undefined otherwise. */
  allowedOrigin(request: FastifyRequest): Promise<string | undefined>;
}

/** What a browser app may send and read, as the operator's CORS plugin allows (platform/hardening.ts). */
// DPoP (RFC 9449): browser apps send proofs and read the nonce the service hands out.
const ALLOWED_HEADERS = "Authorization, Content-Type, X-Request-Id, DPoP";
const EXPOSED_HEADERS = "X-Request-Id, WWW-Authenticate, Retry-After, DPoP-Nonce";
const MAX_AGE_SECONDS = "600";

export function createClientCors(registry: ClientRegistry, configuredOrigins: readonly string[]): ClientCors {
  const configured = new Set(configuredOrigins);

  async function allowedOrigin(request: FastifyRequest): Promise<string | undefined> {
    const origin = request.headers.origin;
    if (typeof origin !== "string") return undefined;
    if (configured.has(origin) || (await registry.publicOrigins()).has(origin)) return origin;
    return undefined;
  }

  return {
    allowedOrigin,
    apply(app, paths) {
      app.addHook("onRoute", function leaveCorsToClientCors(route) {
        route.config = { ...(route.config as object), cors: false } as typeof route.config;
      });
      app.addHook("onRequest", function clientCorsHeaders(request, reply, done) {
        // Same-origin and server-side callers send no Origin: nothing to wait for.
        if (request.headers.origin === undefined || request.method === "OPTIONS") return done();
        // The answer depends on the Origin: caches must keep one per origin.
        reply.header("vary", "Origin");
        allowedOrigin(request).then((origin) => {
          if (origin !== undefined)
            reply
              .header("access-control-allow-origin", origin)
              .header("access-control-expose-headers", EXPOSED_HEADERS);
          done();
        }, done);
      });
      for (const [path, methods] of Object.entries(paths)) {
        app.options(path, { schema: { hide: true } }, async function clientCorsPreflight(request, reply) {
          const origin = await allowedOrigin(request);
          const method = request.headers["access-control-request-method"];
          // Not a preflight this endpoint answers: as if there were no OPTIONS route at all.
          if (origin === undefined || typeof method !== "string" || !methods.includes(method))
            return reply.callNotFound();
          return reply
            .code(204)
            .header("vary", "Origin")
            .header("access-control-allow-origin", origin)
            .header("access-control-allow-methods", methods.join(", "))
            .header("access-control-allow-headers", ALLOWED_HEADERS)
            .header("access-control-max-age", MAX_AGE_SECONDS)
            .header("content-length", "0")
            .send();
        });
      }
    },
  };
}
