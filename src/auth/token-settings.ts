// The access tokens' settings: how they are signed (HS256 with shared
// secrets, or EdDSA / ES256 with private keys, generated on SQLite when
// unset), the iss and aud they carry and the token check requires, the clock
// skew it tolerates, and its user cache. Declared here, beside the tokens and
// keys; config.ts composes them.
import { ConfigError } from "../errors.ts";
import { type Env, integer, section, setting, text } from "../settings/declare.ts";
import {
  type KeyFileSetting,
  resolvePrivateKeys,
  resolveSecrets,
  type SecretSetting,
} from "../settings/secret-files.ts";
import type { DatabaseLocation } from "../store/settings.ts";
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from "./keys.ts";

export const SECRET_FILE_NAME = "signing-secret";

export interface TokenSettings {
  signingAlgorithm: SigningAlgorithm;
  signingSecrets: string[];
  signingKeys: string[];
  tokenIssuer?: string;
  tokenAudience?: string;
  clockLeewaySeconds: number;
  userCache: { ttlMs: number; maxEntries: number };
}

const SIGNING_SECRET = text({
  name: "SIGNING_SECRET",
  default: "generated",
  meaning:
    "HS256 key, at least 32 bytes; or several separated by commas for rotation (the first signs, every one " +
    "verifies; see [Key rotation](../security.md#key-rotation)). When unset with an SQLite file, a random one " +
    "is kept in `signing-secret` beside the database file (owner-only; a file readable by others is refused). " +
    "With `sqlite::memory:` a random per-process secret is used. Required with PostgreSQL: every instance " +
    "that must accept the same tokens needs the same value.",
});

const SIGNING_ALGORITHM = setting({
  name: "SIGNING_ALGORITHM",
  fallback: "HS256",
  default: "`HS256`",
  meaning:
    "`HS256` (the spec's default: one shared secret), `EdDSA` (Ed25519) or `ES256` (P-256). With `EdDSA` or " +
    "`ES256` tokens are signed with a private key and other services verify them with the public keys at " +
    "`/.well-known/jwks.json`; `SIGNING_SECRET` is then refused.",
  parse(raw, name): SigningAlgorithm {
    const algorithm = SIGNING_ALGORITHMS.find((known) => known.toLowerCase() === raw.toLowerCase());
    if (algorithm === undefined)
      throw new ConfigError(name, `must be one of ${SIGNING_ALGORITHMS.join(", ")}, got "${raw}"`);
    return algorithm;
  },
});

const SIGNING_KEY_FILE = text({
  name: "SIGNING_KEY_FILE",
  default: "generated",
  meaning:
    "`EdDSA`/`ES256` only: a PEM private key file (`npm run cli -- key generate EdDSA key.pem`, or `openssl " +
    "genpkey -algorithm ed25519 -out key.pem`), or several separated by commas for rotation (the first signs, " +
    "all are accepted and published). Unset with an SQLite file: a key is generated in `signing-key-eddsa.pem` " +
    "(or `-es256.pem`) beside the database file, owner-only (a file readable by others is refused); with " +
    "`sqlite::memory:` a random per-process key; required with PostgreSQL.",
});

/** An absolute http(s) URL without query, fragment or trailing slash (RFC 8414 section 2 for an issuer). */
const TOKEN_ISSUER = setting({
  name: "TOKEN_ISSUER",
  default: "`PUBLIC_URL`",
  meaning:
    "The access tokens' `iss` (an http(s) URL without query, fragment or trailing slash), required by the " +
    "token check. Unset, and no `PUBLIC_URL`: tokens carry the issuing instance's listen address, and the " +
    "token check does not compare it.",
  parse(raw, name) {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "" || raw.endsWith("/"))
      throw new ConfigError(
        name,
        `must be an absolute http(s) URL without query, fragment or trailing slash, got "${raw}"`,
      );
    return raw;
  },
});

const TOKEN_AUDIENCE = setting({
  name: "TOKEN_AUDIENCE",
  default: "the declared issuer",
  meaning:
    "The access tokens' `aud` (one value of 1 to 256 visible characters, no commas), required by the token " +
    "check (as one value, or within an array). Resource servers check it too. With neither it nor an issuer " +
    "declared, `aud` is the issuer and not compared.",
  parse(raw, name) {
    if (!/^[\x21-\x7e]{1,256}$/.test(raw) || raw.includes(","))
      throw new ConfigError(name, "must be one value of 1 to 256 visible characters without commas");
    return raw;
  },
});

