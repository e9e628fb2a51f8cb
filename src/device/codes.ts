// The two codes of a device authorization (RFC 8628 sections 3.2 and 6.1):
// the device code, 256 random bits the device keeps and polls with, and the
// user code a person types at /device: 8 letters from a 20-letter alphabet
// without vowels (no words spelt by accident, no 0/O or 1/I to confuse),
// shown as XXXX-XXXX and read back case- and dash-insensitively. About 34.5
// bits: with at most 5 wrong entries a minute per browser and per address,
// and codes living 10 minutes, a guess succeeds with negligible odds. Both
// are stored as their SHA-256 only.
import { hash, randomInt } from "node:crypto";
import { randomBase64url } from "../random-pool.ts";

export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;
const USER_CODE = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);

/** A new device code: 256 random bits, base64url (43 characters). */
export function newDeviceCode(): string {
  return randomBase64url(32);
}

/** A new user code, its letters drawn uniformly (randomInt rejects the biased draws). */
export function newUserCode(): string {
  let code = "";
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** The code as a person reads it: XXXX-XXXX. */
export function displayUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * What a person typed, as a user code: upper-cased, dashes and spaces removed; undefined when that is
 * not 8 letters of the alphabet (counted as a wrong entry all the same).
 */
export function normalizeUserCode(typed: string): string | undefined {
  if (typed.length > 64) return undefined;
  const code = typed.toUpperCase().replace(/[\s-]/g, "");
  return USER_CODE.test(code) ? code : undefined;
}

export function hashDeviceCode(code: string): string {
  return hash("sha256", `device:${code}`, "base64url");
}

export function hashUserCode(code: string): string {
  return hash("sha256", `user:${code}`, "base64url");
}
