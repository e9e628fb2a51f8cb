// Bootstraps the first admin from FIRST_ADMIN_EMAIL / FIRST_ADMIN_PASSWORD at
// start-up, and only while no active admin exists, so the settings can stay
// in place without undoing later changes. If the e-mail already belongs to a
// user (someone may have signed up with it first), that user is promoted AND
// its password is replaced by the configured one: promoting it with a
// password the operator never chose would hand admin rights to whoever
// registered the address.
import type { PasswordHasher } from "../auth/passwords.ts";
import type { UserStore } from "../store/store.ts";

export type FirstAdminOutcome = "exists" | "created" | "promoted";

export async function ensureFirstAdmin(
  store: UserStore,
  passwords: PasswordHasher,
  admin: { email: string; password: string },
): Promise<FirstAdminOutcome> {
  if ((await store.countActiveAdmins()) > 0) return "exists";
  const hashedPassword = await passwords.hash(admin.password);
  const existing = await store.findByEmail(admin.email);
  if (existing) {
    // Whoever held the account before keeps no session and no token into the new admin account.
    await store.update(
      existing.id,
      {
        hashedPassword,
        isAdmin: true,
        isActive: true,
        emailVerifiedAt: existing.emailVerifiedAt ?? new Date().toISOString(),
      },
      { endSessions: true },
    );
    return "promoted";
  }
  // The operator chose this address: it counts as verified, so the admin can log in when verification is required.
  await store.create({ email: admin.email, hashedPassword, isAdmin: true, emailVerifiedAt: new Date().toISOString() });
  return "created";
}
