// The authorization request (RFC 6749 4.1.1, OpenID Connect Core 3.1.2.1)
// read and checked in RFC 6749 4.1.2.1's order: the client and its redirect
// URI first, whose errors are shown to the user on an error page (an
// unchecked redirect would be an open redirector); everything after that goes
// back to the client's registered redirect URI as an error, with state and
// iss (RFC 9207). PKCE with S256 is required of every client, plain refused
// (RFC 9700 2.1.1). Then the authorization code: 256 random bits, stored as
// its SHA-256 only, living 60 seconds, bound to the client, the redirect
// URI, the PKCE challenge, the nonce, the scopes and the browser session.
import { hash } from "node:crypto";
import { randomBase64url } from "../random-pool.ts";
import type { AuditEntry, UserStore } from "../store/store.ts";
import { type Client, type ClientRegistry, matchRedirectUri, usableRedirectUri } from "./clients.ts";

/** Scopes this provider knows: OpenID Connect Core 5.4, and offline_access (refresh tokens). */
export const SUPPORTED_SCOPES = ["openid", "profile", "email", "offline_access"] as const;
export const CODE_LIFETIME_SECONDS = 60;
export const PROMPTS = ["none", "login", "consent"] as const;
type Prompt = (typeof PROMPTS)[number];

export interface AuthorizationRequest {
  client: Client;
  redirectUri: string;
  state: string | undefined;
  nonce: string | undefined;
  scopes: string[];
  codeChallenge: string;
  prompt: Set<Prompt>;
  maxAge: number | undefined;
  loginHint: string | undefined;
  acrValues: string[];
  /** RFC 9449 section 10: the thumbprint of the DPoP key the code's redemption must prove. */
  dpopJkt?: string | undefined;
}

/** What went wrong with a request, and where the user or the client hears of it. */
export type RequestProblem =
  | { show: "page"; detail: string /** The error page's words (a catalogue key). */; key: string }
  | { show: "redirect"; redirectUri: string; state: string | undefined; error: string; description: string };

export type Parsed = { ok: AuthorizationRequest } | { problem: RequestProblem };

const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7638 with SHA-256, base64url: the shape of dpop_jkt (RFC 9449 section 10). */
const JWK_THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** A query or form field: one value, or a problem when repeated (RFC 6749 3.1). */
function single(params: Record<string, unknown>, name: string): string | undefined | null {
  const value = params[name];
  if (value === undefined || value === "") return undefined;
  return typeof value === "string" ? value : null;
}

