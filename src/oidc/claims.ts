// The standard claims (OpenID Connect Core 5.4) a user's record yields for
// the granted scopes: profile gives name and updated_at, email gives email
// and email_verified. sub is always the user's stable id, never the e-mail,
// which can change.
import type { UserRecord } from "../store/store.ts";

export interface UserClaims {
  sub: string;
  name?: string;
  updated_at?: number;
  email?: string;
  email_verified?: boolean;
}

export function userClaims(user: UserRecord, scopes: readonly string[]): UserClaims {
  const claims: Record<string, unknown> = { sub: user.id };
  if (scopes.includes("profile")) {
    claims.name = user.fullName ?? undefined;
    claims.updated_at = Math.floor(Date.parse(user.updatedAt) / 1000);
  }
  if (scopes.includes("email")) {
    claims.email = user.email;
    claims.email_verified = user.emailVerifiedAt !== null;
  }
  return Object.fromEntries(Object.entries(claims).filter(([, value]) => value !== undefined)) as unknown as UserClaims;
}
