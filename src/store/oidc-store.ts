// The OpenID Connect verbs of the store (store.ts, OidcStore), written once
// for both databases like sql-store.ts, whose factory spreads them in: codes
// are spent by one conditional UPDATE, so of two instances redeeming one code
// at once exactly one wins and the other sees a replay.
import type { Db } from "./db.ts";
import { reader } from "./reader.ts";
import type * as store from "./store.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const readCode = reader<store.AuthorizationCodeRecord>();
const readClientSession = reader<store.ClientSessionRecord>();
const readConsent = reader<store.ConsentRecord>({}, ["user_id"]);

/** All but revokeConsent, which ends sessions: sql-store.ts writes it on its path for ended sessions. */
export function oidcStore(
  db: Db,
): Pick<
  store.ClientVerbs,
  | "saveAuthorizationCode"
  | "redeemAuthorizationCode"
  | "recordCodeIssue"
  | "findClientSession"
  | "findConsent"
  | "grantConsent"
  | "listConsents"
  | "purgeAuthorizationCodes"
> {
  return {
    async saveAuthorizationCode(code) {
      await db.run(
        `INSERT INTO oidc_codes (code_hash, client_id, user_id, browser_session_id, redirect_uri, code_challenge,
                                 nonce, scope, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          code.codeHash,
          code.clientId,
          code.userId,
          code.browserSessionId,
          code.redirectUri,
          code.codeChallenge,
          code.nonce,
          code.scope,
          code.createdAt,
          code.expiresAt,
        ],
      );
    },
    async redeemAuthorizationCode(codeHash, at) {
      const spent = await db.one<Record<string, unknown>>(
        "UPDATE oidc_codes SET redeemed_at = $1 WHERE code_hash = $2 AND redeemed_at IS NULL RETURNING *",
        [at, codeHash],
      );
      if (spent) return { outcome: "redeemed", code: readCode(spent) };
      const known = await db.one<Record<string, unknown>>("SELECT * FROM oidc_codes WHERE code_hash = $1", [codeHash]);
      return known ? { outcome: "replayed", code: readCode(known) } : { outcome: "unknown" };
    },
    async recordCodeIssue(codeHash, sessionId) {
      await db.run("UPDATE oidc_codes SET issued_session_id = $1 WHERE code_hash = $2", [sessionId, codeHash]);
    },
    async findClientSession(sessionId) {
      if (!UUID.test(sessionId)) return undefined;
      const row = await db.one<Record<string, unknown>>("SELECT * FROM oidc_client_sessions WHERE session_id = $1", [
        sessionId,
      ]);
      return row && readClientSession(row);
    },
    async findConsent(userId, clientId) {
      const row = await db.one<Record<string, unknown>>(
        "SELECT * FROM oidc_consents WHERE user_id = $1 AND client_id = $2",
        [userId, clientId],
      );
      return row && readConsent(row);
    },
    async grantConsent(userId, clientId, scope, at) {
      await db.run(
        `INSERT INTO oidc_consents (user_id, client_id, scope, granted_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at`,
        [userId, clientId, scope, at],
      );
    },
    async listConsents(userId) {
      const rows = await db.all<Record<string, unknown>>(
        "SELECT * FROM oidc_consents WHERE user_id = $1 ORDER BY granted_at DESC",
        [userId],
      );
      return rows.map(readConsent);
    },
    purgeAuthorizationCodes(before, limit) {
      return db.run(
        "DELETE FROM oidc_codes WHERE code_hash IN (SELECT code_hash FROM oidc_codes WHERE expires_at < $1 LIMIT $2)",
        [before, limit],
      );
    },
  };
}
