// Cryptographically secure random bytes for the per-request secrets and ids
// (session ids, audit event ids, refresh tokens), drawn from a pool that is
// refilled from the CSPRNG 4 KiB at a time. Each call into it costs 5-25 us
// on this machine, where copying from the pool costs under one; a login took
// three or four. Node's own crypto.randomUUID() keeps such a pool for the
// same reason. Every byte is handed out once; the pool never wraps.
import { randomFillSync } from "node:crypto";

const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

/** Copies `length` fresh random bytes into `target` at `start` (length at most 256). */
export function fillRandom(target: Uint8Array, start: number, length: number): void {
  if (length > 256) throw new RangeError("fillRandom: at most 256 bytes at a time");
  if (offset + length > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  pool.copy(target, start, offset, offset + length);
  // The bytes handed out are wiped from the pool, so no later reader of the pool's memory sees them.
  pool.fill(0, offset, offset + length);
  offset += length;
}

/** `length` fresh random bytes as base64url (refresh tokens and other bearer secrets). */
export function randomBase64url(length: number): string {
  const bytes = Buffer.allocUnsafe(length);
  fillRandom(bytes, 0, length);
  return bytes.toString("base64url");
}
