// A TCP fault proxy the test controls, put between the service and
// PostgreSQL or Redis. It passes traffic, and on command:
// - stop() cuts every connection and refuses new ones, as a crashed or
//   restarting server would; start() lets traffic through again on the same port;
// - blackhole() keeps connections open but forwards nothing, as a network
//   partition does (until pass());
// - reset() destroys every open connection at once, as a failover does;
// - cutAt(pattern) destroys the connection that sends a message matching the
//   pattern, before it reaches the server: "cut at the statement that revokes
//   the sessions" reproduces a connection lost in the middle of a transaction;
// - cutAfter(pattern) lets the matching message through, relays the server's
//   answer to it, and then cuts every connection and refuses new ones until
//   pass(): "cut after COMMIT" reproduces a database lost right after a write
//   committed, so that any read the service attempted after its commit fails.
// PostgreSQL's protocol carries SQL text (and prepared-statement names) as
// plain bytes in its Query, Parse and Bind messages, so a pattern matches them.

import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";

interface Fault {
  pattern: RegExp;
  /** Cut before the matching message, or once the server has answered it (and then everything). */
  when: "at" | "after";
  /** How many more times it fires; then it disarms itself. */
  remaining: number;
}

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  #server: Server | undefined;
  #blackholed = false;
  /** After a cutAfter fired: every connection is refused until pass(). */
  #down = false;
  #fault: Fault | undefined;
  /** Messages (as latin1 text) sent towards the server, for tests that inspect the statement order. */
  readonly sent: string[] = [];
  /** How many connections a fault has cut. */
  cuts = 0;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      if (this.#down) {
        client.destroy();
        return;
      }
      const upstream = createConnection(this.#target);
      const pair = { client, upstream };
      this.#pairs.add(pair);
      let cutPending = false;
      const destroy = () => {
        client.destroy();
        upstream.destroy();
        this.#pairs.delete(pair);
      };
      for (const socket of [client, upstream]) {
        socket.on("close", destroy);
        socket.on("error", destroy);
      }
      client.on("data", (chunk: Buffer) => {
        if (this.#blackholed) return;
        const text = chunk.toString("latin1");
        this.sent.push(text);
        const fault = this.#fault;
        if (fault?.pattern.test(text)) {
          fault.remaining -= 1;
          if (fault.remaining <= 0) this.#fault = undefined;
          this.cuts += 1;
          if (fault.when === "at") return destroy();
          cutPending = true;
        }
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (this.#blackholed) return;
        client.write(chunk);
        if (cutPending) {
          this.#down = true;
          this.reset();
        }
      });
    });
    server.listen(this.port, "127.0.0.1");
    await once(server, "listening");
    this.port = (server.address() as { port: number }).port;
    this.#server = server;
  }

  /** Cuts the connection carrying the next `times` messages that match, before they reach the server. */
  cutAt(pattern: RegExp, times = 1): void {
    this.#fault = { pattern, when: "at", remaining: times };
  }

  /** Lets the next matching message through and its answer back, then cuts everything until pass(). */
  cutAfter(pattern: RegExp, times = 1): void {
    this.#fault = { pattern, when: "after", remaining: times };
  }

  disarm(): void {
    this.#fault = undefined;
  }

  blackhole(): void {
    this.#blackholed = true;
  }

  /** Ends a blackhole, or the outage a cutAfter started. */
  pass(): void {
    this.#blackholed = false;
    this.#down = false;
  }

  /** Destroys every open connection now; new ones are accepted. */
  reset(): void {
    for (const { client, upstream } of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.reset();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
