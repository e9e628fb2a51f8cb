// Password hashing under load: at most one Argon2id hash or verify per core
// runs at once (src/auth/passwords.ts); the others wait their turn and all
// finish with the right answer, up to PASSWORD_HASH_QUEUE_LIMIT waiting; one more
// is refused at once, with a Retry-After from the measured time per turn. And
// which stored hashes a login upgrades.
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { describe, test } from "node:test";
import { createPasswordHasher, hashingLoad, retryAfterSeconds } from "../src/auth/passwords.ts";
import { PasswordHashQueueFull } from "../src/errors.ts";

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

  test("past the queue limit a hash or verify is refused at once; Retry-After is the line's measured drain time", async () => {
    const params = { memoryKib: 1024, timeCost: 1, parallelism: 1 };
    let now = 0;
    const hasher = createPasswordHasher(params, { queueLimit: 1, clock: () => now });
    // One turn measured at 3 s by the injected clock: the clock moves while the hash runs.
    const measured = hasher.hash("correct horse battery staple");
    now = 3000;
    const stored = await measured;

    // Every core busy and one turn waiting (another hasher, same turns: they are the process's).
    const cores = availableParallelism();
    const slow = createPasswordHasher({ memoryKib: 19_456, timeCost: 20, parallelism: 1 });
    const blockers = Array.from({ length: cores + 1 }, () => slow.hash("keeps a core busy"));
    assert.deepEqual(hashingLoad(), { running: cores, waiting: 1, limit: cores });
    const attempts = [
      hasher.verify(stored, "correct horse battery staple"),
      hasher.verifyDummy("correct horse battery staple"),
      hasher.hash("correct horse battery staple"),
    ];
    for (const attempt of attempts) {
      await assert.rejects(attempt, (error: unknown) => {
        assert.ok(error instanceof PasswordHashQueueFull);
        assert.equal(error.status, 503);
        // One turn waiting, 3 s each, over the cores: ceil(3 / cores) seconds.
        assert.deepEqual(error.headers, { "retry-after": String(Math.ceil(3 / cores)) });
        return true;
      });
    }
    await Promise.all(blockers);
    // Refusals leave nothing behind: the dummy hash is made on the next try, and verifies answer again.
    assert.deepEqual(hashingLoad(), { running: 0, waiting: 0, limit: cores });
    assert.equal(await hasher.verifyDummy("anything"), false);
    assert.equal(await hasher.verify(stored, "correct horse battery staple"), true);
  });

  test("Retry-After: the waiting turns' time over the cores, whole seconds from 1 to 60", () => {
    assert.equal(retryAfterSeconds(0, 0, 2), 1, "nothing measured yet");
    assert.equal(retryAfterSeconds(200, 20, 2), 2, "the default line on two cores at OWASP's 20 ms");
    assert.equal(retryAfterSeconds(201, 20, 2), 3, "rounded up");
    assert.equal(retryAfterSeconds(100_000, 500, 1), 60, "at most a minute");
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
