// Password hashing under load: at most one Argon2id hash or verify per core
// runs at once (src/auth/passwords.ts); the others wait their turn and all
// finish with the right answer.
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
});
