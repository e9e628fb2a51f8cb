// Pushed authorization requests (RFC 9126, issue 36): the verbs behind the
// push endpoint (par-routes.ts) and the authorization endpoint's request_uri.
// A push stores the request's parameters under the SHA-256 of the random
// part of its request_uri (`urn:ietf:params:oauth:request_uri:<256 bits>`),
// in the store, so that any instance can use it; it lives a minute and is
// used once (one conditional UPDATE). The first use resolves it into its
// parameters, and the authorization request carries those through the
// sign-in and consent pages as a plain request's own are carried, with one
// more parameter: a seal (an HMAC of every other parameter, keyed from the
// signing material, with an expiry), so that the request brought back
// after the sign-in is known to be the pushed one, unaltered: a client that
// must push its requests is not refused on its way back, and an edited
// continuation is refused.
import { hash } from "node:crypto";
import { randomBase64url } from "../random-pool.ts";
import type { PushedRequestUse, UserStore } from "../store/store.ts";
import type { BrowserSessions } from "./browser-session.ts";
import type { Client } from "./clients.ts";
import { requestDigest } from "./reauthentication.ts";

/** RFC 9126 section 2.2: the request_uri's prefix; the rest is 256 random bits, base64url. */
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";
const REFERENCE = /^[A-Za-z0-9_-]{43}$/;
/** The parameter that seals a resolved pushed request on its way through the sign-in page. */
export const SEAL_PARAMETER = "pushed_request_seal";
/** How long a resolved pushed request may take through sign-in and consent: the sign-in proof's ten minutes. */
export const SEAL_SECONDS = 600;
const SEAL_PURPOSE = "pushed authorization request";
/**
 * Parameters of a push that are not the authorization request's: the client's credentials, and a seal
 * (only this service writes one, after the push).
 */
const NOT_STORED = new Set(["client_secret", "client_assertion", "client_assertion_type", SEAL_PARAMETER]);

export const PAR_REQUIRED =
  "This client must push its authorization requests first (RFC 9126): send only client_id and request_uri";
export const REQUEST_URI_UNKNOWN = "The request_uri is unknown, expired or already used. Go back to the application.";
export const SEAL_BROKEN = "The authorization request has expired or was altered. Go back to the application.";

/** The authorization request a request_uri stands for, or why there is none. */
export type Resolution =
  | { ok: Record<string, string> }
  | { refused: Exclude<PushedRequestUse["outcome"], "used"> | "malformed"; detail: string };

export interface PushedRequests {
  readonly lifetimeSeconds: number;
  /** Whether the client's authorization requests must be pushed (its metadata, or the service's setting). */
  required(client: Client): boolean;
  /** Stores the request's parameters for `client`; answers the request_uri. */
  push(client: Client, form: Record<string, string>): Promise<string>;
  /** Uses (once) the request that request_uri and client_id of the browser's request name. */
  resolve(params: Record<string, string | string[]>): Promise<Resolution>;
  /** The resolved request's parameters with their seal, as the authorization endpoint carries them on. */
  seal(params: Record<string, string>): URLSearchParams;
  /** Whether the parameters are a sealed pushed request, unaltered and not past the seal's lifetime. */
  sealed(params: Record<string, string | string[]>): boolean;
}

export const hashReference = (reference: string) => hash("sha256", reference, "base64url");

export function createPushedRequests(options: {
  store: UserStore;
  browserSessions: Pick<BrowserSessions, "formToken" | "checkFormToken">;
  clock: () => number;
  /** REQUIRE_PUSHED_AUTHORIZATION_REQUESTS. */
  requiredForAll: boolean;
  lifetimeSeconds: number;
}): PushedRequests {
  const { store, browserSessions, clock, requiredForAll, lifetimeSeconds } = options;
  const seconds = () => Math.floor(clock() / 1000);

  /** The parameters other than the seal, and the seal as sent. */
  function withoutSeal(params: Record<string, string | string[]>) {
    const rest: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(params)) if (name !== SEAL_PARAMETER) rest[name] = value;
    return { rest, seal: params[SEAL_PARAMETER] };
  }

  return {
    lifetimeSeconds,
    required: (client) => requiredForAll || client.requirePushedAuthorizationRequests,
    async push(client, form) {
      const parameters: Record<string, string> = {};
      for (const [name, value] of Object.entries(form)) if (!NOT_STORED.has(name)) parameters[name] = value;
      parameters.client_id = client.id;
      const reference = randomBase64url(32);
      const now = clock();
      await store.savePushedRequest({
        referenceHash: hashReference(reference),
        clientId: client.id,
        parameters,
        createdAt: new Date(now).toISOString(),
        expiresAt: new Date(now + lifetimeSeconds * 1000).toISOString(),
      });
      return `${REQUEST_URI_PREFIX}${reference}`;
    },
    async resolve(params) {
      const requestUri = params.request_uri;
      const clientId = params.client_id;
      // RFC 9126 section 4: client_id is required beside request_uri, and must be the pushing client's.
      if (typeof requestUri !== "string" || typeof clientId !== "string")
        return { refused: "malformed", detail: "A request_uri needs exactly one client_id and one request_uri." };
      const reference = requestUri.startsWith(REQUEST_URI_PREFIX) ? requestUri.slice(REQUEST_URI_PREFIX.length) : "";
      // Not one of ours: no query, the same words as an unknown one.
      if (!REFERENCE.test(reference)) return { refused: "unknown", detail: REQUEST_URI_UNKNOWN };
      const use = await store.usePushedRequest(hashReference(reference), clientId, new Date(clock()).toISOString());
      if (use.outcome !== "used") return { refused: use.outcome, detail: REQUEST_URI_UNKNOWN };
      return { ok: use.request.parameters };
    },
    seal(params) {
      const { rest } = withoutSeal(params);
      const expires = String(seconds() + SEAL_SECONDS);
      const mac = browserSessions.formToken(`${expires}.${requestDigest(rest)}`, SEAL_PURPOSE);
      return new URLSearchParams({ ...(rest as Record<string, string>), [SEAL_PARAMETER]: `${expires}.${mac}` });
    },
    sealed(params) {
      const { rest, seal } = withoutSeal(params);
      if (typeof seal !== "string") return false;
      const [expires = "", mac, extra] = seal.split(".");
      if (extra !== undefined || !/^\d{1,12}$/.test(expires) || Number(expires) < seconds()) return false;
      return browserSessions.checkFormToken(`${expires}.${requestDigest(rest)}`, SEAL_PURPOSE, mac);
    },
  };
}
