// The storage settings: where the database is (SQLite file, in memory, or
// PostgreSQL and its pool) and the Redis that shares the rate-limit counters
// between instances. Declared here, beside the store; config.ts composes them.
import { resolve } from "node:path";
import { ConfigError } from "../errors.ts";
import { type Env, integer, section, setting, text } from "../settings/declare.ts";

export const DEFAULT_DATABASE_URL = "sqlite:data/users.db";

export type DatabaseLocation =
  | { kind: "sqlite"; path: string; synchronous: "normal" | "full" }
  | { kind: "postgres"; url: string; poolSize: number; timeoutMs: number };

export interface RedisConfig {
  url: string;
  timeoutMs: number;
  prefix: string;
}

const DATABASE_URL = text({
  name: "DATABASE_URL",
  fallback: DEFAULT_DATABASE_URL,
  default: `\`${DEFAULT_DATABASE_URL}\``,
  meaning:
    "`sqlite:PATH` (relative to the working directory), `sqlite::memory:`, or " +
    "`postgres://user:password@host:5432/db` for several instances (see [docs/deployment.md](../deployment.md)).",
});

const DB_POOL_SIZE = integer({
  name: "DB_POOL_SIZE",
  fallback: 10,
  min: 1,
  max: 1000,
  meaning: "PostgreSQL connections per instance.",
});

const DB_TIMEOUT_MS = integer({
  name: "DB_TIMEOUT_MS",
  fallback: 2000,
  min: 100,
  max: 60_000,
  meaning: "Bound on connecting to PostgreSQL and on each statement; past it the request answers 503.",
});

/** SQLite's durability in WAL mode: "normal" survives a process crash, "full" also a power loss. */
const SQLITE_SYNCHRONOUS = setting({
  name: "SQLITE_SYNCHRONOUS",
  fallback: "normal",
  default: "`normal`",
  meaning:
    "SQLite durability (WAL mode). `normal`: a crash of the process loses nothing committed; a power loss or " +
    "OS crash may lose the last transactions. `full`: nothing acknowledged is lost even then, at one fsync per " +
    "write. See [docs/deployment.md](../deployment.md#failure-modes).",
  parse(raw, name): "normal" | "full" {
    const value = raw.toLowerCase();
    if (value === "normal" || value === "full") return value;
    throw new ConfigError(name, `must be normal or full, got "${raw}"`);
  },
});

const REDIS_URL = setting({
  name: "REDIS_URL",
  default: "unset",
  meaning: "`redis://host:6379`: rate-limit counters shared by all instances. Unset: counted in the process.",
  parse(raw, name) {
    if (!/^rediss?:\/\/[^\s]+$/.test(raw))
      throw new ConfigError(name, 'must look like "redis://host:6379" or "rediss://..."');
    return raw;
  },
});

const REDIS_TIMEOUT_MS = integer({
  name: "REDIS_TIMEOUT_MS",
  fallback: 1000,
  min: 50,
  max: 60_000,
  meaning: "Bound on each Redis command (then 503).",
});

const REDIS_KEY_PREFIX = text({
  name: "REDIS_KEY_PREFIX",
  fallback: "uts:",
  default: "`uts:`",
  meaning: "Prefix of every Redis key.",
});

export const STORAGE_SETTINGS = section("Storage", "src/store/settings.ts", [
  DATABASE_URL,
  DB_POOL_SIZE,
  DB_TIMEOUT_MS,
  SQLITE_SYNCHRONOUS,
  REDIS_URL,
  REDIS_TIMEOUT_MS,
  REDIS_KEY_PREFIX,
]);

export function readStorageSettings(env: Env, cwd: string): { database: DatabaseLocation; redis?: RedisConfig } {
  const database = parseDatabaseUrl(DATABASE_URL.read(env), cwd, {
    poolSize: DB_POOL_SIZE.read(env),
    timeoutMs: DB_TIMEOUT_MS.read(env),
    synchronous: SQLITE_SYNCHRONOUS.read(env),
  });
  const timeoutMs = REDIS_TIMEOUT_MS.read(env);
  const prefix = REDIS_KEY_PREFIX.read(env);
  const url = REDIS_URL.optional(env);
  return { database, redis: url === undefined ? undefined : { url, timeoutMs, prefix } };
}

/** Accepted forms: `sqlite:PATH` (relative to the working directory), `sqlite::memory:`, `postgres://...`. */
export function parseDatabaseUrl(
  raw: string,
  cwd: string,
  options: { poolSize: number; timeoutMs: number; synchronous: "normal" | "full" } = {
    poolSize: 10,
    timeoutMs: 2000,
    synchronous: "normal",
  },
): DatabaseLocation {
  const { synchronous, ...pool } = options;
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length);
    if (path === "") throw new ConfigError("DATABASE_URL", 'sqlite: needs a file path, as in "sqlite:data/users.db"');
    if (path === ":memory:") return { kind: "sqlite", path, synchronous };
    return { kind: "sqlite", path: resolve(cwd, path), synchronous };
  }
  // Never echo the raw value: a database URL may carry a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(raw)?.[0];
  if (scheme === "postgres:" || scheme === "postgresql:") {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError("DATABASE_URL", "is not a valid postgres:// URL");
    }
    if (url.hostname === "" && !url.searchParams.has("host"))
      throw new ConfigError("DATABASE_URL", "postgres:// needs a host");
    return { kind: "postgres", url: raw, ...pool };
  }
  throw new ConfigError("DATABASE_URL", 'must look like "sqlite:PATH", "sqlite::memory:" or "postgres://user@host/db"');
}
