// Whom a token issued to a registered client is for: its audience (aud), RFC
// 8707 (resource indicators) and RFC 9068 section 3. The service's own
// first-party audience (the issuer, TOKEN_AUDIENCE) is never one of them, so
// a resource server that checks aud against its own identifier never takes a
// relying party's or a client's token for a user's first-party token.
// - A relying party's token for a user (authorization_code, its refresh):
//   the userinfo endpoint (every such token has `openid`: the authorization
//   endpoint requires it), and the resources the admin registered for the
//   client, or the one `resource` it asks for.
// - A client's token for itself (client_credentials): the registered
//   resources, or the one it asks for; a client with none gets its own
//   client_id as the audience, which no resource server accepts unless it
//   names that client.
// One `resource` per token request: the form refuses a repeated field.
import { OAuthError } from "../oauth-errors.ts";
import type { Client } from "./clients.ts";

export const INVALID_TARGET = "The requested resource is not one this client is registered for";

/** RFC 8707 section 2: the resources a token asks for, within the client's; 400 invalid_target otherwise. */
export function resourcesFor(client: Pick<Client, "resources">, requested: string | undefined): string[] {
  if (requested === undefined) return client.resources;
  if (!client.resources.includes(requested)) throw new OAuthError(400, "invalid_target", INVALID_TARGET);
  return [requested];
}

/** A relying party's token for a user: userinfo and its resources. */
export function delegatedAudience(resources: readonly string[], userinfoUrl: string): string[] {
  return [userinfoUrl, ...resources];
}

/** A client's own token: its resources, or its own id when it has none. */
export function clientAudience(resources: readonly string[], clientId: string): string[] {
  return resources.length > 0 ? [...resources] : [clientId];
}
