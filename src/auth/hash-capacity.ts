// How many password hashes run at once (one per core) and how many may wait
// for a turn by default (PASSWORD_HASH_QUEUE_LIMIT; passwords.ts explains
// the line). A module of its own, below both readers: the settings
// (auth/password-settings.ts, the default) and the hasher (auth/passwords.ts).
import { availableParallelism } from "node:os";

export const MAX_CONCURRENT_HASHES = Math.max(1, availableParallelism());

/**
 * Turns that may wait by default: 100 per core, about two seconds of waiting at OWASP's parameters
 * (a hash holds a core for about 20 ms here, so each core clears some 50 turns a second, and the
 * line drains in the same time whatever the number of cores).
 */
export const HASH_QUEUE_PER_CORE = 100;
export const DEFAULT_HASH_QUEUE_LIMIT = HASH_QUEUE_PER_CORE * MAX_CONCURRENT_HASHES;
