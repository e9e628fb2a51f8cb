// DPoP's settings (RFC 9449, issue 36): how old a proof may be, whether the
// service asks for its own nonces, and how long a nonce lives. Declared here,
// beside the proof check; config.ts composes them.
import { type Env, flag, integer, section } from "../settings/declare.ts";

export interface DpopSettings {
  /** How far in the past a proof's iat may be (RFC 9449 section 11.1). */
  proofMaxAgeSeconds: number;
  /** How far in the future a proof's iat may be: the clients' clocks run a little ahead. */
  proofFutureSeconds: number;
  /** Server nonces (RFC 9449 section 8 and 9): every proof must carry a fresh one. */
  nonces: boolean;
  /** A nonce is good for this window and the next one. */
  nonceWindowSeconds: number;
}

export const DEFAULT_DPOP_SETTINGS: DpopSettings = {
  proofMaxAgeSeconds: 60,
  proofFutureSeconds: 5,
  nonces: true,
  nonceWindowSeconds: 300,
};

const DPOP_PROOF_MAX_AGE_SECONDS = integer({
  name: "DPOP_PROOF_MAX_AGE_SECONDS",
  fallback: DEFAULT_DPOP_SETTINGS.proofMaxAgeSeconds,
  min: 5,
  max: 600,
  meaning:
    "How old a DPoP proof (its `iat`) may be, in seconds; a proof up to " +
    `${DEFAULT_DPOP_SETTINGS.proofFutureSeconds} seconds in the future is taken too. Each proof's \`jti\` is ` +
    "remembered that long (in Redis when `REDIS_URL` is set, so every instance refuses a replay).",
});

const DPOP_NONCES = flag({
  name: "DPOP_NONCES",
  fallback: "on",
  meaning:
    "Server nonces for DPoP proofs (RFC 9449 section 8): a proof without the current nonce is answered " +
    '`use_dpop_nonce` with a `DPoP-Nonce` header (400 at the token endpoint, 401 with `WWW-Authenticate: DPoP error="use_dpop_nonce"` ' +
    "elsewhere), and client libraries retry with it. Nonces are derived from the signing secret, so every " +
    "instance accepts them. `off`: only `iat` bounds a proof's life.",
});

const DPOP_NONCE_LIFETIME_SECONDS = integer({
  name: "DPOP_NONCE_LIFETIME_SECONDS",
  fallback: DEFAULT_DPOP_SETTINGS.nonceWindowSeconds,
  min: 10,
  max: 86_400,
  meaning:
    "How often the DPoP nonce changes, in seconds; a nonce is accepted during its own period and the next, " +
    "so a client holds a good one for at least this long.",
});

export const DPOP_SETTINGS = section("DPoP (sender-constrained tokens)", "src/dpop/settings.ts", [
  DPOP_PROOF_MAX_AGE_SECONDS,
  DPOP_NONCES,
  DPOP_NONCE_LIFETIME_SECONDS,
]);

export function readDpopSettings(env: Env): DpopSettings {
  return {
    proofMaxAgeSeconds: DPOP_PROOF_MAX_AGE_SECONDS.read(env),
    proofFutureSeconds: DEFAULT_DPOP_SETTINGS.proofFutureSeconds,
    nonces: DPOP_NONCES.read(env),
    nonceWindowSeconds: DPOP_NONCE_LIFETIME_SECONDS.read(env),
  };
}
