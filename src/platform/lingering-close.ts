// Lingering close (nginx's lingering_close, Go's closeWrite-and-wait): how a
// connection ends after an answer sent while its client is still sending (a
// body over the limit, of the wrong media type, headers over Node's limit).
// Closing a socket that still has unread bytes makes the kernel answer with a
// reset, and the reset destroys the answer in the client's receive buffer
// before the client reads it: the client sees EPIPE or ECONNRESET and no
// answer. So the connection is half-closed after the answer (its FIN follows
// the answer), what the client still sends is read and dropped, and the socket
// is closed once the client stops sending, or after LINGER_MS: a client that
// sends for ever holds it no longer. Past LINGER_BYTES nothing more is read:
// the client's sending stalls (TCP flow control) until the close, so a flood
// costs no more than that; the client still has the rest of LINGER_MS to read
// its answer, which closing at once would take from it again.
import type { Socket } from "node:net";

/** How long a connection may go on sending after its answer before it is closed. */
export const LINGER_MS = 2000;
/** How much of what it sends after its answer is read (and dropped); past that, reading stops. */
export const LINGER_BYTES = 4 * 1024 * 1024;

const lingering = new WeakSet<Socket>();

/** True once `socket` has had its answer and only waits to be closed: its errors are no one's business. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Half-closes `socket` now (after what was written to it) and closes it when the client has stopped
 * sending, or after LINGER_MS. Nothing it sends from here on is read as HTTP, and no more than
 * LINGER_BYTES of it is read at all.
 */
export function lingerThenClose(socket: Socket): void {
  if (lingering.has(socket) || socket.destroyed) return;
  lingering.add(socket);
  socket.end();
  // The client has already stopped sending: nothing can be left unread.
  if (socket.readableEnded) {
    socket.destroy();
    return;
  }
  const close = () => socket.destroy();
  const deadline = setTimeout(close, LINGER_MS);
  deadline.unref();
  socket.once("close", () => clearTimeout(deadline));
  socket.once("end", close);
  // The HTTP server reads through a 'data' listener (or straight from the socket's handle, which adding
  // a 'data' listener stops): with its listener gone, the rest of a body, or a request pipelined after
  // it, is never parsed, let alone served.
  socket.removeAllListeners("data");
  let discarded = 0;
  socket.on("data", function discard(chunk: Buffer) {
    discarded += chunk.length;
    if (discarded >= LINGER_BYTES) socket.pause();
  });
  socket.resume();
}

/**
 * For an answer the HTTP server is about to send while the request's body is still arriving: the
 * server closes the connection after such an answer (it carries `Connection: close`) by calling the
 * socket's destroySoon(); on this socket that call lingers instead.
 */
export function lingerAfterAnswer(socket: Socket): void {
  socket.destroySoon = function lingeringClose() {
    lingerThenClose(socket);
  };
}
