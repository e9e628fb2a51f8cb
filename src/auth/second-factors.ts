// Second factors (issue 14): authenticator apps (TOTP, RFC 6238) through
// the otpauth library, recovery codes, and the short-lived challenge
// (mfa_token) that the token endpoint hands out instead of tokens when an
// account has a factor. The only module that touches otpauth and qrcode.
//
// - TOTP secrets are 160 random bits (RFC 4226 section 4), SHA-1, six digits,
//   30-second steps: what every authenticator app reads from a QR code. They
//   are stored sealed (AES-256-GCM under MFA_ENCRYPTION_KEY; the first key
//   seals, every one opens), never in clear.
// - A code is accepted for the current step or one step either side (clock
//   drift), and only for a step after the last one accepted: the store moves
//   the last step atomically, so a code works once, even under concurrency.
// - Recovery codes: ten codes of 60 random bits, shown once, stored only as
//   HMAC-SHA-256 under a key derived from MFA_ENCRYPTION_KEY, or, where it is
//   unset (PostgreSQL), from the signing material (see hashCode).
// - Without MFA_ENCRYPTION_KEY (PostgreSQL) authenticator apps are off: an
//   enrolment answers 403 naming the setting; everything else works.
// - The mfa_token is 256 random bits, stored as its SHA-256, single use,
//   five minutes; a few wrong codes spend it.
// Failed checks count against the user (rate-limits.ts) and answer 429 past
// the limit.
import { createHash, createHmac, createSecretKey, hkdfSync, randomBytes } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import { HttpError } from "../errors.ts";
import { createSealer } from "../mail/seal.ts";
import type {
  AuditEntry,
  SecondFactors as FactorCounts,
  NewOutboxMessage,
  UserRecord,
  UserStore,
} from "../store/store.ts";
import type { RateLimits } from "./rate-limits.ts";

export const MFA_TOKEN_LIFETIME_SECONDS = 300;
/** Wrong codes one mfa_token survives; the next login needs the password again. */
export const MFA_TOKEN_MAX_FAILURES = 5;
export const RECOVERY_CODE_COUNT = 10;
const TOTP_PERIOD_SECONDS = 30;
const TOTP_DIGITS = 6;
/** Steps accepted either side of the current one (RFC 6238 section 5.2 suggests at most one). */
const TOTP_DRIFT_STEPS = 1;
const SEAL_INFO = "totp-secret-seal";
const RECOVERY_HASH_INFO = "recovery-code-hash";
/** The HKDF label of recovery-code keys derived from the signing material, apart from every other use of it. */
const RECOVERY_HASH_FROM_SIGNING_INFO = "recovery-code-hash-from-signing-key";
/** Crockford's base32 alphabet: no I, L, O or U to misread. 32 symbols, so a byte & 31 is uniform. */
const CODE_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const CODE_LENGTH = 12;

export const TOTP_ALREADY_ENABLED = "An authenticator app is already set up; turn it off first to set up another";
export const NO_PENDING_TOTP = "No authenticator app is being set up: start with POST /me/totp";
export const TOTP_NOT_ENABLED = "No authenticator app is set up";
export const INVALID_OTP = "Invalid one-time code";
export const INVALID_RECOVERY_CODE = "Invalid recovery code";
export const INVALID_MFA_TOKEN = "Invalid or expired mfa_token";
export const NO_SECOND_FACTOR = "Turn on a second factor first: recovery codes go with one";
export const INVALID_PASSKEY = "The passkey could not be verified";
export const AUTHENTICATOR_APPS_OFF =
  "Authenticator apps are off on this service until its operator sets MFA_ENCRYPTION_KEY";

/** What a user sees once at enrolment. */
export interface TotpEnrolment {
  secret: string;
  otpauthUri: string;
  /** A PNG data URI of the otpauth URI's QR code. */
  qrCode: string;
}

export interface Challenge {
  token: string;
  expiresIn: number;
}

/** The factor on offer, named as in the token endpoint's `mfa_factors`. */
export type FactorName = "otp" | "recovery_code" | "webauthn";

