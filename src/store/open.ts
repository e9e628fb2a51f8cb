// Picks the backend DATABASE_URL names (never by guessing) and brings its schema up to date. It
// sits apart from store.ts, the interface every backend imports, so that no module of the store
// imports one that imports it back.
import type { DatabaseLocation } from "./settings.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { UserStore } from "./store.ts";

export async function openStore(location: DatabaseLocation, clock: () => number = Date.now): Promise<UserStore> {
  switch (location.kind) {
    case "sqlite":
      return openSqliteStore(location.path, clock, { synchronous: location.synchronous });
    case "postgres": {
      // Loaded only when used: an SQLite deployment never pays for the pg driver's memory.
      const { openPostgresStore } = await import("./postgres.ts");
      return openPostgresStore({
        url: location.url,
        poolSize: location.poolSize,
        timeoutMs: location.timeoutMs,
        clock,
      });
    }
  }
}
