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
//
// The line of waiting turns is bounded (issue 22): past PASSWORD_HASH_QUEUE_LIMIT
// waiting, a new hash or verify is refused at once with PasswordHashQueueFull
// (503 with Retry-After), so a login storm cannot make every login wait longer
// and longer. Refresh grants and the token check never hash and never wait here.
import { type Algorithm, hash as argon2Hash, verify as argon2Verify, parseOptions } from "@node-rs/argon2";
import { PasswordHashQueueFull } from "../errors.ts";
import { DEFAULT_HASH_QUEUE_LIMIT, MAX_CONCURRENT_HASHES } from "./hash-capacity.ts";
import type { Argon2Params } from "./password-settings.ts";

/** OWASP Password Storage Cheat Sheet, Argon2id minimum configuration. */
export const OWASP_ARGON2ID: Argon2Params = { memoryKib: 19_456, timeCost: 2, parallelism: 1 };

const ARGON2ID = 2 as Algorithm.Argon2id; // the package's enum is a const enum, not importable as a value

/** Hashes running now, across every hasher of the process, and the turns waiting for one to end. */
let runningHashes = 0;
const waitingHashes: Array<() => void> = [];

/** How many hashes run now and how many wait for their turn (for tests and diagnostics). */
export function hashingLoad(): { running: number; waiting: number; limit: number } {
  return { running: runningHashes, waiting: waitingHashes.length, limit: MAX_CONCURRENT_HASHES };
}

/** The longest Retry-After a refusal names, whatever the measured drain time. */
const MAX_RETRY_AFTER_SECONDS = 60;

/**
 * Retry-After for a refusal: the time the turns already waiting need to drain, at the measured time
 * per turn over the cores, in whole seconds, at least 1 (and at most a minute). A client that comes
 * back then finds the line it was refused by served, instead of meeting it again a second later.
 */
export function retryAfterSeconds(waiting: number, msPerTurn: number, cores: number = MAX_CONCURRENT_HASHES): number {
  const seconds = Math.ceil((waiting * msPerTurn) / cores / 1000);
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, seconds));
}

/** Runs `work` when a core is free; refuses at once (`refuse()`'s error) when `queueLimit` turns already wait. */
async function inTurn<T>(work: () => Promise<T>, queueLimit: number, refuse: () => Error): Promise<T> {
  if (runningHashes < MAX_CONCURRENT_HASHES) runningHashes += 1;
  else if (waitingHashes.length >= queueLimit) throw refuse();
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

export interface HashQueueOptions {
  /** PASSWORD_HASH_QUEUE_LIMIT: turns that may wait for a core; one more is refused (0: none may wait). */
  queueLimit?: number;
  /** Milliseconds, for the time per turn that Retry-After is computed from (the app's clock). */
  clock?: () => number;
}

export function createPasswordHasher(
  params: Argon2Params = OWASP_ARGON2ID,
  { queueLimit = DEFAULT_HASH_QUEUE_LIMIT, clock = Date.now }: HashQueueOptions = {},
): PasswordHasher {
  const options = {
    algorithm: ARGON2ID,
    memoryCost: params.memoryKib,
    timeCost: params.timeCost,
    parallelism: params.parallelism,
  };
  let dummyHash: Promise<string> | undefined;
  const currentPrefix = `$argon2id$v=19$m=${params.memoryKib},t=${params.timeCost},p=${params.parallelism}$`;

  // Time one turn holds a core, smoothed over the last dozen or so; read only when a turn is refused.
  let msPerTurn = 0;
  const refuse = () => new PasswordHashQueueFull(retryAfterSeconds(waitingHashes.length, msPerTurn));
  const timed = async <T>(work: () => Promise<T>): Promise<T> => {
    const started = clock();
    try {
      return await work();
    } finally {
      const ms = clock() - started;
      msPerTurn = msPerTurn === 0 ? ms : msPerTurn + (ms - msPerTurn) / 16;
    }
  };
  const hash = (password: string) => inTurn(() => timed(() => argon2Hash(password, options)), queueLimit, refuse);
  const verify = (storedHash: string, password: string) =>
    inTurn(() => timed(() => argon2Verify(storedHash, password)), queueLimit, refuse);

  const hasher: PasswordHasher = {
    hash,

    async verify(storedHash, password) {
      try {
        if (BCRYPT.test(storedHash)) return await (await loadBcrypt()).compare(password, storedHash);
        return await verify(storedHash, password);
      } catch (error) {
        // A refused turn is not a wrong password: it leaves as the 503 it is.
        if (error instanceof PasswordHashQueueFull) throw error;
        return false;
      }
    },

    /**
     * Login calls this for an unknown e-mail so that the response time does not tell an
     * unknown account from a wrong password (spec, Authentication: no enumeration). The
     * dummy hash is made once with the current parameters, so its cost matches real hashes.
     */
    async verifyDummy(password) {
      // Refused like any other turn when the line is full (the same 503 as for a real account); a
      // refused first hash is not kept, so the next unknown e-mail makes it again.
      dummyHash ??= hasher.hash("dummy password that no account has").catch((error: unknown) => {
        dummyHash = undefined;
        throw error;
      });
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
