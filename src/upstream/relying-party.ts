// The relying-party side of an upstream sign-in: the address the browser is
// sent to, and the check of what comes back. OpenID Connect providers go
// through panva's openid-client (discovery, PKCE S256, state, nonce, and the
// ID token's signature, issuer, audience, expiry and nonce); GitHub, which has
// no ID token, through its documented OAuth endpoints (/login/oauth/authorize,
// /login/oauth/access_token, /user, /user/emails) with state and PKCE. Every
// call to a provider has a timeout. Errors leave as UpstreamFailure with a
// sentence for the page, chosen in one place (failureOf: an outage, or a
// refusal); the provider's own words go to the log only.
import * as client from "openid-client";
import type { UpstreamGithubProvider, UpstreamOidcProvider, UpstreamProvider } from "./settings.ts";

/** Who the provider says signed in. */
export interface Assertion {
  issuer: string;
  subject: string;
  email: string | null;
  /** The provider vouches for the address (OIDC email_verified, GitHub's verified flag). */
  emailVerified: boolean;
  name: string | null;
  /** The provider's tokens, to keep when UPSTREAM_KEEP_TOKENS says so. */
  tokens: Record<string, unknown>;
}

/** What the pending sign-in remembers and the callback checks. */
export interface Pending {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export class UpstreamFailure extends Error {
  /** The sentence shown on the page; `cause` (for the log) never reaches the user. */
  readonly detail: string;
  constructor(detail: string, cause?: unknown) {
    super(detail, { cause });
    this.detail = detail;
  }
}

/** For the log: the error's name, code and message, and its cause's (never a token: they are not in messages). */
export function describeUpstreamFailure(error: unknown): string {
  const parts: string[] = [];
  let at: unknown = error instanceof UpstreamFailure ? error.cause : error;
  for (let depth = 0; at instanceof Error && depth < 3; depth++) {
    const {
      code,
      error: oauthError,
      error_description: description,
    } = at as {
      code?: unknown;
      error?: unknown;
      error_description?: unknown;
    };
    const said =
      typeof oauthError === "string"
        ? ` (${oauthError}${typeof description === "string" ? `: ${description}` : ""})`
        : "";
    parts.push(`${at.name}${typeof code === "string" ? ` ${code}` : ""}: ${at.message}${said}`);
    at = at.cause;
  }
  return parts.join(" <- ") || String(at);
}

export const PROVIDER_UNREACHABLE = "The sign-in provider could not be reached. Try again in a moment.";
export const PROVIDER_REFUSED = "The sign-in provider did not confirm who you are. Try again.";

export interface RelyingParty {
  readonly provider: UpstreamProvider;
  /** The issuer identities of this provider are keyed under. */
  readonly issuer: string;
  authorizationUrl(pending: Pending, redirectUri: string): Promise<URL>;
  /** Checks the callback (its whole URL) against the pending sign-in; throws UpstreamFailure. */
  finish(callback: URL, pending: Pending, redirectUri: string): Promise<Assertion>;
}

export function newPending(): Pending {
  return { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() };
}

/** A provider's answer that is not the one a call expects, by its status (GitHub's calls throw it). */
class ProviderAnswered extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "ProviderAnswered";
    this.status = status;
  }
}

/** Codes of a connection that failed or broke (Node's, and undici's beneath fetch). */
const NETWORK_CODES =
  /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR_)/;

/**
 * Whether a failed call to a provider is an outage, to wait out: no answer in time, no connection (or
 * one cut), or an answer with a 5xx status, at any endpoint (discovery, token, JWKS, GitHub's API).
 * Anything else the provider said (a 4xx, an OAuth error, an answer that fails its checks, a bad
 * token) is a refusal. Walks the error and its causes: openid-client wraps what fetch and oauth4webapi
 * threw, and puts the provider's Response itself as the cause of an unexpected status.
 */
function isOutage(error: unknown): boolean {
  let at: unknown = error;
  for (let depth = 0; at !== null && typeof at === "object" && depth < 6; depth++) {
    if (at instanceof Response) return at.status >= 500;
    const { name, code, status, message } = at as {
      name?: unknown;
      code?: unknown;
      status?: unknown;
      message?: unknown;
    };
    if (name === "TimeoutError" || name === "AbortError" || code === "OAUTH_TIMEOUT") return true;
    if (typeof code === "string" && NETWORK_CODES.test(code)) return true;
    if (at instanceof TypeError && typeof message === "string" && /fetch failed/.test(message)) return true;
    if (typeof status === "number") return status >= 500;
    at = (at as { cause?: unknown }).cause;
  }
  return false;
}

/** The one place a provider's failure becomes the page's sentence ("could not be reached", or a refusal). */
function failureOf(error: unknown): UpstreamFailure {
  return new UpstreamFailure(isOutage(error) ? PROVIDER_UNREACHABLE : PROVIDER_REFUSED, error);
}

