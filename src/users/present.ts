// How a stored user becomes the public user output: an explicit allow-list.
import type { UserOut } from "../schemas.ts";
import type { UserRecord } from "../store/store.ts";

export function toUserOut(user: UserRecord): UserOut {
  return { id: user.id, email: user.email };
}
