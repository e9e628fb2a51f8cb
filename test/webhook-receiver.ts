// A webhook receiver for the tests: a real HTTP server that verifies every
// delivery with the standardwebhooks library (the Standard Webhooks
// reference for JavaScript) against the secrets the test gives it, answers
// 204 when one verifies and 400 when none does (or the status the test
// sets), and keeps what arrived. It can stop and start again on the same
// port, to play an outage.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Delivery {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: IncomingHttpHeaders;
  /** The parsed body when a secret verified it; undefined otherwise. */
  verified: unknown;
  /** The library's refusal when none did. */
  refusal?: string;
  status: number;
}

/**
 * The library's verifier, with its five-minute timestamp tolerance measured against `now` (the test's
 * clock, which the tests move instead of sleeping a day). The signature check is the library's own.
 */
export function verifierAt(secret: string, now: () => number): Webhook {
  const webhook = new Webhook(secret);
  Object.defineProperty(webhook, "verifyTimestamp", {
    value(header: string) {
      const timestamp = Number.parseInt(header, 10);
      const seconds = Math.floor(now() / 1000);
      if (Number.isNaN(timestamp) || Math.abs(seconds - timestamp) > 300) throw new Error("timestamp out of tolerance");
      return new Date(timestamp * 1000);
    },
  });
  return webhook;
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  /** The secrets that verify; set by the test after it created the endpoint. */
  secrets: string[] = [];
  /** Whose time the timestamp tolerance is measured against (real time unless the test moves a clock). */
  now: (() => number) | undefined;
  /** Answer this status whatever the signature (500 plays a broken receiver). */
  forceStatus: number | undefined;
  /** Hold every answer until released (plays a receiver that never answers). */
  hang = false;
  port = 0;
  #server: Server | undefined;
  #waiters: (() => void)[] = [];

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  /** Verified deliveries only. */
  get accepted(): Delivery[] {
    return this.deliveries.filter((delivery) => delivery.status === 204);
  }

  verify(body: string, headers: IncomingHttpHeaders): { verified: unknown; refusal?: string } {
    let refusal = "no secret";
    for (const secret of this.secrets) {
      try {
        const webhook = this.now ? verifierAt(secret, this.now) : new Webhook(secret);
        return { verified: webhook.verify(body, headers as Record<string, string>) };
      } catch (error) {
        refusal = (error as Error).message;
      }
    }
    return { verified: undefined, refusal };
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        if (this.hang) return;
        const body = Buffer.concat(chunks).toString("utf8");
        const { verified, refusal } = this.verify(body, request.headers);
        const status = this.forceStatus ?? (verified === undefined ? 400 : 204);
        this.deliveries.push({
          id: String(request.headers["webhook-id"]),
          timestamp: String(request.headers["webhook-timestamp"]),
          signature: String(request.headers["webhook-signature"]),
          body,
          headers: request.headers,
          verified,
          ...(refusal && verified === undefined ? { refusal } : {}),
          status,
        });
        response.writeHead(status).end();
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
        new Promise((resolve) => setTimeout(resolve, 50)),
      ]);
    }
  }
}
