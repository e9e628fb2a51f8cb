// The second step with an authenticator app's six-digit code (TOTP).
import { MFA_OTP_GRANT } from "../schemas.ts";
import { type Grant, type GrantDeps, required } from "./grant.ts";
import { secondFactorLogin } from "./second-factor-login.ts";

export function mfaOtpGrant(deps: GrantDeps): Grant {
  return {
    type: MFA_OTP_GRANT,
    parameters: ["mfa_token", "otp"],
    client: "ignored",
    async handle({ request }) {
      const { mfa_token, otp } = request.body;
      if (mfa_token === undefined) throw required("mfa_token");
      if (otp === undefined) throw required("otp");
      return secondFactorLogin(deps, request, mfa_token, "otp", (userId, used) =>
        deps.factors.checkTotp(userId, otp, used),
      );
    },
  };
}
