// The Fastify instance as every request meets it before any route: its
// logger (request ids, redaction, one access line), its limits and timeouts
// for slow or stalled clients, the answers to errors Node raises before a
// route (client-errors.ts), schema validation, the request fields the guards
// fill in, the one error handler and 404, and the body parsers (JSON only,
// UTF-8 only; the token endpoint adds its forms). The hooks every answer
// passes through are hardening.ts's.
import { isUtf8 } from "node:buffer";
import { randomUUID } from "node:crypto";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import type { DestinationStream } from "pino";
import type { Config } from "../config.ts";
import { HttpError, MALFORMED_JSON, withoutStackTraces } from "../errors.ts";
import type { Metrics } from "../operations/metrics.ts";
import { loggedUrl } from "./access-log.ts";
import { clientErrorHandler } from "./client-errors.ts";
import { handleError, handleNotFound, refuseUnroutableUrl } from "./error-handler.ts";
import { requestLoggerOnFirstUse } from "./request-logger.ts";
import { buildSerializersOnFirstUse } from "./serialization.ts";
import { createValidatorCompiler } from "./validation.ts";

/** Our largest legitimate body is a sign-up of about 600 bytes. */
export const BODY_LIMIT_BYTES = 16 * 1024;

/**
 * What logs must never show. Request logs carry method, path and client address only (see
 * serializeRequest), so these are a second guard. Plain paths, no wildcards: pino compiles them to
 * direct property checks, while wildcard paths walk every object on the hot path.
 */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  "req.body",
  "body",
  "password",
  "current_password",
  "new_password",
  "access_token",
  "refresh_token",
  "token",
  "hashedPassword",
  "hashed_password",
  "mfa_token",
  "otp",
  "recovery_code",
  "recovery_codes",
  "webauthn_response",
  "secret",
];

/** A hop count becomes the function Fastify's types ask for; true, false and address lists pass as they are. */
function proxyTrust(setting: Config["trustProxy"]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === "number" ? (_address, hop) => hop < setting : setting;
}

/** An incoming X-Request-Id is kept only when it is short and plain, so it cannot forge log content. */
const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;

export function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const incoming = request.headers["x-request-id"];
  return typeof incoming === "string" && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The request as logged on other lines (errors, warnings): method, censored path, client address. */
function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: loggedUrl(request.url), remoteAddress: request.ip };
}

export interface InstanceOptions {
  /** Prometheus metrics: connection errors are counted. */
  metrics?: Metrics | undefined;
  /** Where log lines go (standard output unless given; tests capture them here). */
  logStream?: DestinationStream | undefined;
}

/** A new Fastify instance with every setting, handler and parser above; no routes yet. */
export function createInstance(config: Config, { metrics, logStream }: InstanceOptions) {
  const { connections } = config;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      serializers: { req: serializeRequest },
      ...(logStream ? { stream: logStream } : {}),
    },
    // One access-log line per request (on response, see accessLog) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Every log line carries the request id: the caller's X-Request-Id when it is a sane token, a new UUID otherwise.
    requestIdHeader: false,
    genReqId: requestId,
    childLoggerFactory: requestLoggerOnFirstUse,
    bodyLimit: BODY_LIMIT_BYTES,
    schemaController: { compilersFactory: { buildSerializer: buildSerializersOnFirstUse } },
    trustProxy: proxyTrust(config.trustProxy),
    // Slow or stalled clients (see ConnectionConfig). Fastify's own default turns the request
    // timeout off, which let a client that stalls after its headers hold a socket for ever.
    http: {
      headersTimeout: connections.headersTimeoutMs,
      requestTimeout: connections.requestTimeoutMs,
      connectionsCheckingInterval: connections.checkIntervalMs,
      // A request without Content-Length or Transfer-Encoding has no body: Node skips the body stream's
      // events for it (every GET). commonHeaders drops the Content-Type of such a request, so that no
      // parser waits for a body that is not coming.
      optimizeEmptyRequests: true,
    },
    requestTimeout: connections.requestTimeoutMs,
    // Node counts a new connection's headers from the moment it opens, so a connection that sends
    // nothing at all is answered 408 after HEADERS_TIMEOUT_MS too; an idle keep-alive connection is
    // closed after KEEP_ALIVE_TIMEOUT_MS.
    keepAliveTimeout: connections.keepAliveTimeoutMs,
    clientErrorHandler: clientErrorHandler(metrics),
    // While closing, a request that arrives on an open connection is served (with Connection:
    // close), not refused with a 503 in Fastify's own error shape.
    return503OnClosing: false,
    // What the router refuses before any route (a path segment over its length, a malformed percent
    // escape) is answered in the service's error shape too, not in Fastify's, and without echoing the path.
    frameworkErrors: refuseUnroutableUrl,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(createValidatorCompiler());
  app.decorateRequest("user", null);
  app.decorateRequest("sessionId", null);
  app.decorateRequest("loginStep", null);
  app.decorateRequest("actionOutcome", null);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  acceptJsonBodies(app);
  return app;
}

/**
 * The service's JSON parser, in place of Fastify's (and no text/plain one): UTF-8 only, and an empty
 * body is no body.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  // JSON is the only body type outside the token endpoint; text/plain would otherwise parse.
  app.removeContentTypeParser("text/plain");
  // An empty JSON body (Content-Length: 0) is no body, as a request without one is (see commonHeaders):
  // the route answers both alike, instead of Fastify's 400 for an empty body. JSON is UTF-8 (RFC 8259
  // section 8.1): other bytes are malformed JSON, not text to repair with replacement characters.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, function utf8JsonOrNoBody(request, body, done) {
    const bytes = body as Buffer;
    if (bytes.length === 0) done(null, undefined);
    else if (!isUtf8(bytes)) done(new HttpError(400, MALFORMED_JSON), undefined);
    else {
      // Malformed JSON is the client's error, answered 400: its SyntaxError's stack is never read. The
      // parser answers at once; the request goes on only after, with stack traces back on.
      let parsed: [Error | null, unknown] = [null, undefined];
      withoutStackTraces(() =>
        parseJson(request, bytes.toString("utf8"), (error: Error | null, value?: unknown) => {
          parsed = [error, value];
        }),
      );
      done(...parsed);
    }
  });
}
