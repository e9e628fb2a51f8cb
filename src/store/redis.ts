// Rate-limit counters in Redis, so that limits hold across every instance
// behind the load balancer. One Lua script increments a counter and starts
// its window atomically. Commands never queue while Redis is away: they fail
// at once (bounded by a timeout) and surface as StoreUnavailable, a 503;
// ioredis keeps reconnecting in the background, so the service recovers by
// itself when Redis is back.
import { Redis } from "ioredis";
import type { Counter, CounterStore } from "../auth/rate-limits.ts";
import { StoreUnavailable } from "../errors.ts";

const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}
`;

export interface RedisOptions {
  url: string;
  timeoutMs: number;
  /** Prefix for every key (tests give each run its own). */
  prefix?: string;
}

export class RedisCounterStore implements CounterStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor({ url, timeoutMs, prefix = "uts:" }: RedisOptions) {
    this.#prefix = prefix;
    this.#redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectTimeout: timeoutMs,
      lazyConnect: false,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    });
    // Connection errors are reported per command; the client reconnects by itself.
    this.#redis.on("error", () => {});
  }

  async get(key: string): Promise<Counter | undefined> {
    return this.#call(async () => {
      const [count, ttl] = await this.#redis
        .multi()
        .get(this.#prefix + key)
        .pttl(this.#prefix + key)
        .exec()
        .then(results);
      if (count === null || Number(ttl) <= 0) return undefined;
      return { count: Number(count), resetAt: Date.now() + Number(ttl) };
    });
  }

  async increment(key: string, windowMs: number): Promise<Counter> {
    return this.#call(async () => {
      const [count, ttl] = (await this.#redis.eval(INCREMENT, 1, this.#prefix + key, windowMs)) as [number, number];
      return { count, resetAt: Date.now() + Math.max(ttl, 0) };
    });
  }

  /** True the first time `key` is set within `ttlMs`, false while it is still there (the DPoP replay cache). */
  async claimOnce(key: string, ttlMs: number): Promise<boolean> {
    return this.#call(async () => (await this.#redis.set(this.#prefix + key, "1", "PX", ttlMs, "NX")) === "OK");
  }

  async delete(key: string): Promise<void> {
    await this.#call(() => this.#redis.del(this.#prefix + key));
  }

  async ping(): Promise<void> {
    await this.#call(() => this.#redis.ping());
  }

  /** Waits for the first connection (start-up); throws StoreUnavailable when Redis cannot be reached. */
  async ready(timeoutMs: number): Promise<void> {
    if (this.#redis.status === "ready") return;
    await this.#call(
      () =>
        new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error("timed out connecting to Redis")), timeoutMs);
          this.#redis.once("ready", () => {
            clearTimeout(timer);
            resolve();
          });
        }),
    );
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }

  async #call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw new StoreUnavailable(error);
    }
  }
}

function results(replies: [error: Error | null, value: unknown][] | null): unknown[] {
  if (replies === null) throw new Error("transaction aborted");
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}
