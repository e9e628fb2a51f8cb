// HTTP/1.1 over a plain TCP socket, for the tests where what happens on the
// connection itself matters (keep-alive, stalls, resets), which fetch hides.
import { connect, type Socket } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** How a connection ended: after `ms`, with what bytes, and whether it was an error such as a reset. */
export interface Ending {
  ms: number;
  received: string;
  error?: NodeJS.ErrnoException;
}

export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/** Resolves when the socket closes, with everything it received since this call. */
export function ending(socket: Socket): Promise<Ending> {
  const started = performance.now();
  let received = "";
  let error: NodeJS.ErrnoException | undefined;
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("error", (cause: NodeJS.ErrnoException) => {
    error = cause;
  });
  return new Promise((resolve) => {
    socket.once("close", () => resolve({ ms: performance.now() - started, received, ...(error ? { error } : {}) }));
  });
}

/** Parses one complete response at the start of `text`; undefined while more bytes are needed. */
export function parseResponse(text: string): { response: RawResponse; rest: string } | undefined {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  if (text.length < end + 4 + length) return undefined;
  return {
    response: { status: Number(statusLine.split(" ")[1]), headers, body: text.slice(end + 4, end + 4 + length) },
    rest: text.slice(end + 4 + length),
  };
}

/**
 * One keep-alive connection sending one request at a time. `send` resolves with the response, or
 * rejects if the connection closes or fails while a request is outstanding: exactly what a client
 * sees as a reset.
 */
export class KeepAliveConnection {
  readonly socket: Socket;
  readonly closed: Promise<Ending>;
  #buffer = "";
  #pending: { resolve: (response: RawResponse) => void; reject: (error: Error) => void } | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    this.closed = ending(socket);
    socket.on("data", (chunk: string) => {
      this.#buffer += chunk;
      const parsed = parseResponse(this.#buffer);
      if (!parsed || !this.#pending) return;
      this.#buffer = parsed.rest;
      const pending = this.#pending;
      this.#pending = undefined;
      pending.resolve(parsed.response);
    });
    socket.on("close", () => {
      this.#pending?.reject(new Error(`connection closed with a request outstanding (${this.#buffer.length} bytes)`));
      this.#pending = undefined;
    });
  }

  static async open(port: number): Promise<KeepAliveConnection> {
    return new KeepAliveConnection(await openSocket(port));
  }

  send(method: string, path: string, headers: Record<string, string> = {}, body = ""): Promise<RawResponse> {
    return this.sendRaw(requestText(method, path, headers, body));
  }

  /** Writes `text` (all or the start of a request) and resolves with the response that follows. */
  sendRaw(text: string): Promise<RawResponse> {
    if (this.#pending) throw new Error("one request at a time");
    if (this.socket.destroyed || this.socket.writableEnded) return Promise.reject(new Error("connection closed"));
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.socket.write(text);
    });
  }
}

export function requestText(method: string, path: string, headers: Record<string, string> = {}, body = ""): string {
  const lines = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== "") lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}
