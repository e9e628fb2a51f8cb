// The second step of a login, shared by the three second-factor grants
// (mfa-otp.ts, mfa-recovery-code.ts, mfa-webauthn.ts): a live mfa_token, the
// user's second-factor limit, then the factor's own check.
import type { FastifyRequest } from "fastify";
import { type FactorName, invalidMfaToken, WRONG_ANSWER } from "../../auth/second-factors.ts";
import { clientOf, SECOND_FACTOR_AMR } from "../../auth/sessions.ts";
import { proofKeyOf } from "../../dpop/request-key.ts";
import { unauthorized } from "../../errors.ts";
import type { AuditEntry } from "../../store/store.ts";
import { type GrantDeps, signIn, userTokens } from "./grant.ts";

/**
 * `verify` checks the answer for this factor and, when it is right, spends it (a code works once)
 * together with the `used` events. A wrong answer counts against the mfa_token (a few spend it)
 * and the user (429 past the limit). The session records how the user authenticated.
 */
export async function secondFactorLogin(
  deps: GrantDeps,
  request: FastifyRequest,
  mfaToken: string,
  factor: FactorName,
  verify: (userId: string, used: readonly AuditEntry[]) => Promise<boolean>,
) {
  const { factors, limits, store, audit, notices, tokens } = deps;
  request.loginStep = "second_factor";
  const { userId, firstFactor } = await factors.challengedSignIn(mfaToken);
  await limits.checkSecondFactor(userId);
  const user = await store.findById(userId);
  if (!user?.isActive) throw invalidMfaToken();
  // A recovery code stands in for a lost factor: its owner hears of every use.
  const notice = factor === "recovery_code" ? notices.about("recovery_code_used", user, clientOf(request)) : undefined;
  const used: AuditEntry = { type: "second_factor", outcome: `${factor}_used`, clientAddress: request.ip, notice };
  if (!(await verify(userId, [used]))) {
    await factors.recordFailure(mfaToken, userId);
    await audit.record("second_factor", userId, `${factor}_failed`, request.ip);
    throw unauthorized(WRONG_ANSWER[factor]);
  }
  await factors.spendChallenge(mfaToken);
  await limits.recordSecondFactorSuccess(userId);
  // After an upstream sign-in the first factor is "fed", not the password.
  const amr = SECOND_FACTOR_AMR[factor].map((method) => (method === "pwd" ? firstFactor : method));
  const issued = await signIn(deps, request, user, amr);
  return userTokens(tokens, user, issued, proofKeyOf(request));
}
