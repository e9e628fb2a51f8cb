// User ids are UUID version 7 (RFC 9562): random enough that they reveal
// neither how many users exist nor a neighbour's id, yet ordered by creation
// time, so a primary-key index keeps new rows at its end and id order is a
// stable creation order.
import { randomFillSync } from "node:crypto";

const bytes = new Uint8Array(16);

export function newId(now: number = Date.now()): string {
  randomFillSync(bytes, 6, 10);
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = Buffer.from(bytes).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
