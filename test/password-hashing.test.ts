// Password hashing under load: at most one Argon2id hash or verify per core
// runs at once (src/auth/passwords.ts); the others wait their turn and all
// finish with the right answer. And which stored hashes a login upgrades.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { describe, test } from "node:test";
import { createPasswordHasher, hashingLoad } from "../src/auth/passwords.ts";

describe("password hashing", () => {
  test("runs at most one hash per core at once; the rest wait and all finish correctly", async () => {
    const hasher = createPasswordHasher({ memoryKib: 1024, timeCost: 1, parallelism: 1 });
    const stored = await hasher.hash("correct horse battery staple");
    const cores = availableParallelism();
    assert.equal(hashingLoad().limit, cores);
    const attempts = cores * 3;
    const results = Array.from({ length: attempts }, (_, i) =>
      hasher.verify(stored, i % 2 === 0 ? "correct horse battery staple" : "wrong"),
    );
    const load = hashingLoad();
    assert.equal(load.running, cores);
    assert.equal(load.waiting, attempts - cores);
    const answers = await Promise.all(results);
    assert.deepEqual(
      answers,
      Array.from({ length: attempts }, (_, i) => i % 2 === 0),
    );
    assert.deepEqual(hashingLoad(), { running: 0, waiting: 0, limit: cores });
  });

  test("needsRehash: only an Argon2id hash with exactly the current parameters is kept", async () => {
    const params = { memoryKib: 1024, timeCost: 1, parallelism: 1 };
    const hasher = createPasswordHasher(params);
    const current = await hasher.hash("correct horse battery staple");
    assert.equal(hasher.needsRehash(current), false);
    const stronger = createPasswordHasher({ ...params, memoryKib: 2048 });
    assert.equal(stronger.needsRehash(current), true, "memory raised");
    assert.equal(createPasswordHasher({ ...params, timeCost: 2 }).needsRehash(current), true, "time cost raised");
    assert.equal(createPasswordHasher({ ...params, parallelism: 2 }).needsRehash(current), true, "lanes changed");
    // The same parameters under another Argon2 variant (argon2i) are not kept either.
    assert.equal(hasher.needsRehash(current.replace("$argon2id$", "$argon2i$")), true, "argon2i");
    assert.equal(hasher.needsRehash(`$2b$10$${"a".repeat(53)}`), true, "bcrypt");
    assert.equal(hasher.needsRehash("not a hash"), true, "unreadable");
  });
});
