// The token endpoint's grants of sign-in by mail (issue 37), for the
// service's own (first-party) apps: the mail's 6-digit code with its attempt,
// or the link's token with its attempt (and the confirmation, from another
// browser than the one that asked). Then as the password grant: an account
// with a second factor answers 403 mfa_required; otherwise the spec's token
// response, its `amr` saying how (RFC 8176: `otp` for the code; `email`, a
// value outside RFC 8176's registry, for proof of the mailbox: see
// docs/accounts/mail-sign-in.md).
// A registered client (an OpenID Connect relying party, a client_credentials
// client) is refused: those sign people in through the authorization endpoint.
import {
  type Grant,
  type GrantContext,
  type GrantDeps,
  required,
  secondFactorChallenge,
  signIn,
  userTokens,
} from "../core/grants/grant.ts";
import { MAIL_CODE_GRANT, MAIL_LINK_GRANT } from "../core/schemas.ts";
import { proofKeyOf } from "../dpop/request-key.ts";
import { OAuthError } from "../oauth-errors.ts";
import { FIRST_PARTY_ONLY, type MailSignIn, type Redeemed } from "./mail-sign-in.ts";

export const AMR_MAIL_CODE: readonly string[] = ["email", "otp"];
export const AMR_MAIL_LINK: readonly string[] = ["email"];

async function answer(deps: GrantDeps, { request, reply }: GrantContext, redeemed: Redeemed, amr: readonly string[]) {
  const { user } = redeemed;
  // The mail proves the address, not the second factor.
  const challenge = await secondFactorChallenge(deps, request, reply, user, "email");
  if (challenge) return challenge;
  const method = amr.includes("otp") ? "mail_code" : "mail_link";
  const issued = await signIn(deps, request, user, amr, [
    { type: "login", outcome: `success_${method}`, clientAddress: request.ip },
  ]);
  return userTokens(deps.tokens, user, issued, proofKeyOf(request));
}

function firstPartyOnly(context: GrantContext): void {
  if (context.client !== undefined) throw new OAuthError(400, "unauthorized_client", FIRST_PARTY_ONLY);
}

export function mailCodeGrant(deps: GrantDeps, mailSignIn: MailSignIn): Grant {
  return {
    type: MAIL_CODE_GRANT,
    parameters: ["attempt", "code"],
    client: "optional",
    async handle(context) {
      firstPartyOnly(context);
      const { attempt, code } = context.request.body;
      if (attempt === undefined) throw required("attempt");
      if (code === undefined) throw required("code");
      const redeemed = await mailSignIn.redeemCode(attempt, code.trim(), context.request.ip);
      return answer(deps, context, redeemed, AMR_MAIL_CODE);
    },
  };
}

export function mailLinkGrant(deps: GrantDeps, mailSignIn: MailSignIn): Grant {
  return {
    type: MAIL_LINK_GRANT,
    parameters: ["attempt", "token", "confirm"],
    client: "optional",
    async handle(context) {
      firstPartyOnly(context);
      const { attempt, token, confirm } = context.request.body;
      if (attempt === undefined) throw required("attempt");
      if (token === undefined) throw required("token");
      const redeemed = await mailSignIn.redeemLink(attempt, token, confirm === "true", context.request);
      return answer(deps, context, redeemed, AMR_MAIL_LINK);
    },
  };
}