/** The 401's detail when the answer for a factor is wrong (or was already used). */
export const WRONG_ANSWER: Record<FactorName, string> = {
  otp: INVALID_OTP,
  recovery_code: INVALID_RECOVERY_CODE,
  webauthn: INVALID_PASSKEY,
};

export interface SecondFactorService {
  status(userId: string): Promise<FactorCounts>;
  /** Whether the password grant must ask for a second factor, and which ones it offers. */
  factorsOnOffer(userId: string): Promise<FactorName[]>;
  /** Starts (or restarts) an enrolment; 409 when a confirmed factor exists, 403 when apps are off. */
  enrolTotp(user: UserRecord): Promise<TotpEnrolment>;
  /**
   * Confirms the pending enrolment with a code; answers new recovery codes when the user has none
   * left (first factor), else an empty list. 400 on a wrong code, 409 with nothing pending.
   */
  confirmTotp(user: UserRecord, code: string, clientAddress: string, notice?: NewOutboxMessage): Promise<string[]>;
  /** A code of the confirmed factor, accepted once; the events are recorded with the acceptance. */
  checkTotp(userId: string, code: string, events: readonly AuditEntry[]): Promise<boolean>;
  /** Spends a recovery code; the events are recorded with it. */
  useRecoveryCode(userId: string, code: string, events: readonly AuditEntry[]): Promise<boolean>;
  /** Ten new codes in clear (to show once) and their hashes (to store). */
  newRecoveryCodes(): { codes: string[]; hashes: string[] };
  /**
   * For a factor being added: ten new codes with their `recovery_codes_generated` event when the user
   * has none left (a first factor, whatever its kind), to store with the factor; undefined when the
   * user has some, which stay valid and are not replaced.
   */
  codesForNewFactor(userId: string, clientAddress: string | null): Promise<NewFactorCodes | undefined>;
  /** A new mfa_token for a user who proved the password (or, `firstFactor` "fed", an upstream sign-in). */
  challenge(userId: string, firstFactor?: string): Promise<Challenge>;
  /** The user of a live mfa_token; 401 when it is unknown, spent or expired. */
  challengedUser(mfaToken: string): Promise<string>;
  /** The same, with the first factor the challenge followed. */
  challengedSignIn(mfaToken: string): Promise<{ userId: string; firstFactor: string }>;
  /** Counts a wrong code against the mfa_token (spending it at the limit) and the user. */
  recordFailure(mfaToken: string | undefined, userId: string): Promise<void>;
  /** Spends the mfa_token after a right code; 401 when another request spent it first. */
  spendChallenge(mfaToken: string): Promise<void>;
  /** Re-seals every TOTP secret under the first key; answers how many were rewritten and how many none opens. */
  reseal(): Promise<{ resealed: number; unreadable: number }>;
}

export interface NewFactorCodes {
  codes: string[];
  hashes: string[];
  events: AuditEntry[];
}

