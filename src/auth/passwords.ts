// Password hashing: Argon2id, by default with OWASP's minimum parameters
// (19 MiB, t=2, p=1; settings can raise them). @node-rs/argon2 runs every
// hash and verify as an async native task on libuv's thread pool, so the
// event loop keeps serving GET /me meanwhile. Stored hashes from other
// systems (bcrypt $2a$/$2b$/$2y$, Argon2 PHC strings with other parameters)
// verify too and report needsRehash, so login upgrades them. The spec leaves
// the algorithm open ("not shown"); this is the choice.
//
// At most one hash or verify per core runs at once; the others wait their
// turn here. Each holds its 19 MiB while it runs. With four at once (libuv's
// four threads) a login storm held 76 MiB of them and kept the thread pool
// from Node's other work; one more than the cores only fills the moments a
// hashing thread waits for the event loop, at 19 MiB more (docs/performance.md,
// "Tried and kept out").
import { availableParallelism } from "node:os";
import { type Algorithm, hash as argon2Hash, verify as argon2Verify, parseOptions } from "@node-rs/argon2";
import type { Argon2Params } from "../config.ts";

/** OWASP Password Storage Cheat Sheet, Argon2id minimum configuration. */
export const OWASP_ARGON2ID: Argon2Params = { memoryKib: 19_456, timeCost: 2, parallelism: 1 };

const ARGON2ID = 2 as Algorithm.Argon2id; // the package's enum is a const enum, not importable as a value

/** Hashes running now, across every hasher of the process, and the turns waiting for one to end. */
const MAX_CONCURRENT_HASHES = Math.max(1, availableParallelism());
let runningHashes = 0;
const waitingHashes: Array<() => void> = [];

/** How many hashes run now and how many wait for their turn (for tests and diagnostics). */
export function hashingLoad(): { running: number; waiting: number; limit: number } {
  return { running: runningHashes, waiting: waitingHashes.length, limit: MAX_CONCURRENT_HASHES };
}

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (runningHashes < MAX_CONCURRENT_HASHES) runningHashes += 1;
  else await new Promise<void>((resolve) => waitingHashes.push(resolve));
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, or is given back.
    const next = waitingHashes.shift();
    if (next) next();
    else runningHashes -= 1;
  }
}

const hash: typeof argon2Hash = (password, options) => inTurn(() => argon2Hash(password, options));
const verify: typeof argon2Verify = (hashed, password, options) =>
  inTurn(() => argon2Verify(hashed, password, options));
const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** bcrypt is only ever needed for imported hashes, until their first login upgrades them. */
const loadBcrypt = async () => (await import("bcryptjs")).default;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** False for a wrong password and for a stored value that is not a usable hash. */
  verify(storedHash: string, password: string): Promise<boolean>;
  /** Spends the same work as a real verify and answers false (for unknown accounts). */
  verifyDummy(password: string): Promise<false>;
  /** True when the stored hash is not Argon2id with exactly the current parameters. */
  needsRehash(storedHash: string): boolean;
}

export function createPasswordHasher(params: Argon2Params = OWASP_ARGON2ID): PasswordHasher {
  const options = {
    algorithm: ARGON2ID,
    memoryCost: params.memoryKib,
    timeCost: params.timeCost,
    parallelism: params.parallelism,
  };
  let dummyHash: Promise<string> | undefined;
  const currentPrefix = `$argon2id$v=19$m=${params.memoryKib},t=${params.timeCost},p=${params.parallelism}$`;

  const hasher: PasswordHasher = {
    hash: (password) => hash(password, options),

    async verify(storedHash, password) {
      try {
        if (BCRYPT.test(storedHash)) return await (await loadBcrypt()).compare(password, storedHash);
        return await verify(storedHash, password);
      } catch {
        return false;
      }
    },

    /**
     * Login calls this for an unknown e-mail so that the response time does not tell an
     * unknown account from a wrong password (spec, Authentication: no enumeration). The
     * dummy hash is made once with the current parameters, so its cost matches real hashes.
     */
    async verifyDummy(password) {
      dummyHash ??= hasher.hash("dummy password that no account has");
      await hasher.verify(await dummyHash, password);
      return false;
    },

    needsRehash(storedHash) {
      // Every login asks; a hash made with the current parameters starts with exactly this, and
      // comparing the prefix spares parsing it natively each time. Anything else is parsed.
      if (storedHash.startsWith(currentPrefix)) return false;
      try {
        const current = parseOptions(storedHash);
        return (
          current.algorithm !== ARGON2ID ||
          current.memoryCost !== params.memoryKib ||
          current.timeCost !== params.timeCost ||
          current.parallelism !== params.parallelism
        );
      } catch {
        return true;
      }
    },
  };
  return hasher;
}

/** True for the stored-hash formats this service can verify (used by the import command). */
export function isSupportedHash(storedHash: string): boolean {
  if (BCRYPT.test(storedHash)) return true;
  try {
    parseOptions(storedHash);
    return storedHash.startsWith("$argon2");
  } catch {
    return false;
  }
}
