// The second step of a login, shared by the three second-factor grants
// (mfa-otp.ts, mfa-recovery-code.ts, mfa-webauthn.ts): a live mfa_token, the
// user's second-factor limit, then the factor's own check.
import type { FastifyRequest } from "fastify";
import { unauthorized } from "../../errors.ts";
import type { AuditEntry } from "../../store/store.ts";
import { type FactorName, invalidMfaToken, WRONG_ANSWER } from "../second-factors.ts";
import { SECOND_FACTOR_AMR } from "../sessions.ts";
import { clientOf, type GrantDeps, userTokens } from "./grant.ts";

/**
 * `verify` checks the answer for this factor and, when it is right, spends it (a code works once)
 * together with the `used` events. A wrong answer counts against the mfa_token (a few spend it)
 * and the user (429 past the limit). The session records how the user authenticated.
 */
export async function secondFactorLogin(
  { factors, limits, store, audit, sessions, tokens }: GrantDeps,
  request: FastifyRequest,
  mfaToken: string,
  factor: FactorName,
  verify: (userId: string, used: readonly AuditEntry[]) => Promise<boolean>,
) {
  request.loginStep = "second_factor";
  const { userId, firstFactor } = await factors.challengedSignIn(mfaToken);
  await limits.checkSecondFactor(userId);
  const user = await store.findById(userId);
  if (!user?.isActive) throw invalidMfaToken();
  if (!(await verify(userId, [{ type: "second_factor", outcome: `${factor}_used`, clientAddress: request.ip }]))) {
    await factors.recordFailure(mfaToken, userId);
    await audit.record("second_factor", userId, `${factor}_failed`, request.ip);
    throw unauthorized(WRONG_ANSWER[factor]);
  }
  await factors.spendChallenge(mfaToken);
  await limits.recordSecondFactorSuccess(userId);
  const issued = await sessions.start(
    user.id,
    clientOf(request),
    [{ type: "login", outcome: "success", clientAddress: request.ip }],
    // After an upstream sign-in the first factor is "fed", not the password.
    SECOND_FACTOR_AMR[factor].map((method) => (method === "pwd" ? firstFactor : method)),
  );
  return userTokens(tokens, user, issued);
}
