// Webhook signing secrets and signatures, by the Standard Webhooks
// specification: a secret is `whsec_` and the base64 of 32 random bytes; a
// delivery is signed with HMAC-SHA256 over `${id}.${timestamp}.${body}`
// under the secret's bytes, sent as `v1,<base64>`; while a rotated-away
// secret is in its grace period, the delivery carries one signature per
// secret, space-separated, so receivers on either secret accept it.
//
// The secrets key an HMAC, so they cannot be stored as hashes: they are
// sealed (AES-256-GCM, mail/seal.ts) under MFA_ENCRYPTION_KEY when it is
// set, and under a key derived from the signing material otherwise; every
// key in use opens (rotation of either). A copy of the database alone
// forges no delivery. The secret is shown once, at creation and rotation.
import { createHmac, randomBytes } from "node:crypto";
import { createSealer, type Sealer } from "../mail/seal.ts";

const PREFIX = "whsec_";
const SECRET_BYTES = 32;
const SEAL_INFO = "webhook-secret-seal";

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/** MFA_ENCRYPTION_KEY first (it seals), then the signing material: every one of them opens. */
export function webhookSecretSealer(encryptionKeys: readonly string[], signingMaterial: readonly string[]): Sealer {
  return createSealer([...encryptionKeys, ...signingMaterial], SEAL_INFO);
}

/** The value of `webhook-signature`: one `v1,<base64>` per secret, space-separated. */
export function signDelivery(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  const signed = `${id}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(PREFIX.length), "base64");
      return `v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
    })
    .join(" ");
}
