// The second factors' settings: the key that seals authenticator-app secrets
// and keys the recovery codes (generated on SQLite when unset; optional with
// PostgreSQL, where authenticator apps are off without it), and the issuer
// the apps show. Declared here, beside the second factors; config.ts
// composes them.
import { ConfigError } from "../errors.ts";
import { type Env, section, setting, text } from "../settings/declare.ts";
import { resolveSecrets, type SecretSetting } from "../settings/secret-files.ts";
import type { DatabaseLocation } from "../store/settings.ts";

export const MFA_KEY_FILE_NAME = "mfa-encryption-key";

export interface MfaConfig {
  /**
   * MFA_ENCRYPTION_KEY: keys that seal TOTP secrets and key the recovery-code hashes. The first seals,
   * every one opens (rotation); each at least 32 bytes. Empty when it is unset with PostgreSQL:
   * authenticator apps are off then, and recovery codes are keyed by the signing material.
   */
  encryptionKeys: string[];
  /** The issuer shown by authenticator apps (the otpauth URI's issuer). */
  totpIssuer: string;
}

const MFA_ENCRYPTION_KEY = text({
  name: "MFA_ENCRYPTION_KEY",
  default: "generated",
  meaning:
    "Seals TOTP secrets and keys the recovery-code hashes: at least 32 bytes, or several separated by commas " +
    "for rotation (the first seals, every one opens; then `npm run cli -- mfa reseal`). Unset with an SQLite " +
    "file: a random one is kept in `mfa-encryption-key` beside the database file (owner-only); with " +
    "`sqlite::memory:` a per-process key. Unset with PostgreSQL the service starts with authenticator apps " +
    "off (a notice at start says so; `POST /me/totp` answers 403 naming the setting) and everything else on: " +
    "passkeys work, and recovery codes are keyed by a key derived from the signing secrets (or " +
    "`SIGNING_KEY_FILE` keys), so a code works while the secret it was made under is listed. Set it (the " +
    "same value on every instance) to turn the apps on; codes made before keep working. Keep it apart from " +
    "the database backups.",
});

/** Shown in the app and put in the otpauth URI: printable, no colon (the label's separator). */
const TOTP_ISSUER = setting({
  name: "TOTP_ISSUER",
  default: "`PUBLIC_URL`'s host name",
  meaning:
    "The name authenticator apps show beside the account (the otpauth URI's issuer): 1 to 64 printable " +
    "characters, no colon. Without `PUBLIC_URL`, the listen address's host; `user-token-service` when the " +
    "host is an IPv6 address.",
  parse(raw, name) {
    if (!/^[\p{L}\p{N}\p{P}\p{Zs}]{1,64}$/u.test(raw) || raw.includes(":"))
      throw new ConfigError(name, `must be 1 to 64 printable characters without a colon, got "${raw}"`);
    return raw;
  },
});

export const FACTOR_SETTINGS = section("Second factors", "src/factors/settings.ts", [MFA_ENCRYPTION_KEY, TOTP_ISSUER]);

const MFA_KEY: SecretSetting = {
  name: MFA_ENCRYPTION_KEY.name,
  fileName: MFA_KEY_FILE_NAME,
  noun: "second-factor encryption key",
  // Only authenticator apps need it: passkeys, and recovery codes (keyed by the signing material then, see
  // auth/second-factors.ts), work without it.
  unsetWithPostgres: {
    off:
      "MFA_ENCRYPTION_KEY is unset: authenticator apps are off until it is set (one value shared by every " +
      "instance); passkeys and recovery codes work without it",
  },
};

export function readFactorSettings(
  env: Env,
  where: { database: DatabaseLocation; linkBase: string; notices: string[] },
): MfaConfig {
  return {
    encryptionKeys: resolveSecrets(MFA_KEY, MFA_ENCRYPTION_KEY.raw(env), where.database, where.notices),
    totpIssuer: TOTP_ISSUER.read(env, defaultTotpIssuer(where.linkBase)),
  };
}

/** The public host name (an IPv6 address has colons, which the otpauth label cannot hold). */
function defaultTotpIssuer(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return host.includes(":") || host.startsWith("[") ? "user-token-service" : host;
}
