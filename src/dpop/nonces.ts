// Server nonces for DPoP proofs (RFC 9449 section 8 and 9). A nonce is the
// HMAC of a time window's number with a key derived from the deployment's
// signing material, so every instance hands out and accepts the same nonces
// without sharing any state; it changes every window, and the nonce of the
// previous window is still accepted, so a client's nonce is good for at
// least one whole window. Both are computed once per window, so checking one
// is a string comparison.
import { createHmac, createSecretKey, timingSafeEqual } from "node:crypto";

export interface DpopNonces {
  /** The nonce of the current window. */
  current(): string;
  /** Whether a nonce is the current window's or the previous one's. */
  accepts(nonce: string): boolean;
}

export function createNonces({
  signingMaterial,
  windowSeconds,
  clock,
}: {
  signingMaterial: readonly string[];
  windowSeconds: number;
  clock: () => number;
}): DpopNonces {
  const [material] = signingMaterial;
  if (material === undefined) throw new Error("DPoP nonces need the signing material");
  // A key of its own, so that a nonce tells nothing about any other use of the material.
  // A KeyObject, made once: createHmac checks a Buffer key at about 20 us a call (issue 34).
  const key = createSecretKey(createHmac("sha256", material).update("dpop-nonce-key").digest());
  const nonceOf = (window: number) => createHmac("sha256", key).update(`dpop-nonce:${window}`).digest("base64url");
  let window = Number.NaN;
  let current = "";
  let previous = "";
  const refresh = () => {
    const now = Math.floor(clock() / 1000 / windowSeconds);
    if (now === window) return;
    window = now;
    current = nonceOf(now);
    previous = nonceOf(now - 1);
  };
  const equal = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  return {
    current() {
      refresh();
      return current;
    },
    accepts(nonce) {
      refresh();
      return equal(nonce, current) || equal(nonce, previous);
    },
  };
}
