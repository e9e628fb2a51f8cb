// Secrets and private keys that a setting names, or that are generated when
// it is unset: on the embedded SQLite default a generated one is kept in an
// owner-only file beside the database (and reused at every start); with an
// in-memory database it lives as long as the process; with PostgreSQL it
// cannot be generated, since every instance must share one. Used by the
// signing secret and keys (auth/token-settings.ts), the ID-token keys
// (oidc/settings.ts) and the second-factor key (factors/settings.ts).
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { type AsymmetricAlgorithm, generatePrivateKeyPem, parsePrivateKey } from "../auth/keys.ts";
import { ConfigError } from "../errors.ts";
import type { DatabaseLocation } from "../store/settings.ts";

/** RFC 7518 section 3.2: an HS256 key has at least 256 bits. Every secret a setting holds has as many. */
export const MIN_SECRET_BYTES = 32;

export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** A comma-separated list of secrets with a generated owner-only file as the SQLite default. */
export interface SecretSetting {
  name: string;
  fileName: string;
  /** What the secret is, in notices: "signing secret". */
  noun: string;
  /**
   * Unset with PostgreSQL: why the service cannot start (every instance must share one value), or, for
   * a setting that only an optional feature needs, the notice that the feature is off until it is set.
   */
  unsetWithPostgres: { required: string } | { off: string };
}

/**
 * One secret, or several separated by commas for rotation (SIGNING_SECRET: the first signs new tokens,
 * the others still verify until they are removed; MFA_ENCRYPTION_KEY: the first seals, every one opens).
 * Generated secrets are base64url, so they never contain a comma.
 */
export function resolveSecrets(
  kind: SecretSetting,
  raw: string | undefined,
  database: DatabaseLocation,
  notices: string[],
): string[] {
  if (raw !== undefined) {
    const secrets = raw.split(",").map((secret) => secret.trim());
    return secrets.map((secret, i) =>
      checkSecretLength(kind.name, secret, secrets.length > 1 ? `secret number ${i + 1}` : kind.name),
    );
  }
  if (database.kind === "postgres") {
    const unset = kind.unsetWithPostgres;
    if ("required" in unset) throw new ConfigError(kind.name, `is required with PostgreSQL: ${unset.required}`);
    notices.push(unset.off);
    return [];
  }
  if (database.path === ":memory:") {
    notices.push(
      `${kind.name} is unset and the database is in memory: using a random ${kind.noun} for this process only`,
    );
    return [generateSecret()];
  }
  const file = join(dirname(database.path), kind.fileName);
  const created = ensureOwnerOnlyFile(file, () => `${generateSecret()}\n`, kind.name);
  notices.push(
    created
      ? `${kind.name} is unset: generated a new ${kind.noun} in ${file} (owner-only permissions)`
      : `${kind.name} is unset: using the ${kind.noun} kept in ${file}`,
  );
  return [checkSecretLength(kind.name, readOwnerOnlyFile(file, kind.name).trim(), `the secret in ${file}`)];
}

function checkSecretLength(name: string, secret: string, where: string): string {
  const bytes = Buffer.byteLength(secret, "utf8");
  if (bytes < MIN_SECRET_BYTES) {
    throw new ConfigError(name, `${where} must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes}`);
  }
  return secret;
}

/** A setting naming PEM private key files, with a generated owner-only file as the SQLite default. */
export interface KeyFileSetting {
  name: string;
  /** The generated file's name beside the database, for an algorithm. */
  fileName: (algorithm: AsymmetricAlgorithm) => string;
}

/**
 * The PEM keys the setting names (several separated by commas for rotation), or a generated one;
 * undefined with PostgreSQL and no setting.
 */
export function resolvePrivateKeys(
  kind: KeyFileSetting,
  algorithm: AsymmetricAlgorithm,
  raw: string | undefined,
  database: DatabaseLocation,
  cwd: string,
  notices: string[],
): string[] | undefined {
  if (raw !== undefined) {
    return raw.split(",").map((entry) => {
      const file = resolve(cwd, entry.trim());
      let pem: string;
      try {
        pem = readFileSync(file, "utf8");
      } catch (error) {
        throw new ConfigError(kind.name, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`);
      }
      return checkPrivateKey(kind.name, algorithm, pem, file);
    });
  }
  if (database.kind === "postgres") return undefined;
  if (database.path === ":memory:") {
    notices.push(
      `${kind.name} is unset and the database is in memory: using a random ${algorithm} key for this process only`,
    );
    return [generatePrivateKeyPem(algorithm)];
  }
  const file = join(dirname(database.path), kind.fileName(algorithm));
  const created = ensureOwnerOnlyFile(file, () => generatePrivateKeyPem(algorithm), kind.name);
  notices.push(
    created
      ? `${kind.name} is unset: generated a new ${algorithm} key in ${file} (owner-only permissions)`
      : `${kind.name} is unset: using the ${algorithm} key kept in ${file}`,
  );
  return [checkPrivateKey(kind.name, algorithm, readOwnerOnlyFile(file, kind.name), file)];
}

function checkPrivateKey(name: string, algorithm: AsymmetricAlgorithm, pem: string, file: string): string {
  try {
    parsePrivateKey(algorithm, pem);
  } catch (error) {
    throw new ConfigError(name, `${file} ${(error as Error).message}`);
  }
  return pem;
}

/**
 * Creates a secret file (signing secret or private key) if missing. The content is written to a
 * private temp file first and then hard-linked into place, so two first starts racing each other
 * agree on one complete secret (link fails with EEXIST for the loser). The content is made only when
 * the file is missing: an RSA key's generation cost tens of milliseconds of every start.
 */
function ensureOwnerOnlyFile(file: string, content: () => string, name: string): boolean {
  if (existsSync(file)) return false;
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(temp, content(), { mode: 0o600, flag: "wx" });
    linkSync(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new ConfigError(name, `cannot create the secret file ${file}: ${(error as Error).message}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

function readOwnerOnlyFile(file: string, name: string): string {
  const fd = openSync(file, "r");
  try {
    if ((fstatSync(fd).mode & 0o077) !== 0) {
      throw new ConfigError(name, `the secret file ${file} is readable by other users; run chmod 600 on it`);
    }
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
