// The token check's user lookup, answered from memory when nothing has
// changed. Exact, not "eventually": an entry is dropped the moment its user
// changes in this process (the store tells its listeners after each commit)
// and, for changes made elsewhere, as soon as the store's change feed brings
// the news (PostgreSQL LISTEN/NOTIFY; SQLite's data_version for other
// processes on the same file). While the feed is not known to work, the
// cache is bypassed and emptied: correctness first, then speed. Every entry
// also has a short time limit, which bounds the damage of a notification
// lost on a connection that still looked healthy. Bounded in size; only
// found users are kept (a miss always asks the store).
import type { UserRecord, UserStore } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";

export interface UserCacheSettings {
  /** How long an entry may be used; 0 turns the cache off. */
  ttlMs: number;
  maxEntries: number;
}

export interface UserLookup {
  /** The user whose e-mail equals the argument (normalised), from memory or from the store. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  /**
   * The same answer when memory holds it, without waiting; undefined means "ask findByEmail". Lets the
   * token check finish within the request's own tick on a cache hit (no promise, no microtask).
   */
  cached(email: string): UserRecord | undefined;
}

interface Entry {
  user: UserRecord;
  expiresAt: number;
}

export function createUserLookup(store: UserStore, settings: UserCacheSettings, clock: () => number): UserLookup {
  if (settings.ttlMs === 0) return { findByEmail: (email) => store.findByEmail(email), cached: () => undefined };
  const feed = store.userChanges;
  // Asking now starts the feed's channel (PostgreSQL's LISTEN), so it is up by the first requests.
  feed.usable();
  const byEmail = new Map<string, Entry>();
  const emailById = new Map<string, string>();
  // Moves on every change: a lookup that began before a change must not store what it read.
  let generation = 0;

  feed.subscribe((userId) => {
    generation += 1;
    if (userId === null) {
      byEmail.clear();
      emailById.clear();
      return;
    }
    const email = emailById.get(userId);
    if (email !== undefined) {
      byEmail.delete(email);
      emailById.delete(userId);
    }
  });

  function remember(email: string, user: UserRecord): void {
    if (!byEmail.has(email) && byEmail.size >= settings.maxEntries) {
      // Map keeps insertion order: the first key is the oldest entry.
      const oldest = byEmail.keys().next().value as string;
      const evicted = byEmail.get(oldest);
      byEmail.delete(oldest);
      if (evicted) emailById.delete(evicted.user.id);
    }
    byEmail.set(email, { user, expiresAt: clock() + settings.ttlMs });
    emailById.set(user.id, email);
  }

  /** The entry's user while it is within its time limit. */
  function fresh(key: string): UserRecord | undefined {
    const entry = byEmail.get(key);
    return entry !== undefined && entry.expiresAt > clock() ? entry.user : undefined;
  }

  return {
    cached: (email) => (feed.usable() ? fresh(normalizeEmail(email)) : undefined),
    async findByEmail(email) {
      if (!feed.usable()) return store.findByEmail(email);
      const key = normalizeEmail(email);
      const hit = fresh(key);
      if (hit !== undefined) return hit;
      const startedAt = generation;
      const user = await store.findByEmail(key);
      if (user !== undefined && startedAt === generation && feed.usable()) remember(key, user);
      return user;
    },
  };
}
