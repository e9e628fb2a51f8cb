// One access line per request, at info level, in exactly the shape pino
// gives every other line (level, time, pid, hostname, reqId, req, res,
// responseTime, msg), but built by hand: the fields of an access line are
// known and never sensitive (method, path with secret-looking query values
// censored, client address, status, time), so the per-line work of a
// logger call (child bindings, serializers, the redaction walk, a generic
// JSON.stringify) buys nothing here. The line goes straight to the log's own
// destination, which batches writes (server.ts).
import { hostname } from "node:os";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import pino from "pino";

/** Query parameters whose values never reach a log, should a client put a secret in a URL. */
const SECRET_QUERY_PARAMETER = /token|password|secret|key|code|assertion/i;

/** The path as logged: query values with secret-looking names are censored. */
export function loggedUrl(url: string): string {
  const query = url.indexOf("?");
  if (query < 0) return url;
  const params = new URLSearchParams(url.slice(query + 1));
  for (const name of new Set(params.keys())) if (SECRET_QUERY_PARAMETER.test(name)) params.set(name, "[redacted]");
  return `${url.slice(0, query)}?${params}`;
}

type AccessLogHook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** The onResponse hook that writes the access line, or undefined when info is below the log level. */
export function accessLogHook(app: FastifyInstance): AccessLogHook | undefined {
  const logger = app.log as unknown as pino.Logger & Record<symbol, { write(line: string): void } | undefined>;
  if (!logger.isLevelEnabled("info")) return undefined;
  const stream = logger[pino.symbols.streamSym];
  if (stream === undefined) return undefined;
  const prefix = `{"level":30,"time":`;
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())},"reqId":`;
  return function accessLog(request, reply, done) {
    stream.write(
      `${prefix}${Date.now()}${bindings}${JSON.stringify(request.id)},"req":{"method":${JSON.stringify(request.method)},"url":${JSON.stringify(loggedUrl(request.url))},"remoteAddress":${JSON.stringify(request.ip)}},"res":{"statusCode":${reply.statusCode}},"responseTime":${reply.elapsedTime},"msg":"request completed"}\n`,
    );
    done();
  };
}
