// Sign-in with an upstream provider, last step: the sign-in page spends the
// ticket the provider's callback handed it (one use, two minutes, only with
// the cookie of the browser that started the sign-in). Like the password
// grant from there: an account with a second factor answers 403
// mfa_required; otherwise a session whose amr is ["fed"] (RFC 8176).

import {
  type Grant,
  type GrantDeps,
  refuseUnverified,
  required,
  secondFactorChallenge,
  signIn,
  userTokens,
} from "../core/grants/grant.ts";
import { UPSTREAM_GRANT } from "../core/schemas.ts";
import { proofKeyOf } from "../dpop/request-key.ts";
import { HttpError } from "../errors.ts";

export const INVALID_UPSTREAM_TICKET = "The sign-in has expired or was already used: start again";
export const FEDERATED: readonly string[] = ["fed"];

export function upstreamGrant(deps: GrantDeps): Grant {
  return {
    type: UPSTREAM_GRANT,
    parameters: ["upstream_ticket"],
    client: "ignored",
    async handle({ request, reply }) {
      const ticket = request.body.upstream_ticket;
      if (ticket === undefined) throw required("upstream_ticket");
      if (!deps.upstream) throw new HttpError(400, INVALID_UPSTREAM_TICKET);
      const { upstream, binding } = deps.upstream;
      const user = await upstream.redeemSignIn(ticket, binding.read(request));
      if (!user) throw new HttpError(400, INVALID_UPSTREAM_TICKET);
      await refuseUnverified(deps, request, user);
      const challenge = await secondFactorChallenge(deps, request, reply, user, "fed");
      if (challenge) return challenge;
      const issued = await signIn(deps, request, user, FEDERATED, [
        { type: "login", outcome: "success_upstream", clientAddress: request.ip },
      ]);
      return userTokens(deps.tokens, user, issued, proofKeyOf(request));
    },
  };
}
