// What the OpenID Connect flow needs of the client registry (issue 24, part
// A builds the registry itself): find a relying party, match a redirect URI
// exactly, and authenticate a client at the token endpoint. The flow is
// written against this interface; the registry implements it.
import { createHash, timingSafeEqual } from "node:crypto";
import { OAuthError } from "../oauth-errors.ts";

export interface RelyingParty {
  clientId: string;
  clientName: string;
  redirectUris: readonly string[];
  postLogoutRedirectUris: readonly string[];
  /** client_secret_basic and client_secret_post: confidential; none: public (PKCE only). */
  tokenEndpointAuthMethod: "client_secret_basic" | "client_secret_post" | "none";
  /** First-party clients skip the consent screen. */
  firstParty: boolean;
  /** The scopes the client may ask for, space-separated. */
  scope: string;
  backchannelLogoutUri: string | null;
}

export interface ClientDirectory {
  find(clientId: string): Promise<RelyingParty | undefined>;
  /** Exact match (RFC 6749 3.1.2.2, RFC 9700 4.1.3); a loopback redirect of a native app on any port. */
  redirectUriMatches(client: RelyingParty, uri: string): boolean;
  /**
   * The client a token request authenticates as (HTTP Basic or the form's client_id and
   * client_secret; a public client by client_id alone), or throws 401 invalid_client.
   */
  authenticate(authorization: string | undefined, form: Record<string, string | undefined>): Promise<RelyingParty>;
}

export const INVALID_CLIENT = "Client authentication failed";

/** RFC 6749 5.2: 401 with a Basic challenge, whichever way the client tried. */
export function invalidClient(): OAuthError {
  return new OAuthError(401, "invalid_client", INVALID_CLIENT, { "www-authenticate": 'Basic realm="token"' });
}

/** The client id and secret of an HTTP Basic header (RFC 6749 2.3.1: each form-urlencoded). */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  if (header === undefined || header.slice(0, 6).toLowerCase() !== "basic ") return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  try {
    return {
      id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " ")),
      secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " ")),
    };
  } catch {
    return undefined;
  }
}

/**
 * A fixed list of clients with their secrets, for the tests of the flow until the registry is
 * merged: the same rules the registry follows (exact redirect URIs, the declared auth method).
 */
export function staticClientDirectory(clients: readonly (RelyingParty & { clientSecret?: string })[]): ClientDirectory {
  const byId = new Map(clients.map((client) => [client.clientId, client]));
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return {
    find: async (clientId) => byId.get(clientId),
    redirectUriMatches: (client, uri) => client.redirectUris.includes(uri),
    async authenticate(authorization, form) {
      const basic = basicCredentials(authorization);
      const id = basic?.id ?? form.client_id;
      const client = id === undefined ? undefined : byId.get(id);
      if (client === undefined) throw invalidClient();
      if (client.tokenEndpointAuthMethod === "none") {
        if (basic !== undefined || form.client_secret !== undefined) throw invalidClient();
        return client;
      }
      const presented = client.tokenEndpointAuthMethod === "client_secret_basic" ? basic?.secret : form.client_secret;
      if (presented === undefined || client.clientSecret === undefined) throw invalidClient();
      if (!timingSafeEqual(digest(presented), digest(client.clientSecret))) throw invalidClient();
      return client;
    },
  };
}
