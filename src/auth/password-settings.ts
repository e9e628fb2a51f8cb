// The passwords' settings: the Argon2id parameters of new hashes, how many
// hashes may wait for a core before a route answers 503 at once
// (auth/passwords.ts), and the check against the list of common and breached
// passwords. Declared here, beside the hasher; config.ts composes them.
import { type Env, flag, integer, section } from "../settings/declare.ts";
import { DEFAULT_HASH_QUEUE_LIMIT } from "./hash-capacity.ts";

export interface Argon2Params {
  memoryKib: number;
  timeCost: number;
  parallelism: number;
}

export interface PasswordSettings {
  argon2: Argon2Params;
  passwordHashQueueLimit: number;
  passwordListCheck: boolean;
}

const ARGON2_MEMORY_KIB = integer({
  name: "ARGON2_MEMORY_KIB",
  fallback: 19_456,
  min: 7_168,
  max: 4_194_304,
  meaning: "Argon2id's memory per hash, in KiB.",
});

const ARGON2_TIME_COST = integer({
  name: "ARGON2_TIME_COST",
  fallback: 2,
  min: 1,
  max: 100,
  meaning: "Argon2id's passes over that memory.",
});

const ARGON2_PARALLELISM = integer({
  name: "ARGON2_PARALLELISM",
  fallback: 1,
  min: 1,
  max: 16,
  meaning: "Argon2id's lanes.",
});

const PASSWORD_HASH_QUEUE_LIMIT = integer({
  name: "PASSWORD_HASH_QUEUE_LIMIT",
  fallback: DEFAULT_HASH_QUEUE_LIMIT,
  min: 0,
  max: 100_000,
  // Not the machine's own number: the page must read the same wherever it is written.
  default: "100 per core (`200` on 2 cores)",
  meaning:
    "Password hashes and verifies that may wait for a core (one per core runs at once). One more is refused at " +
    'once: the route answers 503 `{"detail": "Too many password checks are waiting right now; try again in a ' +
    'few seconds"}` with `Retry-After` (the time the waiting ones need, measured, 1-60 s) instead of queueing ' +
    "behind a login storm. That covers login (the password grant, an unknown e-mail exactly like a real one), " +
    "sign-up, password change and reset, and the second-factor routes that ask for the password; refresh " +
    "grants and the token check never hash and are not held up. The default is about two seconds of waiting at " +
    "the default Argon2 parameters; lower it when raising them. Watch `password_hash_queue_depth`.",
});

const PASSWORD_LIST_CHECK = flag({
  name: "PASSWORD_LIST_CHECK",
  fallback: "on",
  meaning:
    "NIST SP 800-63B: new passwords (the first admin's too) found on the shipped list of common and breached " +
    "passwords are refused. `off` stops refusing them.",
});

export const PASSWORD_SETTINGS = section(
  "Passwords",
  "src/auth/password-settings.ts",
  [ARGON2_MEMORY_KIB, ARGON2_TIME_COST, ARGON2_PARALLELISM, PASSWORD_HASH_QUEUE_LIMIT, PASSWORD_LIST_CHECK],
  "The `ARGON2_*` settings are the Argon2id parameters of new hashes (OWASP's by default); older hashes are " +
    "upgraded at login (the upgrade waits for a later login while the hash queue is full). Raising them " +
    "lengthens the wait that `PASSWORD_HASH_QUEUE_LIMIT` allows.",
);

export function readPasswordSettings(env: Env): PasswordSettings {
  return {
    argon2: {
      memoryKib: ARGON2_MEMORY_KIB.read(env),
      timeCost: ARGON2_TIME_COST.read(env),
      parallelism: ARGON2_PARALLELISM.read(env),
    },
    passwordHashQueueLimit: PASSWORD_HASH_QUEUE_LIMIT.read(env),
    passwordListCheck: PASSWORD_LIST_CHECK.read(env),
  };
}
