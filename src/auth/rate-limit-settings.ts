// The brute-force limits' settings (auth/rate-limits.ts): one window, and how
// many failures, sign-ups and mail requests each key may have in it.
// Declared here, beside the limits; config.ts composes them.
import { type Env, flag, integer, section } from "../settings/declare.ts";

export interface RateLimitConfig {
  enabled: boolean;
  windowSeconds: number;
  /** Failed logins for one account from one address. */
  loginPerAccountAndAddress: number;
  /** Failed logins for one account from all addresses together. */
  loginPerAccount: number;
  /** Failed logins from one address, over all accounts. */
  loginPerAddress: number;
  /** Sign-ups from one address. */
  signupPerAddress: number;
  /** Password-reset and verification mail requests from one address. */
  mailRequestsPerAddress: number;
  /** Password-reset and verification mail requests for one target e-mail. */
  mailRequestsPerEmail: number;
  /** Failed second-factor codes (and passwords on the second-factor routes) for one user. */
  secondFactorPerAccount: number;
  /**
   * Requests that leave a row behind without a secret (a public client's device authorization or pushed
   * authorization request), and refused ones, from one address.
   */
  clientRequestsPerAddress: number;
}

const RATE_LIMIT = flag({
  name: "RATE_LIMIT",
  fallback: "on",
  meaning: "`off` disables the limits (load tests, test environments); the service logs a warning at start.",
});

const RATE_LIMIT_WINDOW_SECONDS = integer({
  name: "RATE_LIMIT_WINDOW_SECONDS",
  fallback: 900,
  min: 1,
  max: 86_400,
  meaning: "The window of every limit.",
});

/** A count per window: most limits take from 1 to a million. */
const limit = (name: string, fallback: number, meaning: string, max = 1_000_000) =>
  integer({ name, fallback, min: 1, max, meaning });

const LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS = limit(
  "LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS",
  5,
  "Failed logins for one account from one address per window.",
);
const LOGIN_LIMIT_PER_ACCOUNT = limit(
  "LOGIN_LIMIT_PER_ACCOUNT",
  50,
  "Failed logins for one account from all addresses per window.",
);
const LOGIN_LIMIT_PER_ADDRESS = limit(
  "LOGIN_LIMIT_PER_ADDRESS",
  20,
  "Failed logins from one address over all accounts per window.",
);
const SIGNUP_LIMIT_PER_ADDRESS = limit(
  "SIGNUP_LIMIT_PER_ADDRESS",
  10,
  "Sign-ups from one address per window (admins are not counted).",
);
const MAIL_REQUEST_LIMIT_PER_ADDRESS = limit(
  "MAIL_REQUEST_LIMIT_PER_ADDRESS",
  10,
  "Reset and verification mail requests from one address per window.",
);
const MAIL_REQUEST_LIMIT_PER_EMAIL = limit(
  "MAIL_REQUEST_LIMIT_PER_EMAIL",
  3,
  "Reset and verification mail requests for one e-mail per window, whether or not it has an account.",
);
const MFA_LIMIT_PER_ACCOUNT = limit(
  "MFA_LIMIT_PER_ACCOUNT",
  5,
  "Failed second-factor checks (codes, recovery codes, passwords on the second-factor routes) for one " +
    "account per window; then 429.",
  1000,
);
const CLIENT_REQUEST_LIMIT_PER_ADDRESS = limit(
  "CLIENT_REQUEST_LIMIT_PER_ADDRESS",
  100,
  "Device authorization requests (`POST /oauth/device_authorization`) and pushed authorization requests " +
    "(`POST /oauth/par`) from one address per window that a public client made, or that were refused; then " +
    "429 `temporarily_unavailable`. A confidential client's accepted requests are not counted: its secret " +
    "already stops strangers.",
);

export const RATE_LIMIT_SETTINGS = section(
  "Rate limits",
  "src/auth/rate-limit-settings.ts",
  [
    RATE_LIMIT,
    RATE_LIMIT_WINDOW_SECONDS,
    LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS,
    LOGIN_LIMIT_PER_ACCOUNT,
    LOGIN_LIMIT_PER_ADDRESS,
    SIGNUP_LIMIT_PER_ADDRESS,
    MAIL_REQUEST_LIMIT_PER_ADDRESS,
    MAIL_REQUEST_LIMIT_PER_EMAIL,
    MFA_LIMIT_PER_ACCOUNT,
    CLIENT_REQUEST_LIMIT_PER_ADDRESS,
  ],
  "What each limit defends against, and how the counters are shared between instances (`REDIS_URL`): " +
    "[Password guessing](../security.md#password-guessing).",
);

export function readRateLimitSettings(env: Env): RateLimitConfig {
  return {
    enabled: RATE_LIMIT.read(env),
    windowSeconds: RATE_LIMIT_WINDOW_SECONDS.read(env),
    loginPerAccountAndAddress: LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS.read(env),
    loginPerAccount: LOGIN_LIMIT_PER_ACCOUNT.read(env),
    loginPerAddress: LOGIN_LIMIT_PER_ADDRESS.read(env),
    signupPerAddress: SIGNUP_LIMIT_PER_ADDRESS.read(env),
    mailRequestsPerAddress: MAIL_REQUEST_LIMIT_PER_ADDRESS.read(env),
    mailRequestsPerEmail: MAIL_REQUEST_LIMIT_PER_EMAIL.read(env),
    secondFactorPerAccount: MFA_LIMIT_PER_ACCOUNT.read(env),
    clientRequestsPerAddress: CLIENT_REQUEST_LIMIT_PER_ADDRESS.read(env),
  };
}
