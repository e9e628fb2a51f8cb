// The admin console's own OpenID Connect client, like Keycloak's
// security-admin-console: public (code + PKCE, token_endpoint_auth_method
// none), first-party (no consent screen), with a fixed client_id so that
// every instance and every restart finds the same one. Registered when the
// service starts listening, because its redirect URI is the address the
// service is reached at (PUBLIC_URL, or else the listen address, known only
// then). Its addresses match exactly, even on a loopback host (where other
// public clients' match on any port, RFC 8252): its tokens open the admin
// API, so no other program on the machine may receive its codes. A restart
// on another port adds that address (the last few are kept, for instances on
// different addresses).
import { clientMetadata, matchRedirectUri } from "../oidc/clients.ts";
import type { UserStore } from "../store/store.ts";
import { CONSOLE_CLIENT_ID } from "./console-id.ts";

export { CONSOLE_CLIENT_ID } from "./console-id.ts";
export const CONSOLE_CLIENT_NAME = "Admin console";
export const CONSOLE_PATH = "/admin/";
/** How many addresses the client keeps (instances without PUBLIC_URL listening on different hosts). */
const MAX_CONSOLE_ADDRESSES = 5;

/**
 * Registers the console's client, or adds `baseUrl`'s callback to it when it does not match yet.
 * Idempotent; a concurrent registration by another instance is taken as done.
 */
export async function ensureConsoleClient(
  store: UserStore,
  baseUrl: string,
): Promise<"registered" | "updated" | "kept"> {
  const callback = `${baseUrl}${CONSOLE_PATH}`;
  const found = await store.findClient(CONSOLE_CLIENT_ID);
  if (found === undefined) {
    const metadata = clientMetadata({
      client_name: CONSOLE_CLIENT_NAME,
      redirect_uris: [callback],
      post_logout_redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
      scope: "openid profile email",
      first_party: true,
    });
    try {
      await store.createClient({ ...metadata, id: CONSOLE_CLIENT_ID, registeredBy: "admin", secretHash: null });
      return "registered";
    } catch (error) {
      // Another instance inserted it between the read and the insert.
      if ((await store.findClient(CONSOLE_CLIENT_ID)) !== undefined) return "kept";
      throw error;
    }
  }
  const redirectOk = matchRedirectUri(found, callback);
  const logoutOk = found.postLogoutRedirectUris.includes(callback);
  if (redirectOk && logoutOk) return "kept";
  const keep = (list: string[]) =>
    [callback, ...list.filter((uri) => uri !== callback)].slice(0, MAX_CONSOLE_ADDRESSES);
  await store.updateClient(CONSOLE_CLIENT_ID, {
    redirectUris: redirectOk ? found.redirectUris : keep(found.redirectUris),
    postLogoutRedirectUris: keep(found.postLogoutRedirectUris),
  });
  return "updated";
}
