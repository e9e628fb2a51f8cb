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

/**
 * Milliseconds with three decimals (whole microseconds), written from integers: the shortest
 * decimal of an arbitrary double (what `${0.8234561}` prints) is a slow path of V8's number
 * formatting, taken once per line.
 */
export function milliseconds(elapsed: number): string {
  const micros = Math.round(elapsed * 1000);
  const whole = Math.floor(micros / 1000);
  const fraction = micros - whole * 1000;
  return `${whole}.${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}`;
}

/** Methods written as they are; any other (only possible in-process, through inject) is escaped. */
const PLAIN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]);

/** The onResponse hook that writes the access line, or undefined when info is below the log level. */
export function accessLogHook(app: FastifyInstance): AccessLogHook | undefined {
  const logger = app.log as unknown as pino.Logger & Record<symbol, { write(line: string): void } | undefined>;
  if (!logger.isLevelEnabled("info")) return undefined;
  const stream = logger[pino.symbols.streamSym];
  if (stream === undefined) return undefined;
  const prefix = `{"level":30,"time":`;
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())},"reqId":"`;
  // Many lines share a millisecond; its digits are written once (a 13-digit number is no small integer to V8).
  let lastTime = 0;
  let lastTimeText = "0";
  // Consecutive lines mostly share their path and address (a client's keep-alive connection, a probe): each is
  // censored and escaped again only when it differs from the previous line's (a compare, against ~200 ns).
  let lastUrl = "";
  let lastUrlJson = '""';
  let lastIp: string | undefined = "";
  let lastAddress = `,"remoteAddress":""`;
  return function accessLog(request, reply, done) {
    const time = Date.now();
    if (time !== lastTime) {
      lastTime = time;
      lastTimeText = String(time);
    }
    const url = request.url;
    if (url !== lastUrl) {
      lastUrl = url;
      lastUrlJson = JSON.stringify(loggedUrl(url));
    }
    // (undefined when the client's socket closed before its address was read: the field is left out, as pino does)
    const ip = request.ip as string | undefined;
    if (ip !== lastIp) {
      lastIp = ip;
      lastAddress = ip === undefined ? "" : `,"remoteAddress":${JSON.stringify(ip)}`;
    }
    // The request id (a UUID, or the caller's after SANE_REQUEST_ID in instance.ts) and a standard method
    // hold nothing JSON must escape; the path and the address may.
    const method = PLAIN_METHODS.has(request.method) ? request.method : JSON.stringify(request.method).slice(1, -1);
    stream.write(
      `${prefix}${lastTimeText}${bindings}${request.id}","req":{"method":"${method}","url":${lastUrlJson}${lastAddress}},"res":{"statusCode":${reply.statusCode}},"responseTime":${milliseconds(reply.elapsedTime)},"msg":"request completed"}\n`,
    );
    done();
  };
}
