// The second step with a passkey's assertion.
import { MFA_WEBAUTHN_GRANT } from "../schemas.ts";
import { type Grant, type GrantDeps, required, webauthnResponse } from "./grant.ts";
import { secondFactorLogin } from "./second-factor-login.ts";

export function mfaWebauthnGrant(deps: GrantDeps): Grant {
  return {
    type: MFA_WEBAUTHN_GRANT,
    parameters: ["mfa_token", "webauthn_response", "challenge_id"],
    client: "ignored",
    async handle({ request }) {
      const { mfa_token, challenge_id } = request.body;
      if (mfa_token === undefined) throw required("mfa_token");
      const response = webauthnResponse(request.body.webauthn_response);
      return secondFactorLogin(deps, request, mfa_token, "webauthn", (userId, used) =>
        deps.passkeys.accepts("second_factor", response, request.ip, {
          challengeId: challenge_id,
          userId,
          events: used,
        }),
      );
    },
  };
}
