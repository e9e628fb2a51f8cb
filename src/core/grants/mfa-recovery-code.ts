// The second step with one of the account's recovery codes.
import { MFA_RECOVERY_CODE_GRANT } from "../schemas.ts";
import { type Grant, type GrantDeps, required } from "./grant.ts";
import { secondFactorLogin } from "./second-factor-login.ts";

export function mfaRecoveryCodeGrant(deps: GrantDeps): Grant {
  return {
    type: MFA_RECOVERY_CODE_GRANT,
    parameters: ["mfa_token", "recovery_code"],
    client: "ignored",
    async handle({ request }) {
      const { mfa_token, recovery_code } = request.body;
      if (mfa_token === undefined) throw required("mfa_token");
      if (recovery_code === undefined) throw required("recovery_code");
      return secondFactorLogin(deps, request, mfa_token, "recovery_code", (userId, used) =>
        deps.factors.useRecoveryCode(userId, recovery_code, used),
      );
    },
  };
}
