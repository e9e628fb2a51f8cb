// The second factors' verbs (second-factors.ts): passkeys and WebAuthn
// challenges, the authenticator app, recovery codes and the token
// endpoint's mfa_token challenges. A change and its audit events are one
// transaction (eventful, or a transaction of its own).
import { prepared, type Queryable } from "../db.ts";
import { newId } from "../ids.ts";
import type {
  MfaChallenge,
  PasskeyRecord,
  SecondFactorVerbs,
  TotpFactor,
  WebAuthnChallengeRecord,
} from "../second-factors.ts";
import { reader } from "./reader.ts";
import { flag, iso, isUuid, type Row, type Shared } from "./shared.ts";
import { assertStillSignedIn } from "./signed-in.ts";

/** Which second factors a user has ($1): also what a proof of the address leaves (sql/recovery.ts). */
export const SECOND_FACTORS_OF = prepared(
  "second_factors_of",
  `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL) AS totp,
          (SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL) AS codes,
          (SELECT count(*) FROM webauthn_credentials WHERE user_id = $1) AS passkeys`,
);

/** What resetSecondFactors deletes of a user: its second factors and pending challenges. */
const RESET = ["totp_factors", "recovery_codes", "webauthn_credentials", "webauthn_challenges", "mfa_challenges"];

const readPasskey = reader<PasskeyRecord>({
  // PostgreSQL answers bigint as text; 32-bit counters fit a number exactly.
  counter: Number,
  transports: (value) => JSON.parse(value as string) as string[],
  backedUp: flag,
});
const readWebAuthnChallenge = reader<WebAuthnChallengeRecord>();
const readTotp = reader<TotpFactor>();
const readMfaChallenge = reader<MfaChallenge>();

