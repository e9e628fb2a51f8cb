// The authorization_code grant (RFC 6749 4.1.3, OpenID Connect Core 3.1.3):
// the token route authenticates the client first (client: "required"), then
// oidc/code-grant.ts redeems the code for the client's tokens and the ID token.
import type { Grant } from "../../core/grants/grant.ts";
import type { OidcGrants } from "../code-grant.ts";

export function authorizationCodeGrant(oidc: OidcGrants): Grant {
  return {
    type: "authorization_code",
    parameters: ["code", "redirect_uri", "code_verifier", "resource"],
    client: "required",
    async handle({ request, client }) {
      if (client === undefined) throw new Error("the token route authenticates the client of this grant");
      return oidc.authorizationCode(request, request.body, client);
    },
  };
}