const CLOCK_LEEWAY_SECONDS = integer({
  name: "CLOCK_LEEWAY_SECONDS",
  fallback: 5,
  min: 0,
  max: 300,
  meaning: "Clock skew tolerated on `exp`, `nbf` and `iat`.",
});

const USER_CACHE =
  'See ["The token check\'s user cache"](../accounts/users-and-sessions.md#the-token-checks-user-cache).';

const USER_CACHE_TTL_MS = integer({
  name: "USER_CACHE_TTL_MS",
  fallback: 5000,
  min: 0,
  max: 60_000,
  meaning: `The token check's user cache: how long an entry may be used (0 turns the cache off). ${USER_CACHE}`,
});

const USER_CACHE_SIZE = integer({
  name: "USER_CACHE_SIZE",
  fallback: 10_000,
  min: 1,
  max: 1_000_000,
  meaning: `The token check's user cache: how many users it holds. ${USER_CACHE}`,
});

export const TOKEN_SETTINGS = section("Access tokens", "src/auth/token-settings.ts", [
  SIGNING_ALGORITHM,
  SIGNING_SECRET,
  SIGNING_KEY_FILE,
  TOKEN_ISSUER,
  TOKEN_AUDIENCE,
  CLOCK_LEEWAY_SECONDS,
  USER_CACHE_TTL_MS,
  USER_CACHE_SIZE,
]);

const SIGNING_SECRET_FILE: SecretSetting = {
  name: SIGNING_SECRET.name,
  fileName: SECRET_FILE_NAME,
  noun: "signing secret",
  unsetWithPostgres: { required: "every instance must share one secret" },
};

const SIGNING_KEY: KeyFileSetting = {
  name: SIGNING_KEY_FILE.name,
  fileName: (algorithm) => `signing-key-${algorithm.toLowerCase()}.pem`,
};

export function readTokenSettings(
  env: Env,
  where: { database: DatabaseLocation; cwd: string; publicUrl: string | undefined; notices: string[] },
): TokenSettings {
  const signingAlgorithm = SIGNING_ALGORITHM.read(env);
  const material = resolveSigningMaterial(signingAlgorithm, env, where);
  const tokenIssuer = TOKEN_ISSUER.optional(env) ?? where.publicUrl;
  const tokenAudience = TOKEN_AUDIENCE.optional(env);
  return {
    signingAlgorithm,
    ...material,
    ...(tokenIssuer === undefined ? {} : { tokenIssuer }),
    ...(tokenAudience === undefined ? {} : { tokenAudience }),
    clockLeewaySeconds: CLOCK_LEEWAY_SECONDS.read(env),
    userCache: { ttlMs: USER_CACHE_TTL_MS.read(env), maxEntries: USER_CACHE_SIZE.read(env) },
  };
}

/** HS256 takes SIGNING_SECRET; EdDSA and ES256 take SIGNING_KEY_FILE (or a generated key) and refuse a secret. */
function resolveSigningMaterial(
  algorithm: SigningAlgorithm,
  env: Env,
  { database, cwd, notices }: { database: DatabaseLocation; cwd: string; notices: string[] },
): { signingSecrets: string[]; signingKeys: string[] } {
  const secret = SIGNING_SECRET.raw(env);
  const keyFiles = SIGNING_KEY_FILE.raw(env);
  if (algorithm === "HS256") {
    if (keyFiles !== undefined)
      throw new ConfigError(
        SIGNING_KEY_FILE.name,
        "is for SIGNING_ALGORITHM=EdDSA or ES256; HS256 signs with SIGNING_SECRET",
      );
    return { signingSecrets: resolveSecrets(SIGNING_SECRET_FILE, secret, database, notices), signingKeys: [] };
  }
  if (secret !== undefined)
    throw new ConfigError(
      SIGNING_SECRET.name,
      `is for HS256; SIGNING_ALGORITHM=${algorithm} signs with SIGNING_KEY_FILE`,
    );
  // One PEM private key file, or several separated by commas for rotation: the first signs, the others
  // still verify and stay published until they are removed.
  const keys = resolvePrivateKeys(SIGNING_KEY, algorithm, keyFiles, database, cwd, notices);
  if (keys === undefined)
    throw new ConfigError(SIGNING_KEY_FILE.name, "is required with PostgreSQL: every instance must share one key");
  return { signingSecrets: [], signingKeys: keys };
}
