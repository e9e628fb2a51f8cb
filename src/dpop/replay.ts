// The replay cache of DPoP proofs (RFC 9449 section 11.1): a proof's jti,
// with its key's thumbprint, may be claimed once while the proof could still
// be accepted. Several instances share it through Redis (SET NX PX in the
// counters' store, store/redis.ts), so a proof used on one is refused on
// every other; the embedded default keeps it in this process, in a bounded
// map whose entries leave when they expire (and, past the bound, the oldest
// first: at the default 66-second window that takes over 1,500 proofs a
// second).
import type { CounterStore } from "../auth/rate-limits.ts";

export interface ReplayCache {
  /** True the first time a key is claimed within `ttlMs`; false after (a replay). */
  claim(key: string, ttlMs: number): Promise<boolean>;
}

/** A counters' store that can also claim a key once (Redis: SET NX PX). */
export interface ClaimingStore extends CounterStore {
  claimOnce(key: string, ttlMs: number): Promise<boolean>;
}

export function canClaim(store: CounterStore): store is ClaimingStore {
  return typeof (store as Partial<ClaimingStore>).claimOnce === "function";
}

export function memoryReplayCache(clock: () => number, maxEntries = 100_000): ReplayCache {
  const expiries = new Map<string, number>();
  return {
    async claim(key, ttlMs) {
      const now = clock();
      const known = expiries.get(key);
      if (known !== undefined && known > now) return false;
      // Entries arrive in time order with one window: the expired ones are at the front.
      for (const [first, expiry] of expiries) {
        if (expiry > now && expiries.size < maxEntries) break;
        expiries.delete(first);
      }
      // Set anew at the end (a Map keeps a key's first place), so the order stays the expiries' order.
      expiries.delete(key);
      expiries.set(key, now + ttlMs);
      return true;
    },
  };
}

/** The replay cache of a deployment: Redis when the counters live there, else this process. */
export function replayCacheFor(counters: CounterStore, clock: () => number): ReplayCache {
  if (canClaim(counters)) return { claim: (key, ttlMs) => counters.claimOnce(`dpop:${key}`, ttlMs) };
  return memoryReplayCache(clock);
}
