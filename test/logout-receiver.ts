// A back-channel logout receiver for the tests: a real HTTP server, playing a
// relying party's backchannel_logout_uri, that verifies every logout token
// the way an RP must (OpenID Connect Back-Channel Logout 1.0, 2.6) with
// panva's jose: the signature against the service's JWKS (fetched from its
// jwks_uri), typ logout+jwt, iss, aud, exp/iat, the events claim, sub or
// sid, and no nonce. It answers 200 when the token verifies and 400 when
// not (or the status the test sets), can hang to play a slow receiver, and
// keeps what arrived (the server itself: recording-receiver.ts).
import type { IncomingHttpHeaders } from "node:http";
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from "jose";
import { RecordingReceiver } from "./recording-receiver.ts";

const EVENT = "http://schemas.openid.net/event/backchannel-logout";

export interface LogoutDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** The verified claims, or undefined when verification failed. */
  claims: JWTPayload | undefined;
  refusal?: string;
  status: number;
}

export class LogoutReceiver extends RecordingReceiver<LogoutDelivery> {
  protected readonly path = "/backchannel-logout";
  // Back-Channel Logout 2.8: the answer is not cached.
  protected override readonly answerHeaders = { "cache-control": "no-store" };
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
    super();
    this.issuer = issuer;
    this.audience = audience;
    this.now = now;
    this.#jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
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

  protected async examine(body: string, headers: IncomingHttpHeaders) {
    let claims: JWTPayload | undefined;
    let refusal: string | undefined;
    try {
      claims = await this.verify(body, headers["content-type"]);
    } catch (error) {
      refusal = (error as Error).message;
    }
    return {
      delivery: { headers, body, claims, ...(refusal ? { refusal } : {}) },
      status: claims === undefined ? 400 : 200,
    };
  }

  /** Resolves when `ready()` holds, or fails after `timeoutMs`. */
  override waitFor(ready: () => boolean, timeoutMs = 10_000, what = "logout tokens"): Promise<void> {
    return super.waitFor(ready, timeoutMs, what);
  }
}
