// A passkey alone (a discoverable credential with user verification) as the
// whole login, without a password.
import { AMR_PASSKEY, WEBAUTHN_GRANT } from "../../auth/passkeys.ts";
import { proofKeyOf } from "../../dpop/request-key.ts";
import {
  type Grant,
  type GrantDeps,
  refuseUnverified,
  required,
  signIn,
  userTokens,
  webauthnResponse,
} from "./grant.ts";

export function webauthnGrant(deps: GrantDeps): Grant {
  const { passkeys, tokens } = deps;
  return {
    type: WEBAUTHN_GRANT,
    parameters: ["challenge_id", "webauthn_response"],
    client: "ignored",
    async handle({ request }) {
      const response = webauthnResponse(request.body.webauthn_response);
      if (request.body.challenge_id === undefined) throw required("challenge_id");
      const user = await passkeys.verify("login", response, request.ip, { challengeId: request.body.challenge_id });
      await refuseUnverified(deps, request, user);
      // The session of a login by passkey alone and its login event, in one transaction.
      const issued = await signIn(deps, request, user, AMR_PASSKEY);
      return userTokens(tokens, user, issued, proofKeyOf(request));
    },
  };
}
