// The sessions' settings: how long a session (a chain of refresh tokens)
// lives, the grace for concurrent refreshes, and how many one user may hold.
// Declared here, beside the sessions; config.ts composes them.
import { type Env, integer, section } from "../settings/declare.ts";

export interface SessionsConfig {
  idleSeconds: number;
  absoluteSeconds: number;
  reuseGraceSeconds: number;
  maxPerUser: number;
}

const REFRESH_IDLE_SECONDS = integer({
  name: "REFRESH_IDLE_SECONDS",
  fallback: 14 * 86_400,
  default: "`1209600` (14 days)",
  min: 60,
  max: 365 * 86_400,
  meaning: "A session ends after this long without a refresh.",
});

const REFRESH_ABSOLUTE_SECONDS = integer({
  name: "REFRESH_ABSOLUTE_SECONDS",
  fallback: 30 * 86_400,
  default: "`2592000` (30 days)",
  min: 60,
  max: 3 * 365 * 86_400,
  meaning: "A session ends this long after the login, however often refreshed.",
});

const REFRESH_REUSE_GRACE_SECONDS = integer({
  name: "REFRESH_REUSE_GRACE_SECONDS",
  fallback: 10,
  min: 0,
  max: 300,
  meaning:
    "A spent refresh token presented again within this window is refused without ending the session " +
    "(concurrent refreshes); later, it ends the session (reuse).",
});

const MAX_SESSIONS_PER_USER = integer({
  name: "MAX_SESSIONS_PER_USER",
  fallback: 50,
  min: 1,
  max: 10_000,
  meaning:
    "Live sessions one user may hold; a new login ends the oldest beyond it. Each OpenID Connect client's " +
    "sessions of the user count apart, each client up to the same number.",
});

export const SESSION_SETTINGS = section("Sessions", "src/sessions/settings.ts", [
  REFRESH_IDLE_SECONDS,
  REFRESH_ABSOLUTE_SECONDS,
  REFRESH_REUSE_GRACE_SECONDS,
  MAX_SESSIONS_PER_USER,
]);

export function readSessionSettings(env: Env): SessionsConfig {
  return {
    idleSeconds: REFRESH_IDLE_SECONDS.read(env),
    absoluteSeconds: REFRESH_ABSOLUTE_SECONDS.read(env),
    reuseGraceSeconds: REFRESH_REUSE_GRACE_SECONDS.read(env),
    maxPerUser: MAX_SESSIONS_PER_USER.read(env),
  };
}
