// All settings of the service, read from an environment object once at
// start-up and validated here. A bad value throws ConfigError naming the
// setting; server.ts prints that one line and exits. Nothing else in the
// code reads process.env. This module also owns the generated signing-secret
// file used when SIGNING_SECRET is unset on the embedded SQLite default.
import { randomBytes } from "node:crypto";
import { closeSync, fstatSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ConfigError } from "./errors.ts";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** RFC 7518 section 3.2: an HS256 key has at least 256 bits. */
export const MIN_SECRET_BYTES = 32;
export const DEFAULT_DATABASE_URL = "sqlite:data/users.db";
export const SECRET_FILE_NAME = "signing-secret";

export type DatabaseLocation = { kind: "sqlite"; path: string };

export interface Config {
  host: string;
  port: number;
  logLevel: LogLevel;
  database: DatabaseLocation;
  signingSecret: string;
  /** Anyone may POST /users; when false only admins create users. */
  signupOpen: boolean;
  /** Created (or promoted) at start-up when no active admin exists. */
  firstAdmin?: { email: string; password: string };
}

export interface LoadedConfig {
  config: Config;
  /** Start-up facts worth one log line each (never a secret value). */
  notices: string[];
}

export type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env, cwd: string = process.cwd()): LoadedConfig {
  const notices: string[] = [];
  const database = parseDatabaseUrl(setting(env, "DATABASE_URL") ?? DEFAULT_DATABASE_URL, cwd);
  const config: Config = {
    host: setting(env, "HOST") ?? "127.0.0.1",
    port: parsePort(setting(env, "PORT") ?? "8000"),
    logLevel: parseLogLevel(setting(env, "LOG_LEVEL") ?? "info"),
    database,
    signingSecret: resolveSigningSecret(setting(env, "SIGNING_SECRET"), database, notices),
    signupOpen: parseBoolean("SIGNUP_OPEN", setting(env, "SIGNUP_OPEN") ?? "true"),
    firstAdmin: parseFirstAdmin(setting(env, "FIRST_ADMIN_EMAIL"), env.FIRST_ADMIN_PASSWORD),
  };
  return { config, notices };
}

/** An empty value counts as unset, so `PORT=` in a .env file means "default". */
function setting(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

function parsePort(raw: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new ConfigError("PORT", `must be a whole number from 0 to 65535, got "${raw}"`);
  }
  return port;
}

function parseBoolean(name: string, raw: string): boolean {
  const value = raw.toLowerCase();
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** Both or neither; the password is taken exactly as given and never echoed. */
function parseFirstAdmin(email: string | undefined, password: string | undefined): Config["firstAdmin"] {
  if (email === undefined && (password === undefined || password === "")) return undefined;
  if (email === undefined) throw new ConfigError("FIRST_ADMIN_EMAIL", "is required when FIRST_ADMIN_PASSWORD is set");
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) {
    throw new ConfigError("FIRST_ADMIN_EMAIL", "must be an e-mail address");
  }
  if (password === undefined || password === "") {
    throw new ConfigError("FIRST_ADMIN_PASSWORD", "is required when FIRST_ADMIN_EMAIL is set");
  }
  const length = [...password].length;
  if (length < 8 || length > 256)
    throw new ConfigError("FIRST_ADMIN_PASSWORD", `must be 8 to 256 characters, got ${length}`);
  return { email, password };
}

function parseLogLevel(raw: string): LogLevel {
  const level = raw.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError("LOG_LEVEL", `must be one of ${LOG_LEVELS.join(", ")}, got "${raw}"`);
  }
  return level as LogLevel;
}

/** Accepted forms: `sqlite:PATH` (relative to the working directory) and `sqlite::memory:`. */
export function parseDatabaseUrl(raw: string, cwd: string): DatabaseLocation {
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length);
    if (path === "") throw new ConfigError("DATABASE_URL", 'sqlite: needs a file path, as in "sqlite:data/users.db"');
    if (path === ":memory:") return { kind: "sqlite", path };
    return { kind: "sqlite", path: resolve(cwd, path) };
  }
  // Never echo the raw value: a database URL may carry a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(raw)?.[0];
  if (scheme === "postgres:" || scheme === "postgresql:") {
    throw new ConfigError("DATABASE_URL", "PostgreSQL is not supported by this version; use sqlite:PATH");
  }
  throw new ConfigError("DATABASE_URL", 'must look like "sqlite:PATH" or "sqlite::memory:"');
}

function resolveSigningSecret(raw: string | undefined, database: DatabaseLocation, notices: string[]): string {
  if (raw !== undefined) return checkSecretLength(raw, "SIGNING_SECRET");
  if (database.path === ":memory:") {
    notices.push("SIGNING_SECRET is unset and the database is in memory: using a random secret for this process only");
    return generateSecret();
  }
  const file = join(dirname(database.path), SECRET_FILE_NAME);
  const created = ensureSecretFile(file);
  notices.push(
    created
      ? `SIGNING_SECRET is unset: generated a new signing secret in ${file} (owner-only permissions)`
      : `SIGNING_SECRET is unset: using the signing secret kept in ${file}`,
  );
  return readSecretFile(file);
}

function checkSecretLength(secret: string, where: string): string {
  const bytes = Buffer.byteLength(secret, "utf8");
  if (bytes < MIN_SECRET_BYTES) {
    throw new ConfigError("SIGNING_SECRET", `${where} must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes}`);
  }
  return secret;
}

export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Creates the secret file if missing. The secret is written to a private temp
 * file first and then hard-linked into place, so two first starts racing each
 * other agree on one complete secret (link fails with EEXIST for the loser).
 */
function ensureSecretFile(file: string): boolean {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(temp, `${generateSecret()}\n`, { mode: 0o600, flag: "wx" });
    linkSync(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new ConfigError("SIGNING_SECRET", `cannot create the secret file ${file}: ${(error as Error).message}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

function readSecretFile(file: string): string {
  const fd = openSync(file, "r");
  try {
    if ((fstatSync(fd).mode & 0o077) !== 0) {
      throw new ConfigError(
        "SIGNING_SECRET",
        `the secret file ${file} is readable by other users; run chmod 600 on it`,
      );
    }
    return checkSecretLength(readFileSync(fd, "utf8").trim(), `the secret in ${file}`);
  } finally {
    closeSync(fd);
  }
}
