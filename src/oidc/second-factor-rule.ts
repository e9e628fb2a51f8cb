// Issue 35: ADMIN_CONSOLE_REQUIRE_MFA enforced where the console's tokens are
// made, not only by the console's page. The console's client gets the
// service's first-party tokens (they open the admin API), so with the setting
// on, the token endpoint gives that client nothing for a sign-in without a
// second factor, nor for a user who has none (left with recovery codes only,
// or whose factors an admin reset): the person adds one on the security page
// and signs in again. RFC 6749 5.2's `invalid_grant`: the grant (the code, or
// the session the refresh token carries) cannot be honoured for this client.
import type { UserStore } from "../store/store.ts";

export const SECOND_FACTOR_REQUIRED =
  "The admin console needs a sign-in with a second factor: add an authenticator app or a passkey on your " +
  "security page (/account/security), then sign in to the console again";

/**
 * RFC 8176 amr of a sign-in that had a second factor: `mfa` (password and a code, a recovery code or a
 * passkey), or a passkey alone whose authenticator verified the user (`hwk` and `user`: a device the
 * person holds, unlocked by their PIN or biometrics, NIST SP 800-63B's multi-factor cryptographic
 * authenticator).
 */
export function signedInWithSecondFactor(amr: readonly string[]): boolean {
  return amr.includes("mfa") || (amr.includes("hwk") && amr.includes("user"));
}

/** The user has an authenticator app or a passkey now (recovery codes alone are no factor to sign in with). */
export async function hasSecondFactor(store: UserStore, userId: string): Promise<boolean> {
  const factors = await store.secondFactorsOf(userId);
  return factors.totp || factors.passkeys > 0;
}

/** Whether a session with `amr` of `userId` may have tokens for a client that requires a second factor. */
export async function meetsSecondFactorRule(store: UserStore, userId: string, amr: readonly string[]) {
  return signedInWithSecondFactor(amr) && (await hasSecondFactor(store, userId));
}
