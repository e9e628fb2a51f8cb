// A webhook receiver for the tests: a real HTTP server that verifies every
// delivery with the standardwebhooks library (the Standard Webhooks
// reference for JavaScript) against the secrets the test gives it, answers
// 204 when one verifies and 400 when none does (or the status the test
// sets), and keeps what arrived (the server itself: recording-receiver.ts).
import type { IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";
import { RecordingReceiver } from "./recording-receiver.ts";

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

export class WebhookReceiver extends RecordingReceiver<Delivery> {
  /** The secrets that verify; set by the test after it created the endpoint. */
  secrets: string[] = [];
  /** Whose time the timestamp tolerance is measured against (real time unless the test moves a clock). */
  now: (() => number) | undefined;
  protected readonly path = "/hooks";

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

  protected async examine(body: string, headers: IncomingHttpHeaders) {
    const { verified, refusal } = this.verify(body, headers);
    const delivery = {
      id: String(headers["webhook-id"]),
      timestamp: String(headers["webhook-timestamp"]),
      signature: String(headers["webhook-signature"]),
      body,
      headers,
      verified,
      ...(refusal && verified === undefined ? { refusal } : {}),
    };
    return { delivery, status: verified === undefined ? 400 : 204 };
  }
}
