// The hooks every answer passes through, in this order: the common headers
// (nosniff, the request id, and no caching unless a route says otherwise),
// the lingering close of a connection answered before its body arrived, the
// Connection: close of a draining process, the access line, and CORS for the
// configured origins. Registered at the root, before any route, so they
// apply to every route.
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";
import { accessLogHook } from "./access-log.ts";
import { lingerAfterAnswer } from "./lingering-close.ts";

export async function harden(app: FastifyInstance, config: Config, draining: AbortSignal | undefined): Promise<void> {
  // One hook for the headers every answer carries. API answers may carry a token or a user's record, so
  // nothing is cached unless a route says otherwise (the key set and the metadata, the docs' assets).
  app.addHook("onRequest", function commonHeaders(request, reply, done) {
    reply
      .header("x-content-type-options", "nosniff")
      .header("x-request-id", request.id)
      .header("cache-control", "no-store");
    // RFC 9112 section 6.3: without Content-Length or Transfer-Encoding a request has no body. Node
    // (optimizeEmptyRequests) ends such a body without an event, and Fastify reads a body wherever a
    // Content-Type is sent: it would wait for ever. A type that describes no body is dropped, so the
    // route answers at once, as it answers a request without one.
    const headers = request.raw.headers;
    if (
      headers["content-type"] !== undefined &&
      headers["content-length"] === undefined &&
      headers["transfer-encoding"] === undefined
    )
      delete headers["content-type"];
    done();
  });
  // An answer sent before the request's body has arrived (413 over the limit, 415, a route that reads no
  // body) ends the connection, and the end lingers: closing at once would reset the connection under the
  // answer while the client is still sending, and the client would never read it (lingering-close.ts).
  // A request without Content-Length or Transfer-Encoding has no body, whatever `complete` says while
  // the parser is still finishing its headers; `complete` is undefined under inject(), which has no
  // connection.
  app.addHook("onSend", function lingerWhileStillSending(request, reply, payload, done) {
    const { headers, complete } = request.raw;
    if (
      complete === false &&
      (headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0)
    ) {
      reply.header("connection", "close");
      lingerAfterAnswer(request.raw.socket);
    }
    done(null, payload);
  });
  if (draining) {
    // Decided when the answer is sent, not when the request arrives: a request already in flight when
    // the drain began must end its connection too, or its client may send the next request into a
    // connection that the close is about to sweep away.
    app.addHook("onSend", function closeWhileDraining(_request, reply, payload, done) {
      if (draining.aborted) reply.header("connection", "close");
      done(null, payload);
    });
  }
  const accessLog = accessLogHook(app);
  if (accessLog) app.addHook("onResponse", accessLog);
  // Off unless origins are configured: then only those origins, and no cookies (bearer tokens only).
  // A browser app needs every method the API uses, the two request headers it sends, and to read
  // the request id, the 401 challenge and the back-off hint.
  if (config.corsOrigins.length > 0) {
    await app.register((await import("@fastify/cors")).default, {
      origin: config.corsOrigins,
      credentials: false,
      methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
      allowedHeaders: ["Authorization", "Content-Type", "X-Request-Id", "DPoP"],
      exposedHeaders: ["X-Request-Id", "WWW-Authenticate", "Retry-After", "DPoP-Nonce"],
      maxAge: 600,
    });
  }
}
