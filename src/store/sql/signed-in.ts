// The check that a write adding a way in to an account (a passkey, a linked
// upstream identity) still speaks for a live sign-in. The request's token
// was checked before the write began; meanwhile every session may have ended
// (a proof of the address taking the account back from whoever signed up
// with it, a password change or reset). Under the user's row lock, in the
// write's transaction, so that such an ending and the write queue one behind
// the other: the write after the ending is refused, the ending after the
// write ends what it added.
import { CredentialsChanged } from "../../errors.ts";
import type { Dialect, Queryable } from "../db.ts";
import type { SignedInAs } from "../users.ts";

/** Throws CredentialsChanged unless the account is still as `signedIn` saw it. */
export async function assertStillSignedIn(
  tx: Queryable,
  dialect: Dialect,
  userId: string,
  signedIn: SignedInAs,
): Promise<void> {
  const row = await tx.one<{ credential_stamp: string; credentials_changed_at: string | null }>(
    `SELECT credential_stamp, credentials_changed_at FROM users WHERE id = $1${dialect.forUpdate}`,
    [userId],
  );
  const live =
    row !== undefined &&
    ("credentialStamp" in signedIn
      ? row.credential_stamp === signedIn.credentialStamp
      : row.credentials_changed_at === null || row.credentials_changed_at <= signedIn.unchangedSince);
  if (!live) throw new CredentialsChanged();
}
