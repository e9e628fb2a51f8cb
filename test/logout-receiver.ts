// A back-channel logout receiver for the tests: a real HTTP server, playing a
// relying party's backchannel_logout_uri, that verifies every logout token
// the way an RP must (OpenID Connect Back-Channel Logout 1.0, 2.6) with
// panva's jose: the signature against the service's JWKS (fetched from its
// jwks_uri), typ logout+jwt, iss, aud, exp/iat, the events claim, sub or
// sid, and no nonce. It answers 200 when the token verifies and 400 when
// not (or the status the test sets), can hang to play a slow receiver, and
// keeps what arrived.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from "jose";

const EVENT = "http://schemas.openid.net/event/backchannel-logout";

export interface LogoutDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** The verified claims, or undefined when verification failed. */
  claims: JWTPayload | undefined;
  refusal?: string;
  status: number;
}

export class LogoutReceiver {
  readonly deliveries: LogoutDelivery[] = [];
  /** Answer this status whatever the token (500 plays a broken receiver). */
  forceStatus: number | undefined;
  /** Never answer (plays a receiver slower than the service's deadline). */
  hang = false;
  port = 0;
  #server: Server | undefined;
  #jwks: ReturnType<typeof createRemoteJWKSet>;

  /**
   * `issuer`: the service's issuer, whose JWKS verifies; `audience`: the client this URI belongs to;
   * `now`: the test's clock (the service signs with it).
   */
  readonly issuer: string;
  /** The client this URI belongs to (the token's aud). */
  audience: string;
  /** The test's clock: the service signs with it. */
  readonly now: () => number;

  /** `issuer`: the service's issuer, whose JWKS verifies. */
  constructor(issuer: string, audience: string, now: () => number = Date.now) {
    this.issuer = issuer;
    this.audience = audience;
    this.now = now;
    this.#jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/backchannel-logout`;
  }

  /** Verified deliveries only. */
  get accepted(): LogoutDelivery[] {
    return this.deliveries.filter((delivery) => delivery.claims !== undefined && delivery.status === 200);
  }

  async verify(body: string, contentType: string | undefined): Promise<JWTPayload> {
    if (contentType !== "application/x-www-form-urlencoded") throw new Error(`content-type ${contentType}`);
    const token = new URLSearchParams(body).get("logout_token");
    if (!token) throw new Error("no logout_token");
    const { payload } = await jwtVerify(token, this.#jwks, {
      typ: "logout+jwt",
      issuer: this.issuer,
      audience: this.audience,
      algorithms: ["RS256"],
      requiredClaims: ["iat", "exp", "jti", "events"],
      currentDate: new Date(this.now()),
    });
    const events = payload.events as Record<string, unknown> | undefined;
    if (typeof events?.[EVENT] !== "object") throw new Error("no back-channel logout event");
    if (payload.sub === undefined && payload.sid === undefined) throw new Error("neither sub nor sid");
    if ("nonce" in payload) throw new Error("a nonce");
    return payload;
  }

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", async () => {
        if (this.hang) return;
        const body = Buffer.concat(chunks).toString("utf8");
        let claims: JWTPayload | undefined;
        let refusal: string | undefined;
        try {
          claims = await this.verify(body, request.headers["content-type"]);
        } catch (error) {
          refusal = (error as Error).message;
        }
        const status = this.forceStatus ?? (claims === undefined ? 400 : 200);
        this.deliveries.push({ headers: request.headers, body, claims, ...(refusal ? { refusal } : {}), status });
        // Back-Channel Logout 2.8: the answer is not cached.
        response.writeHead(status, { "cache-control": "no-store" }).end();
      });
    });
    server.listen(0, "127.0.0.1");
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
  async waitFor(ready: () => boolean, timeoutMs = 10_000, what = "logout tokens"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${this.deliveries.length}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}
