// The plumbing of the tests' receivers of outbound requests (webhook-receiver.ts,
// logout-receiver.ts): a real HTTP server on loopback that reads each request,
// lets the subclass verify it, answers its status (or the one the test forces),
// keeps what arrived, and can hang to play a receiver slower than the
// service's deadline. It can stop and start again on the same port, to play
// an outage.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export abstract class RecordingReceiver<Delivery extends { status: number }> {
  readonly deliveries: Delivery[] = [];
  /** Answer this status whatever arrived (500 plays a broken receiver). */
  forceStatus: number | undefined;
  /** Never answer (plays a receiver slower than the service's deadline). */
  hang = false;
  port = 0;
  #server: Server | undefined;
  #waiters: (() => void)[] = [];

  /** The path the service is told to send to. */
  protected abstract readonly path: string;
  /** Headers of every answer. */
  protected readonly answerHeaders: Record<string, string> = {};
  /** What arrived, as kept (without the status), and the status it earns unless one is forced. */
  protected abstract examine(
    body: string,
    headers: IncomingHttpHeaders,
  ): Promise<{ delivery: Omit<Delivery, "status">; status: number }>;

  get url(): string {
    return `http://127.0.0.1:${this.port}${this.path}`;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", async () => {
        if (this.hang) return;
        const { delivery, status } = await this.examine(Buffer.concat(chunks).toString("utf8"), request.headers);
        const answered = this.forceStatus ?? status;
        this.deliveries.push({ ...delivery, status: answered } as Delivery);
        response.writeHead(answered, this.answerHeaders).end();
        for (const wake of this.#waiters.splice(0)) wake();
      });
    });
    server.listen(this.port, "127.0.0.1");
    await once(server, "listening");
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** Resolves when `ready()` holds, or fails after `timeoutMs`. */
  async waitFor(ready: () => boolean, timeoutMs = 10_000, what = "deliveries"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${this.deliveries.length}`);
      await Promise.race([
        new Promise<void>((resolve) => this.#waiters.push(resolve)),
        new Promise((resolve) => setTimeout(resolve, 25)),
      ]);
    }
  }
}
