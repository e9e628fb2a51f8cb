// User ids are UUID version 7 (RFC 9562): random enough that they reveal
// neither how many users exist nor a neighbour's id, yet ordered by creation
// time, so a primary-key index keeps new rows at its end and id order is
// creation order. Within one process ids are strictly increasing: ids made in
// the same millisecond (or after the clock stepped back) carry a counter in
// rand_a (RFC 9562 section 6.2, method 1).
import { randomBytes } from "node:crypto";
import { fillRandom } from "../random-pool.ts";

const bytes = new Uint8Array(16);
let lastMs = 0;
let counter = 0;

export function newId(now: number = Date.now()): string {
  fillRandom(bytes, 6, 10);
  let ms = Math.floor(now);
  if (ms <= lastMs) {
    counter += 1;
    if (counter > 0xfff) {
      lastMs += 1;
      counter = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    counter = 0;
  }
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = Buffer.from(bytes).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * A user's credential stamp: random, replaced whenever the password, the e-mail or the account's
 * standing changes, and carried by every access token, so a token issued before such a change (or
 * to an earlier holder of the e-mail) never matches again, whatever the clocks say.
 */
export function newCredentialStamp(): string {
  return randomBytes(9).toString("base64url");
}
