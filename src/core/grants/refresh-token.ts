// The refresh grant (RFC 6749 section 6) for the service's own sessions:
// spends the refresh token and answers a new pair (rotation); a refresh
// token presented a second time ends its whole session (sessions.ts). A
// session a client's authorization code started is that client's: its
// refresh authenticates the client and answers the client's tokens
// (oidc/code-grant.ts). A request that names a registered client refreshes
// that client's sessions only, and is refused the RFC 6749 way (400
// invalid_grant) otherwise; one that names none keeps the spec-style answers.

import { clientOf, invalidGrant } from "../../auth/sessions.ts";
import { proofKeyOf } from "../../dpop/request-key.ts";
import { OAuthError } from "../../oauth-errors.ts";
import { INVALID_CLIENT_REFRESH } from "../../oidc/code-grant.ts";
import { type Grant, type GrantDeps, required, userTokens } from "./grant.ts";

export function refreshTokenGrant({ sessions, tokens, oidc }: GrantDeps): Grant {
  return {
    type: "refresh_token",
    parameters: ["refresh_token", "resource"],
    client: "optional",
    async handle({ request, client }) {
      const { refresh_token } = request.body;
      if (refresh_token === undefined) throw required("refresh_token");
      const binding = oidc && (await oidc.bindingOf(refresh_token));
      if (client !== undefined) {
        // Unknown, spent, a user's own or another client's: left as it is, and refused.
        if (!oidc || !binding || binding.clientId !== client.id)
          throw new OAuthError(400, "invalid_grant", INVALID_CLIENT_REFRESH);
        return oidc.refresh(request, request.body, binding, client);
      }
      if (oidc && binding) return oidc.refresh(request, request.body, binding);
      const rotated = await sessions.refresh(refresh_token, clientOf(request), proofKeyOf(request));
      // Deactivation ends the sessions in the same transaction; this is a second guard.
      if (!rotated.user.isActive) throw invalidGrant();
      return userTokens(tokens, rotated.user, rotated, proofKeyOf(request));
    },
  };
}
