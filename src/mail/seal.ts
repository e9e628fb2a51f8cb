// Link tokens wait in the outbox until a sender delivers them, possibly for
// hours while the SMTP server is down. They are stored sealed (AES-256-GCM
// under a key derived from the signing secret, or under EdDSA and ES256 the
// private signing key, with HKDF), so a copy of the database alone opens no
// account; the tokens table holds only hashes. With several secrets or keys
// (rotation), the first seals and all of them open.
// The same sealer, under its own HKDF info and keys, seals TOTP secrets
// (auth/second-factors.ts).
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, type KeyObject, randomBytes } from "node:crypto";

export interface Sealer {
  seal(plain: string): string;
  /** Undefined when no current secret opens it (the secret was rotated away, or the value was altered). */
  open(sealed: string): string | undefined;
}

// A KeyObject, made once: Node 24's createCipheriv spends about 50 us checking a Buffer key on every
// call (isKeyObject), several times the cipher's own work (docs/performance.md, issue 34).
function keyFor(secret: string, info: string): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync("sha256", secret, "user-token-service", info, 32)));
}

/** `info` separates the uses of one secret (HKDF, RFC 5869 section 3.2): each gets its own key. */
export function createSealer(secrets: readonly string[], info = "mail-outbox-seal"): Sealer {
  const keys = secrets.map((secret) => keyFor(secret, info));
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", keys[0] as KeyObject, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
    },
    open(sealed) {
      const raw = Buffer.from(sealed, "base64url");
      for (const key of keys) {
        try {
          const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
          decipher.setAuthTag(raw.subarray(12, 28));
          return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
        } catch {}
      }
      return undefined;
    },
  };
}