function oidcParty(provider: UpstreamOidcProvider, timeoutMs: number): RelyingParty {
  let discovered: Promise<client.Configuration> | undefined;
  const insecure = provider.issuer.startsWith("http:");
  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      // client_secret_basic: OpenID Connect's default method, which every preset's provider accepts.
      .discovery(
        new URL(provider.issuer),
        provider.clientId,
        undefined,
        client.ClientSecretBasic(provider.clientSecret),
        {
          timeout: Math.ceil(timeoutMs / 1000),
          // The ID token's signature is checked against the provider's JWK Set too (openid-client, like
          // OIDC Core 3.1.3.7, would otherwise rely on TLS for a token endpoint's answer).
          execute: insecure
            ? [client.enableNonRepudiationChecks, client.allowInsecureRequests]
            : [client.enableNonRepudiationChecks],
        },
      )
      .catch((error: unknown) => {
        discovered = undefined; // tried again by the next sign-in
        throw failureOf(error);
      });
    return discovered;
  }
  return {
    provider,
    issuer: provider.issuer,
    async authorizationUrl(pending, redirectUri) {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: provider.scopes,
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: "S256",
      });
    },
    async finish(callback, pending, redirectUri) {
      const config = await configuration();
      // The library takes the redirect_uri of the token request from the URL it is given: ours, as registered.
      const current = new URL(redirectUri);
      current.search = callback.search;
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: pending.codeVerifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        throw failureOf(error);
      }
      const claims = tokens.claims();
      if (claims === undefined) throw new UpstreamFailure(PROVIDER_REFUSED, new Error("no ID token"));
      const email = typeof claims.email === "string" ? claims.email : null;
      return {
        issuer: claims.iss,
        subject: claims.sub,
        email,
        emailVerified: email !== null && claims.email_verified === true,
        name: typeof claims.name === "string" ? claims.name : null,
        tokens: { ...tokens },
      };
    },
  };
}

function githubParty(provider: UpstreamGithubProvider, timeoutMs: number): RelyingParty {
  const headers = { accept: "application/json", "user-agent": "user-token-service" };
  async function call(url: string, init: RequestInit = {}): Promise<unknown> {
    let response: Response;
    let body: unknown;
    try {
      // One deadline for the answer and its body: a body that stops coming is as slow as no answer.
      response = await fetch(url, {
        ...init,
        headers: { ...headers, ...init.headers },
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "error",
      });
      body = await response.json().catch((error: unknown) => {
        if (isOutage(error)) throw error;
        return undefined; // not JSON
      });
    } catch (error) {
      throw failureOf(error);
    }
    if (!response.ok || body === undefined)
      throw failureOf(
        new ProviderAnswered(response.status, `GitHub answered ${response.status} at ${new URL(url).pathname}`),
      );
    return body;
  }
  return {
    provider,
    issuer: provider.webUrl,
    async authorizationUrl(pending, redirectUri) {
      const url = new URL(`${provider.webUrl}/login/oauth/authorize`);
      url.search = new URLSearchParams({
        client_id: provider.clientId,
        redirect_uri: redirectUri,
        scope: provider.scopes,
        state: pending.state,
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: "S256",
        allow_signup: "true",
      }).toString();
      return url;
    },
    async finish(callback, pending, redirectUri) {
      const params = callback.searchParams;
      if (params.get("state") !== pending.state) throw new UpstreamFailure(PROVIDER_REFUSED, new Error("state"));
      const code = params.get("code");
      if (code === null) throw new UpstreamFailure(PROVIDER_REFUSED, new Error(`error=${params.get("error")}`));
      const token = (await call(`${provider.webUrl}/login/oauth/access_token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          client_id: provider.clientId,
          client_secret: provider.clientSecret,
          code,
          redirect_uri: redirectUri,
          code_verifier: pending.codeVerifier,
        }),
      })) as Record<string, unknown>;
      // GitHub answers its errors with 200 and an `error` field.
      if (typeof token.access_token !== "string")
        throw new UpstreamFailure(PROVIDER_REFUSED, new Error(`token error=${String(token.error)}`));
      const authorization = { authorization: `Bearer ${token.access_token}` };
      const user = (await call(`${provider.apiUrl}/user`, { headers: authorization })) as Record<string, unknown>;
      const emails = await call(`${provider.apiUrl}/user/emails`, { headers: authorization });
      if (typeof user.id !== "number" && typeof user.id !== "string")
        throw new UpstreamFailure(PROVIDER_REFUSED, new Error("GitHub user without id"));
      const list = Array.isArray(emails)
        ? (emails as { email?: unknown; primary?: unknown; verified?: unknown }[])
        : [];
      // Only a verified primary address counts: GitHub lets anyone add an address it has not verified.
      const primary = list.find(
        (entry) => entry.primary === true && entry.verified === true && typeof entry.email === "string",
      );
      return {
        issuer: provider.webUrl,
        subject: String(user.id),
        email: primary ? (primary.email as string) : null,
        emailVerified: primary !== undefined,
        name: typeof user.name === "string" ? user.name : null,
        tokens: token,
      };
    },
  };
}

export function relyingParty(provider: UpstreamProvider, timeoutMs: number): RelyingParty {
  return provider.kind === "github" ? githubParty(provider, timeoutMs) : oidcParty(provider, timeoutMs);
}
