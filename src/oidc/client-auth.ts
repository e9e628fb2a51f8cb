// Client authentication at the endpoints that take a registered client (the
// token endpoint's client grants, revocation, introspection), RFC 6749
// section 2.3: `client_secret_basic` (id and secret form-encoded, then in an
// HTTP Basic header, section 2.3.1), `client_secret_post` (both in the form)
// or `none` (a public client: its client_id alone; PKCE protects its codes).
// One method per request (section 2.3: mixing is refused), and only the
// method the client registered. A failure is 401 `invalid_client`, with the
// same words whatever went wrong (unknown client, wrong secret, wrong
// method), and `WWW-Authenticate: Basic` when Basic was tried (section 5.2);
// otherwise the service's own `Bearer` challenge, as on every 401.

import { OAuthError } from "../oauth-errors.ts";
import type { Client, ClientRegistry, PresentedClient } from "./clients.ts";

export const CLIENT_AUTHENTICATION_FAILED = "Client authentication failed";
export const SEVERAL_CLIENT_METHODS =
  "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form";
export const CLIENT_ID_MISMATCH = "client_id in the form is not the client of the HTTP Basic credentials";
export const SECRET_WITHOUT_ID = "client_secret needs client_id";
/** The challenge of an invalid_client answer to a Basic attempt (RFC 6749 section 5.2). */
export const BASIC_CHALLENGE = 'Basic realm="clients"';

const BASIC = /^basic +([A-Za-z0-9+/=]+) *$/i;

/** What the form may carry for client authentication. */
export interface ClientFields {
  client_id?: string | undefined;
  client_secret?: string | undefined;
}

/** RFC 6749 section 2.3.1: client id and secret are form-encoded before the Basic encoding. */
function formDecode(text: string): string | undefined {
  // Most ids and secrets have nothing encoded: no copy, no scan by decodeURIComponent, no try.
  if (!text.includes("%") && !text.includes("+")) return text;
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

/**
 * The id and secret of an HTTP Basic header: undefined when the header is not Basic at all, null
 * when it is Basic but not a well-formed `id:secret`.
 */
export function basicCredentials(header: string | undefined): { id: string; secret: string } | null | undefined {
  if (header === undefined || !/^basic /i.test(header)) return undefined;
  const match = BASIC.exec(header);
  if (match === null) return null;
  const decoded = Buffer.from(match[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  // Swagger UI's Authorize dialog sends an empty id and secret: no client at all.
  if (id === "" && secret === "") return undefined;
  return id === undefined || secret === undefined || id === "" ? null : { id, secret };
}

export const invalidClient = (basic: boolean) =>
  new OAuthError(401, "invalid_client", CLIENT_AUTHENTICATION_FAILED, {
    "www-authenticate": basic ? BASIC_CHALLENGE : "Bearer",
  });

/**
 * The client the request presents and how, or undefined when it presents none. Throws OAuthError for
 * a malformed Basic header (401) or a request that mixes methods (400 invalid_request).
 */
export function presentedClient(authorization: string | undefined, form: ClientFields): PresentedClient | undefined {
  const basic = basicCredentials(authorization);
  if (basic === null) throw invalidClient(true);
  if (basic !== undefined) {
    if (form.client_secret !== undefined) throw new OAuthError(400, "invalid_request", SEVERAL_CLIENT_METHODS);
    if (form.client_id !== undefined && form.client_id !== basic.id)
      throw new OAuthError(400, "invalid_request", CLIENT_ID_MISMATCH);
    return { method: "client_secret_basic", clientId: basic.id, secret: basic.secret };
  }
  if (form.client_secret !== undefined) {
    if (form.client_id === undefined) throw new OAuthError(400, "invalid_request", SECRET_WITHOUT_ID);
    return { method: "client_secret_post", clientId: form.client_id, secret: form.client_secret };
  }
  return form.client_id === undefined ? undefined : { method: "none", clientId: form.client_id };
}

/**
 * The registered client this request authenticates as, by the one method it registered; 401
 * invalid_client otherwise (also when no client is presented at all).
 */
export async function authenticateClient(
  registry: ClientRegistry,
  authorization: string | undefined,
  form: ClientFields,
): Promise<Client> {
  const presented = presentedClient(authorization, form);
  if (presented === undefined) throw invalidClient(false);
  return authenticatePresented(registry, presented);
}

/** The registered client that `presented` authenticates as; 401 invalid_client otherwise. */
export async function authenticatePresented(registry: ClientRegistry, presented: PresentedClient): Promise<Client> {
  const client = await registry.authenticate(presented);
  if (client === undefined) throw invalidClient(presented.method === "client_secret_basic");
  return client;
}
