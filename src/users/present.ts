// How a stored user becomes the public user output: an explicit allow-list,
// so a field added to the record never reaches clients by accident.

import type { UserRecord } from "../store/store.ts";
import type { UserOut } from "./schemas.ts";

export function toUserOut(user: UserRecord): UserOut {
  return {
    id: user.id,
    email: user.email,
    full_name: user.fullName,
    is_active: user.isActive,
    is_admin: user.isAdmin,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    email_verified: user.emailVerifiedAt !== null,
    email_verified_at: user.emailVerifiedAt,
    // Only once chosen: the answers for users who never chose stay as they were before issue 37.
    ...(user.locale ? { locale: user.locale } : {}),
  };
}