export function secondFactorVerbs({ db, d, clock, now, find, record, eventful }: Shared): SecondFactorVerbs {
  /** Inside a transaction: the user's recovery codes become exactly these. */
  async function replaceCodes(tx: Queryable, userId: string, codeHashes: readonly string[], at: string) {
    await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
    if (codeHashes.length === 0) return;
    await tx.run(
      `INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT $1, value, $3 FROM ${d.elements("$2")}`,
      [userId, codeHashes, at],
    );
  }

  return {
    // Passkeys and WebAuthn challenges
    async addPasskey(passkey, events = [], recoveryCodeHashes, signedIn) {
      const at = clock();
      const { userId, credentialId, publicKey, counter, transports, name, deviceType, backedUp, aaguid } = passkey;
      const rest = [name, deviceType, backedUp, aaguid];
      return db.transaction(async (tx) => {
        if (signedIn !== undefined) await assertStillSignedIn(tx, d, userId, signedIn);
        const row = await tx.one<Row>(
          `INSERT INTO webauthn_credentials (id, user_id, credential_id, public_key, counter, transports, name,
                                             device_type, backed_up, aaguid, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (credential_id) DO NOTHING RETURNING *`,
          [newId(at), userId, credentialId, publicKey, counter, JSON.stringify(transports), ...rest, iso(at)],
        );
        if (row === undefined) return undefined;
        if (recoveryCodeHashes !== undefined) await replaceCodes(tx, userId, recoveryCodeHashes, iso(at));
        await record(tx, events, userId);
        return readPasskey(row);
      });
    },
    async listPasskeys(userId) {
      if (!isUuid(userId)) return [];
      const sql = "SELECT * FROM webauthn_credentials WHERE user_id = $1 ORDER BY id";
      return (await db.all<Row>(sql, [userId])).map(readPasskey);
    },
    async countPasskeys(userId) {
      if (!isUuid(userId)) return 0;
      const sql = "SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = $1";
      return Number((await db.one<{ n: number | string }>(sql, [userId]))?.n ?? 0);
    },
    async findPasskeyByCredentialId(credentialId) {
      if (credentialId.includes("\0")) return undefined;
      return find("SELECT * FROM webauthn_credentials WHERE credential_id = $1", [credentialId], readPasskey);
    },
    async renamePasskey(userId, id, name, events = []) {
      if (!isUuid(id, userId)) return undefined;
      const sql = "UPDATE webauthn_credentials SET name = $1 WHERE id = $2 AND user_id = $3 RETURNING *";
      const row = await eventful<Row>(sql, [name, id, userId], events);
      return row && readPasskey(row);
    },
    async removePasskey(userId, id, events = []) {
      if (!isUuid(id, userId)) return false;
      const sql = "DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2 RETURNING user_id";
      return (await eventful(sql, [id, userId], events)) !== undefined;
    },
    async recordPasskeyUse(id, use, events = []) {
      if (!isUuid(id)) return false;
      const row = await eventful(
        `UPDATE webauthn_credentials SET counter = $1, backed_up = $2, last_used_at = $3
         WHERE id = $4 AND counter = $5 RETURNING user_id`,
        [use.counter, use.backedUp, use.at, id, use.previousCounter],
        events,
      );
      return row !== undefined;
    },
    async saveWebAuthnChallenge(challenge) {
      await db.run(
        `INSERT INTO webauthn_challenges (id, challenge_hash, purpose, user_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [challenge.id, challenge.challengeHash, challenge.purpose, challenge.userId, now(), challenge.expiresAt],
      );
    },
    async takeWebAuthnChallenge(key, purpose, at) {
      if ("id" in key && !isUuid(key.id)) return undefined;
      const [column, value] = "id" in key ? ["id", key.id] : ["challenge_hash", key.challengeHash];
      if (value.includes("\0")) return undefined;
      // One statement: of several concurrent takers, only the one whose DELETE removed the row gets it.
      const row = await db.one<Row>(`DELETE FROM webauthn_challenges WHERE ${column} = $1 RETURNING *`, [value]);
      const challenge = row && readWebAuthnChallenge(row);
      return challenge?.purpose === purpose && challenge.expiresAt > at ? challenge : undefined;
    },

    // The authenticator app, recovery codes and second-factor challenges
    async secondFactorsOf(userId) {
      const row = (await db.one<Row>(SECOND_FACTORS_OF, [userId])) as Row;
      return { totp: Boolean(row.totp), recoveryCodesRemaining: Number(row.codes), passkeys: Number(row.passkeys) };
    },
    findTotp: (userId) => find("SELECT * FROM totp_factors WHERE user_id = $1", [userId], readTotp),
    async startTotp(userId, sealedSecret) {
      const written = await db.run(
        `INSERT INTO totp_factors (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret,
           created_at = excluded.created_at, last_step = NULL WHERE totp_factors.confirmed_at IS NULL`,
        [userId, sealedSecret, now()],
      );
      return written > 0;
    },
    async confirmTotp(userId, step, recoveryCodeHashes, events = []) {
      const at = now();
      return db.transaction(async (tx) => {
        const confirmed = await tx.run(
          `UPDATE totp_factors SET confirmed_at = $1, last_step = $2
           WHERE user_id = $3 AND confirmed_at IS NULL AND (last_step IS NULL OR last_step < $2)`,
          [at, step, userId],
        );
        if (confirmed === 0) return false;
        if (recoveryCodeHashes !== undefined) await replaceCodes(tx, userId, recoveryCodeHashes, at);
        await record(tx, events, userId);
        return true;
      });
    },
    async acceptTotpStep(userId, step, events = []) {
      const accepted = await eventful(
        `UPDATE totp_factors SET last_step = $1
         WHERE user_id = $2 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $1) RETURNING user_id`,
        [step, userId],
        events,
      );
      return accepted !== undefined;
    },
    async removeTotp(userId, { dropRecoveryCodes, events = [] }) {
      return db.transaction(async (tx) => {
        if ((await tx.run("DELETE FROM totp_factors WHERE user_id = $1", [userId])) === 0) return false;
        if (dropRecoveryCodes) await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
        await record(tx, events, userId);
        return true;
      });
    },
    async replaceRecoveryCodes(userId, codeHashes, events = []) {
      const at = now();
      await db.transaction(async (tx) => {
        await replaceCodes(tx, userId, codeHashes, at);
        await record(tx, events, userId);
      });
    },
    async useRecoveryCode(userId, candidateHashes, at, events = []) {
      if (candidateHashes.length === 0) return false;
      const used = await eventful(
        `UPDATE recovery_codes SET used_at = $1
         WHERE user_id = $2 AND used_at IS NULL AND code_hash IN (SELECT value FROM ${d.elements("$3")})
         RETURNING user_id`,
        [at, userId, candidateHashes],
        events,
        userId,
      );
      return used !== undefined;
    },
    async resetSecondFactors(userId, events = []) {
      await db.transaction(async (tx) => {
        for (const table of RESET) await tx.run(`DELETE FROM ${table} WHERE user_id = $1`, [userId]);
        await record(tx, events, userId);
      });
    },
    async createMfaChallenge({ tokenHash, userId, expiresAt, firstFactor = "pwd" }) {
      await db.run(
        `INSERT INTO mfa_challenges (token_hash, user_id, created_at, expires_at, first_factor)
         VALUES ($1, $2, $3, $4, $5)`,
        [tokenHash, userId, now(), expiresAt, firstFactor],
      );
    },
    findMfaChallenge: (tokenHash) =>
      find("SELECT * FROM mfa_challenges WHERE token_hash = $1", [tokenHash], readMfaChallenge),
    async failMfaChallenge(tokenHash, maxFailures, at) {
      const row = await db.one<{ failures: number }>(
        `UPDATE mfa_challenges SET failures = failures + 1,
           spent_at = CASE WHEN failures + 1 >= $1 THEN $2 ELSE spent_at END
         WHERE token_hash = $3 AND spent_at IS NULL RETURNING failures`,
        [maxFailures, at, tokenHash],
      );
      return row ? Number(row.failures) : maxFailures;
    },
    async spendMfaChallenge(tokenHash, at) {
      const row = await db.one<{ user_id: string }>(
        `UPDATE mfa_challenges SET spent_at = $1
         WHERE token_hash = $2 AND spent_at IS NULL AND expires_at > $1 RETURNING user_id`,
        [at, tokenHash],
      );
      return row?.user_id;
    },
    async listTotpSecrets() {
      const rows = await db.all<Row>("SELECT user_id, sealed_secret FROM totp_factors ORDER BY user_id");
      return rows.map((row) => ({ userId: row.user_id as string, sealedSecret: row.sealed_secret as string }));
    },
    async replaceTotpSecret(userId, previous, next) {
      const sql = "UPDATE totp_factors SET sealed_secret = $1 WHERE user_id = $2 AND sealed_secret = $3";
      return (await db.run(sql, [next, userId, previous])) > 0;
    },
  };
}
