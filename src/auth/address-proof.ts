// What a proof of the address does to an account: the one rule against
// account pre-hijacking (Sudhodanan and Paverd, USENIX Security 2022). Anyone
// may sign up with an address he does not own (verification is not required
// by default) and set ways in: a password, passkeys, a second factor, linked
// upstream identities, sessions. Whoever later proves the address (opens a
// link mailed to it) is its owner; what someone who never proved it set must
// not survive that proof, or two people share one account. Two proofs:
// - a link mailed to the address to link an upstream sign-in: on an account
//   whose address was never verified it ends every other way in (password,
//   passkeys, second factors, identities, apps' consents, sessions and access
//   tokens, pending e-mail changes); on a verified account it only links, as
//   before;
// - a password reset: it ends the passkeys, identities and apps' consents
//   added before the address was proven (all of them when it never
//   was), the second factors when it never was, pending e-mail changes, and,
//   as every reset, every session and access token.
// A verification link proves the address too but ends nothing (the owner may
// have set everything himself before verifying); the reset and the mailed
// link are the ways to take an account back. Automatic linking merges an
// upstream identity only into an account whose address is verified.
// The store applies the plan in one transaction (UserStore.proveAddress), on
// the account as that transaction reads it.
import type { AddressProofPlan, AuditEntry, EndedWaysIn, UserRecord } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";

/**
 * Whether an upstream sign-in may link into the existing account with its address without proving
 * the account first: only when automatic linking is on, the provider vouches for the address, and the
 * account's own address was proven (else its ways in may be a stranger's: classic-federated merge).
 */
export function mayLinkAutomatically(autoLink: boolean, account: UserRecord, providerVouches: boolean): boolean {
  return autoLink && providerVouches && account.isActive && account.emailVerifiedAt !== null;
}

/** Nothing ended: the mailed link on an account whose address was already verified (it only links). */
const NOTHING: AddressProofPlan = {
  markVerified: false,
  endSessions: false,
  endWaysInBefore: null,
  endSecondFactors: false,
  endEmailChanges: false,
};

/**
 * A link mailed to `email` was opened in the browser of the sign-in: undefined (refused) when the
 * address is no longer the account's or the account is inactive.
 */
export function mailedLinkPlan(account: UserRecord, email: string): AddressProofPlan | undefined {
  if (!account.isActive || account.email !== normalizeEmail(email)) return undefined;
  if (account.emailVerifiedAt !== null) return NOTHING;
  // The first proof of the address: nothing set before it can be trusted to be the owner's.
  return {
    hashedPassword: "",
    markVerified: true,
    endSessions: true,
    endWaysInBefore: "all",
    endSecondFactors: true,
    endEmailChanges: true,
  };
}

/**
 * A reset link mailed to `email` set the password `hashedPassword`. Every reset ends every session and
 * access token. When the address is still the account's, the reset proves it: the ways in added before
 * it was proven (its emailVerifiedAt) end (all of them when it never was), and the second factors too
 * when it never was; a second factor the owner enrolled on a proven account is kept.
 */
export function passwordResetPlan(account: UserRecord, email: string, hashedPassword: string): AddressProofPlan {
  const ending = { hashedPassword, endSessions: true };
  // A link sent to an earlier address proves nothing about the current one: the reset of before.
  if (account.email !== normalizeEmail(email))
    return { ...ending, markVerified: false, endWaysInBefore: null, endSecondFactors: false, endEmailChanges: false };
  const neverProven = account.emailVerifiedAt === null;
  return {
    ...ending,
    markVerified: neverProven,
    endWaysInBefore: account.emailVerifiedAt ?? "all",
    endSecondFactors: neverProven,
    // An address change waiting for its confirmation would hand the account back to whoever asked for it.
    endEmailChanges: true,
  };
}

/**
 * The audit event naming what a proof ended beyond what it always does (sessions, and a reset's
 * password): `unproven_ways_ended:` with the kinds, e.g. `password,passkeys,identities,sessions`; none
 * when it ended nothing else.
 */
export function endedEvents(type: AuditEntry["type"], ended: EndedWaysIn, clientAddress: string | null): AuditEntry[] {
  const kinds = [
    ended.password && "password",
    ended.passkeys > 0 && "passkeys",
    ended.secondFactors && "second_factors",
    ended.identities > 0 && "identities",
    ended.consents > 0 && "app_consents",
    ended.emailChanges > 0 && "email_changes",
  ].filter((kind): kind is string => kind !== false);
  if (kinds.length === 0) return [];
  if (ended.sessions > 0) kinds.push("sessions");
  return [{ type, outcome: `unproven_ways_ended:${kinds.join(",")}`, clientAddress }];
}