export async function parseAuthorizationRequest(
  params: Record<string, unknown>,
  clients: ClientRegistry,
): Promise<Parsed> {
  const clientId = single(params, "client_id");
  if (typeof clientId !== "string")
    return { problem: { show: "page", detail: "The request names no client.", key: "pages.oidcError.noClient" } };
  const client = await clients.find(clientId);
  if (client === undefined || !client.grantTypes.includes("authorization_code"))
    return {
      problem: {
        show: "page",
        detail: "The application is not registered here for signing in.",
        key: "pages.oidcError.unknownClient",
      },
    };
  const redirectUri = single(params, "redirect_uri");
  if (typeof redirectUri !== "string" || !matchRedirectUri(client, redirectUri))
    return {
      problem: {
        show: "page",
        detail: "The application asked to return to an address it has not registered.",
        key: "pages.oidcError.unregisteredReturn",
      },
    };
  // Registered, yet not an address a browser can be sent to (stored by an older release): never a 500.
  if (!usableRedirectUri(redirectUri))
    return {
      problem: {
        show: "page",
        detail: "The application's return address is not a usable address.",
        key: "pages.oidcError.unusableReturn",
      },
    };
  const rawState = single(params, "state");
  const state = typeof rawState === "string" ? rawState : undefined;
  const refuse = (error: string, description: string): Parsed => ({
    problem: { show: "redirect", redirectUri, state, error, description },
  });
  for (const name of Object.keys(params)) {
    if (single(params, name) === null) return refuse("invalid_request", `The parameter ${name} is repeated`);
  }
  if (params.request !== undefined) return refuse("request_not_supported", "Request objects are not supported");
  if (params.request_uri !== undefined) return refuse("request_uri_not_supported", "Request objects are not supported");
  const responseType = single(params, "response_type");
  if (responseType !== "code") return refuse("unsupported_response_type", "Only response_type=code is supported");
  const scopes = [...new Set((single(params, "scope") ?? "").split(" ").filter((scope) => scope !== ""))];
  const allowed = new Set(client.scope.split(" "));
  const unknown = scopes.find(
    (scope) => !(SUPPORTED_SCOPES as readonly string[]).includes(scope) || !(allowed.has(scope) || scope === "openid"),
  );
  if (unknown !== undefined) return refuse("invalid_scope", `The scope ${unknown.slice(0, 64)} is not available`);
  if (!scopes.includes("openid")) return refuse("invalid_scope", "The openid scope is required");
  const codeChallenge = single(params, "code_challenge");
  const method = single(params, "code_challenge_method");
  if (codeChallenge === undefined) return refuse("invalid_request", "PKCE is required: send code_challenge (S256)");
  if (method !== "S256") return refuse("invalid_request", "code_challenge_method must be S256");
  if (typeof codeChallenge !== "string" || !PKCE_CHALLENGE.test(codeChallenge))
    return refuse("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)");
  const prompt = new Set<Prompt>();
  for (const value of (single(params, "prompt") ?? "").split(" ").filter((entry) => entry !== "")) {
    if (!(PROMPTS as readonly string[]).includes(value)) return refuse("invalid_request", "Unknown prompt value");
    prompt.add(value as Prompt);
  }
  if (prompt.has("none") && prompt.size > 1)
    return refuse("invalid_request", "prompt=none cannot be combined with another value");
  const rawMaxAge = single(params, "max_age");
  const maxAge = rawMaxAge === undefined ? undefined : Number(rawMaxAge);
  if (maxAge !== undefined && !(Number.isSafeInteger(maxAge) && maxAge >= 0))
    return refuse("invalid_request", "max_age must be a whole number of seconds");
  const dpopJkt = single(params, "dpop_jkt") ?? undefined;
  if (dpopJkt !== undefined && !JWK_THUMBPRINT.test(dpopJkt))
    return refuse("invalid_request", "dpop_jkt must be a JWK SHA-256 thumbprint (43 base64url characters)");
  return {
    ok: {
      client,
      redirectUri,
      state,
      nonce: single(params, "nonce") ?? undefined,
      scopes,
      codeChallenge,
      prompt,
      maxAge,
      loginHint: single(params, "login_hint") ?? undefined,
      acrValues: (single(params, "acr_values") ?? "").split(" ").filter((entry) => entry !== ""),
      ...(dpopJkt === undefined ? {} : { dpopJkt }),
    },
  };
}

/** The redirect URI with the response's parameters added to its query (RFC 6749 4.1.2). */
export function responseUri(redirectUri: string, fields: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) url.searchParams.append(name, value);
  return url.href;
}

export function hashCode(code: string): string {
  return hash("sha256", code, "base64url");
}

/** RFC 7636 4.6: BASE64URL(SHA256(ASCII(code_verifier))) equals the challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  return /^[A-Za-z0-9._~-]{43,128}$/.test(verifier) && hash("sha256", verifier, "base64url") === challenge;
}

/**
 * Stores a new code for the request, approved in the browser session, with its audit events in the same
 * transaction; answers the code itself.
 */
export async function issueCode(
  store: UserStore,
  request: AuthorizationRequest,
  userId: string,
  browserSessionId: string,
  clock: () => number,
  events: readonly AuditEntry[] = [],
): Promise<string> {
  const code = randomBase64url(32);
  const now = clock();
  await store.saveAuthorizationCode(
    {
      codeHash: hashCode(code),
      clientId: request.client.id,
      userId,
      browserSessionId,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      nonce: request.nonce ?? null,
      scope: request.scopes.join(" "),
      dpopJkt: request.dpopJkt ?? null,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + CODE_LIFETIME_SECONDS * 1000).toISOString(),
    },
    events,
  );
  return code;
}
