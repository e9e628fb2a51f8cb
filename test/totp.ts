// The authenticator app's side of TOTP for tests (and the passkeys branch's browser test):
// the code an app shows for a secret at a given time.
import { Secret, TOTP } from "otpauth";

/** The six-digit code an authenticator app shows for this base32 secret at `timestampMs`. */
export function codeAt(secret: string, timestampMs: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({
    timestamp: timestampMs,
  });
}