export interface SecondFactorOptions {
  store: UserStore;
  /** MFA_ENCRYPTION_KEY: the first seals, every one opens; none means authenticator apps are off. */
  keys: readonly string[];
  /**
   * The signing secrets (HS256) or private keys (EdDSA, ES256), in their configured order: the recovery
   * codes' keys where MFA_ENCRYPTION_KEY is unset, and candidates always, so codes made before it was set
   * keep working.
   */
  signingMaterial: readonly string[];
  issuer: string;
  limits: RateLimits;
  clock: () => number;
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/** Lower case, no spaces or dashes, and Crockford's look-alikes read as the digits they resemble. */
function normalizeRecoveryCode(code: string): string {
  return code.toLowerCase().replaceAll(/[\s-]/g, "").replaceAll("o", "0").replaceAll(/[il]/g, "1");
}

function newRecoveryCode(): string {
  const bytes = randomBytes(CODE_LENGTH);
  const symbols = [...bytes].map((byte) => CODE_ALPHABET[byte & 31]).join("");
  return `${symbols.slice(0, 4)}-${symbols.slice(4, 8)}-${symbols.slice(8)}`;
}

export function createSecondFactors({
  store,
  keys,
  signingMaterial,
  issuer,
  limits,
  clock,
}: SecondFactorOptions): SecondFactorService {
  const sealer = createSealer(keys, SEAL_INFO);
  // KeyObjects, made once: createHmac checks a Buffer key at about 20 us a call (issue 34).
  const hmacKey = (secret: string, info: string) =>
    createSecretKey(Buffer.from(hkdfSync("sha256", secret, "user-token-service", info, 32)));
  // The first makes new hashes: MFA_ENCRYPTION_KEY's first key as ever, else the first signing secret or key.
  const hmacKeys = [
    ...keys.map((key) => hmacKey(key, RECOVERY_HASH_INFO)),
    ...signingMaterial.map((secret) => hmacKey(secret, RECOVERY_HASH_FROM_SIGNING_INFO)),
  ];
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();

  /**
   * A fast keyed hash is enough here, unlike for passwords: a code carries 60 random bits, so no
   * dictionary helps, and without the key a stolen table cannot even be searched offline. A slow
   * hash would only make each login slower. One hash per key in use, so codes made before a key
   * rotation keep working while their key is still listed, and codes made before MFA_ENCRYPTION_KEY
   * was set keep working while their signing secret or key is.
   */
  function hashCode(code: string): string[] {
    const normalized = normalizeRecoveryCode(code);
    return hmacKeys.map((key) => createHmac("sha256", key).update(normalized).digest("base64url"));
  }

  function totpFor(secret: string, label = "user"): TOTP {
    return new TOTP({
      issuer,
      label,
      algorithm: "SHA1",
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD_SECONDS,
      secret: Secret.fromBase32(secret),
    });
  }

  /** The time step a code belongs to (within the drift window), or undefined for a wrong code. */
  function stepOf(secret: string, code: string): number | undefined {
    if (!/^\d{6}$/.test(code)) return undefined;
    const timestamp = clock();
    const delta = totpFor(secret).validate({ token: code, timestamp, window: TOTP_DRIFT_STEPS });
    if (delta === null) return undefined;
    return Math.floor(timestamp / 1000 / TOTP_PERIOD_SECONDS) + delta;
  }

  function openSecret(sealed: string): string {
    // A factor from before MFA_ENCRYPTION_KEY was unset: no key to open it with, said as such, not a 500.
    if (keys.length === 0) throw new HttpError(403, AUTHENTICATOR_APPS_OFF);
    const secret = sealer.open(sealed);
    // Only when the key that sealed it was removed from MFA_ENCRYPTION_KEY: an operator's error, a 500.
    if (secret === undefined) throw new Error("a TOTP secret cannot be opened with any MFA_ENCRYPTION_KEY");
    return secret;
  }

  const service: SecondFactorService = {
    status: (userId) => store.secondFactorsOf(userId),

    async factorsOnOffer(userId) {
      const { totp, recoveryCodesRemaining, passkeys } = await store.secondFactorsOf(userId);
      // Recovery codes stand in for a factor; alone they do not make one.
      if (!totp && passkeys === 0) return [];
      const offer: FactorName[] = [];
      if (totp) offer.push("otp");
      if (recoveryCodesRemaining > 0) offer.push("recovery_code");
      if (passkeys > 0) offer.push("webauthn");
      return offer;
    },

    async enrolTotp(user) {
      if (keys.length === 0) throw new HttpError(403, AUTHENTICATOR_APPS_OFF);
      const secret = new Secret({ size: 20 }).base32;
      if (!(await store.startTotp(user.id, sealer.seal(secret)))) throw new HttpError(409, TOTP_ALREADY_ENABLED);
      const otpauthUri = totpFor(secret, user.email).toString();
      // Loaded on the first enrolment only: no other request needs a QR code.
      const { default: QRCode } = await import("qrcode");
      return { secret, otpauthUri, qrCode: await QRCode.toDataURL(otpauthUri, { errorCorrectionLevel: "M" }) };
    },

    async confirmTotp(user, code, clientAddress, notice) {
      await limits.checkSecondFactor(user.id);
      const factor = await store.findTotp(user.id);
      if (!factor || factor.confirmedAt !== null) {
        throw new HttpError(409, factor ? TOTP_ALREADY_ENABLED : NO_PENDING_TOTP);
      }
      const step = stepOf(openSecret(factor.sealedSecret), code);
      const fresh = await service.codesForNewFactor(user.id, clientAddress);
      const events: AuditEntry[] = [
        { type: "second_factor", outcome: "totp_added", clientAddress, notice },
        ...(fresh?.events ?? []),
      ];
      if (step === undefined || !(await store.confirmTotp(user.id, step, fresh?.hashes, events))) {
        await limits.recordSecondFactorFailure(user.id);
        await store.recordEvent({ type: "second_factor", outcome: "otp_failed", userId: user.id, clientAddress });
        throw new HttpError(400, INVALID_OTP);
      }
      await limits.recordSecondFactorSuccess(user.id);
      return fresh?.codes ?? [];
    },

    async checkTotp(userId, code, events) {
      const factor = await store.findTotp(userId);
      if (!factor || factor.confirmedAt === null) return false;
      const step = stepOf(openSecret(factor.sealedSecret), code);
      return step !== undefined && (await store.acceptTotpStep(userId, step, events));
    },

    useRecoveryCode: (userId, code, events) => store.useRecoveryCode(userId, hashCode(code), iso(), events),

    newRecoveryCodes() {
      const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
      return { codes, hashes: codes.map((code) => hashCode(code)[0] as string) };
    },

    async codesForNewFactor(userId, clientAddress) {
      const { recoveryCodesRemaining } = await store.secondFactorsOf(userId);
      if (recoveryCodesRemaining > 0) return undefined;
      const events: AuditEntry[] = [{ type: "second_factor", outcome: "recovery_codes_generated", clientAddress }];
      return { ...service.newRecoveryCodes(), events };
    },

    async challenge(userId, firstFactor = "pwd") {
      const token = randomBytes(32).toString("base64url");
      await store.createMfaChallenge({
        tokenHash: hashToken(token),
        userId,
        expiresAt: iso(MFA_TOKEN_LIFETIME_SECONDS),
        firstFactor,
      });
      return { token, expiresIn: MFA_TOKEN_LIFETIME_SECONDS };
    },

    async challengedUser(mfaToken) {
      return (await service.challengedSignIn(mfaToken)).userId;
    },

    async challengedSignIn(mfaToken) {
      const challenge = await store.findMfaChallenge(hashToken(mfaToken));
      if (!challenge || challenge.spentAt !== null || challenge.expiresAt <= iso()) throw invalidMfaToken();
      return { userId: challenge.userId, firstFactor: challenge.firstFactor };
    },

    async recordFailure(mfaToken, userId) {
      if (mfaToken !== undefined) await store.failMfaChallenge(hashToken(mfaToken), MFA_TOKEN_MAX_FAILURES, iso());
      await limits.recordSecondFactorFailure(userId);
    },

    async spendChallenge(mfaToken) {
      if ((await store.spendMfaChallenge(hashToken(mfaToken), iso())) === undefined) throw invalidMfaToken();
    },

    async reseal() {
      let resealed = 0;
      let unreadable = 0;
      for (const { userId, sealedSecret } of await store.listTotpSecrets()) {
        const secret = sealer.open(sealedSecret);
        if (secret === undefined) {
          unreadable += 1;
          continue;
        }
        if (await store.replaceTotpSecret(userId, sealedSecret, sealer.seal(secret))) resealed += 1;
      }
      return { resealed, unreadable };
    },
  };
  return service;
}

export function invalidMfaToken(): HttpError {
  return new HttpError(401, INVALID_MFA_TOKEN, { "www-authenticate": "Bearer" });
}
