// Errors Node raises before a request reaches a route (a timeout, headers too
// large, bytes that are not HTTP), answered on the socket in the service's
// error shape. Given to Fastify as its clientErrorHandler (platform/instance.ts).
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionError, FastifyInstance } from "fastify";
import type { Metrics } from "../operations/metrics.ts";
import { isLingering, lingerThenClose } from "./lingering-close.ts";

/**
 * Errors Node raises before a request reaches a route, answered in the service's error shape: a
 * request not received within HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS (408), headers over Node's
 * size limit (431), bytes that are not HTTP (400). The connection is closed after the answer, as
 * Node does; when a response has already started on it, it is only closed. After a 431 or a 400 the
 * client may still be sending (the rest of its headers, a body): the close lingers (lingering-close.ts),
 * so that it reads its answer. A 408 goes to a client that has stopped sending: closed at once.
 */
export function clientErrorHandler(metrics: Metrics | undefined) {
  return function answerClientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
    // A lingering connection has had its answer; the parser's complaints about what follows are moot.
    if (isLingering(socket)) {
      socket.destroy();
      return;
    }
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const [status, detail] =
      error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "The request was not received in time"]
        : error.code === "HPE_HEADER_OVERFLOW"
          ? [431, "The request headers are too large"]
          : [400, "The request is not valid HTTP"];
    metrics?.observeConnectionError(status);
    if (status === 408) {
      this.log.info({ remoteAddress: socket.remoteAddress }, "request not received in time: 408, connection closed");
    }
    // Node's own handler checks this internal field too: writing a status line into a response that
    // has started would corrupt it.
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (socket.writable && !started) {
      const body = JSON.stringify({ detail });
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      if (status !== 408) {
        lingerThenClose(socket);
        return;
      }
    }
    socket.destroy(error);
  };
}
