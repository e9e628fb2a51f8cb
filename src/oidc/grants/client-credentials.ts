// The client_credentials grant (RFC 6749 section 4.4): a confidential client,
// authenticated by the route (client-auth.ts), gets an access token for
// itself: no user, no refresh token (section 4.4.3). The token is RFC 9068's
// (tokens.ts): `sub` and `client_id` the client's id, `scope` the scopes
// granted, within what the client registered (section 3.3: left out, all of
// it). It lives as long as the users' access tokens (30 minutes) and is
// signed with the same key; it opens no user route (no user, no stamp). Its
// audience is the resources the admin registered for the client, or the one
// `resource` it asks for (RFC 8707; audiences.ts), never the service's own.

import { ACCESS_TOKEN_LIFETIME_SECONDS } from "../../auth/tokens.ts";
import type { Grant, GrantDeps } from "../../core/grants/grant.ts";
import { proofKeyOf } from "../../dpop/request-key.ts";
import { OAuthError } from "../../oauth-errors.ts";
import { clientAudience, resourcesFor } from "../audiences.ts";

export const NOT_FOR_CLIENT_CREDENTIALS = "This client is not registered for the client_credentials grant";
export const INVALID_SCOPE = "The requested scope is not within the client's registered scope";

/** The scope granted: the one asked for when each of its tokens is registered; all registered when none is asked. */
export function grantedScope(registered: string, requested: string | undefined): string {
  if (requested === undefined) return registered;
  const allowed = new Set(registered.split(" "));
  const asked = [...new Set(requested.split(" ").filter((token) => token !== ""))];
  if (!asked.every((token) => allowed.has(token))) throw new OAuthError(400, "invalid_scope", INVALID_SCOPE);
  return asked.join(" ");
}

export function clientCredentialsGrant({ tokens }: GrantDeps): Grant {
  return {
    type: "client_credentials",
    parameters: ["scope", "resource"],
    client: "required",
    async handle({ request, client }) {
      if (client === undefined || !client.grantTypes.includes("client_credentials"))
        throw new OAuthError(400, "unauthorized_client", NOT_FOR_CLIENT_CREDENTIALS);
      const scope = grantedScope(client.scope, request.body.scope);
      const audience = clientAudience(resourcesFor(client, request.body.resource), client.id);
      // RFC 9449 section 5: with a DPoP proof, the token is bound to its key.
      const jkt = proofKeyOf(request);
      return {
        access_token: tokens.issueClientAccessToken(client.id, scope, audience, jkt),
        token_type: jkt === undefined ? ("bearer" as const) : ("DPoP" as const),
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        ...(scope === "" ? {} : { scope }),
      };
    },
  };
}
