// The refresh grant (RFC 6749 section 6) for the service's own sessions:
// spends the refresh token and answers a new pair (rotation); a refresh
// token presented a second time ends its whole session (sessions.ts). A
// session a client's authorization code started is that client's: its
// refresh authenticates the client and answers the client's tokens
// (oidc/code-grant.ts).
import { clientOf, invalidGrant } from "../sessions.ts";
import { type Grant, type GrantDeps, required, userTokens } from "./grant.ts";

export function refreshTokenGrant({ sessions, tokens, oidc }: GrantDeps): Grant {
  return {
    type: "refresh_token",
    parameters: ["refresh_token"],
    client: "ignored",
    async handle({ request }) {
      const { refresh_token } = request.body;
      if (refresh_token === undefined) throw required("refresh_token");
      const binding = oidc && (await oidc.bindingOf(refresh_token));
      if (oidc && binding) return oidc.refresh(request, request.body, binding);
      const rotated = await sessions.refresh(refresh_token, clientOf(request));
      // Deactivation ends the sessions in the same transaction; this is a second guard.
      if (!rotated.user.isActive) throw invalidGrant();
      return userTokens(tokens, rotated.user, rotated);
    },
  };
}
