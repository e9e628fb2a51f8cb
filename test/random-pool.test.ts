// The pooled CSPRNG behind session ids, audit ids and refresh tokens: every
// draw is fresh (no byte sequence handed out twice, across many refills of
// the pool), nothing comes back zeroed, and oversized draws are refused.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fillRandom, randomBase64url } from "../src/random-pool.ts";

test("draws across many pool refills are all different and never blank", () => {
  const seen = new Set<string>();
  // 20,000 draws of 16 bytes: the 4 KiB pool is refilled about eighty times.
  for (let i = 0; i < 20_000; i++) {
    const bytes = new Uint8Array(16);
    fillRandom(bytes, 0, 16);
    assert.ok(
      bytes.some((byte) => byte !== 0),
      "a blank draw",
    );
    seen.add(Buffer.from(bytes).toString("hex"));
  }
  assert.equal(seen.size, 20_000);
});

test("fills only the requested range of the target", () => {
  const bytes = new Uint8Array(16);
  fillRandom(bytes, 6, 10);
  assert.deepEqual([...bytes.subarray(0, 6)], [0, 0, 0, 0, 0, 0]);
});

test("refresh-token randomness: 32 bytes as 43 base64url characters, all different", () => {
  const tokens = new Set(Array.from({ length: 1000 }, () => randomBase64url(32)));
  assert.equal(tokens.size, 1000);
  for (const token of tokens) assert.match(token, /^[\w-]{43}$/);
});

test("a draw larger than 256 bytes is refused", () => {
  assert.throws(() => fillRandom(new Uint8Array(300), 0, 300), RangeError);
});
