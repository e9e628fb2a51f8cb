// Account recovery's verbs (recovery.ts): reset and verification links
// (issued with their mail, redeemed once), the confirmation of an address,
// and what a proof of the address ends of an account (proveAddress), each
// one transaction; the last two are writes to the user (writeUser, in
// sql/shared.ts).
import { normalizeEmail } from "../../users/email.ts";
import type { Param, Queryable } from "../db.ts";
import { newCredentialStamp } from "../ids.ts";
import type {
  AccountTokenRecord,
  AddressProofPlan,
  AddressProofResult,
  EndedWaysIn,
  RecoveryVerbs,
  Redemption,
} from "../recovery.ts";
import type { UserRecord } from "../users.ts";
import { reader } from "./reader.ts";
import { SECOND_FACTORS_OF } from "./second-factors.ts";
import { isUuid, type Row, type Shared } from "./shared.ts";
import { readUser, USER_BY_ID } from "./users.ts";

const SPEND_ACCOUNT_TOKENS =
  "UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL";

const readAccountToken = reader<AccountTokenRecord>();

export function recoveryVerbs(s: Shared): RecoveryVerbs {
  const { db, d, now, changes, find, record, publish, insertMail, endEverySession, notify, writeUser } = s;

  /** Inside a transaction: spends a live token and its siblings, or says why it cannot. */
  async function redeem(tx: Queryable, tokenHash: string, purpose: string, at: string): Promise<Redemption> {
    // Concurrent redemptions of one token queue here (FOR UPDATE, or SQLite's one writer), and only
    // the first finds it unspent.
    const sql = `SELECT * FROM account_tokens WHERE token_hash = $1 AND purpose = $2${d.forUpdate}`;
    const row = await tx.one<Row>(sql, [tokenHash, purpose]);
    if (!row) return { outcome: "invalid" };
    const token = readAccountToken(row);
    if (token.spentAt !== null) return { outcome: "spent" };
    if (token.expiresAt <= at) return { outcome: "expired" };
    const user = await tx.one<Row>(USER_BY_ID, [token.userId]);
    if (!user) return { outcome: "invalid" };
    await tx.run(SPEND_ACCOUNT_TOKENS, [at, token.userId, purpose]);
    return { outcome: "redeemed", token, user: readUser(user) };
  }

  /**
   * Inside proveAddress's transaction: what the plan ends of the user's ways in besides the sessions,
   * keeping the identity (issuer, subject) the proof links. Answers what was there and is gone.
   */
  async function endWaysIn(
    tx: Queryable,
    user: UserRecord,
    plan: AddressProofPlan,
    at: string,
    keep: { issuer: string; subject: string } | undefined,
  ): Promise<Omit<EndedWaysIn, "password" | "sessions">> {
    const id = user.id;
    let passkeys = 0;
    let identities = 0;
    let consents = 0;
    if (plan.endWaysInBefore !== null) {
      // Created before the address was proven (strictly: what the proof itself adds is kept).
      const cutoff = plan.endWaysInBefore === "all" ? "" : " AND created_at < $2";
      const params: Param[] = plan.endWaysInBefore === "all" ? [id] : [id, plan.endWaysInBefore];
      passkeys = await tx.run(`DELETE FROM webauthn_credentials WHERE user_id = $1${cutoff}`, params);
      const kept =
        keep === undefined ? "" : ` AND NOT (issuer = $${params.length + 1} AND subject = $${params.length + 2})`;
      identities = await tx.run(
        `DELETE FROM upstream_identities WHERE user_id = $1${cutoff}${kept}`,
        keep === undefined ? params : [...params, keep.issuer, keep.subject],
      );
      // A consent lets its app have a code from the account's browser session without asking again.
      const grantedBefore = plan.endWaysInBefore === "all" ? "" : " AND granted_at < $2";
      consents = await tx.run(`DELETE FROM oidc_consents WHERE user_id = $1${grantedBefore}`, params);
    }
    let secondFactors = false;
    if (plan.endSecondFactors) {
      const totp = await tx.run("DELETE FROM totp_factors WHERE user_id = $1", [id]);
      const codes = await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [id]);
      secondFactors = totp + codes > 0;
    } else if (passkeys > 0) {
      // Recovery codes stand in for a factor; with none left they would only be a way around the password.
      const left = (await tx.one<Row>(SECOND_FACTORS_OF, [id])) as Row;
      if (!left.totp && Number(left.passkeys) === 0)
        await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [id]);
    }
    if (plan.endWaysInBefore !== null || plan.endSecondFactors)
      await tx.run("DELETE FROM webauthn_challenges WHERE user_id = $1", [id]);
    const emailChanges = plan.endEmailChanges
      ? await tx.run(
          `UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = 'email_verification'
             AND spent_at IS NULL AND expires_at > $1 AND email <> $3`,
          [at, id, user.email],
        )
      : 0;
    return { passkeys, identities, consents, secondFactors, emailChanges };
  }

  return {
    // Reset and verification links
    async issueAccountToken(token, mail, events = []) {
      const at = now();
      await db.transaction(async (tx) => {
        await tx.run(SPEND_ACCOUNT_TOKENS, [at, token.userId, token.purpose]);
        await tx.run(
          `INSERT INTO account_tokens (token_hash, user_id, purpose, email, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [token.tokenHash, token.userId, token.purpose, normalizeEmail(token.email), at, token.expiresAt],
        );
        await insertMail(tx, mail);
        await record(tx, events, token.userId);
      });
    },
    findAccountToken: (tokenHash) =>
      find("SELECT * FROM account_tokens WHERE token_hash = $1", [tokenHash], readAccountToken),
    redeemAccountToken: (tokenHash, purpose, at) => db.transaction((tx) => redeem(tx, tokenHash, purpose, at)),
    async confirmEmail(tokenHash, at, notice, event) {
      const redemption = await db.transaction(async (tx): Promise<Redemption> => {
        const redemption = await redeem(tx, tokenHash, "email_verification", at);
        if (redemption.outcome !== "redeemed") return redemption;
        const previous = redemption.user;
        // A new address is a new credential stamp, as for any e-mail change.
        const stamp = previous.email === redemption.token.email ? previous.credentialStamp : newCredentialStamp();
        const row = await tx.one<Row>(
          "UPDATE users SET email = $1, email_verified_at = $2, updated_at = $2, credential_stamp = $3 WHERE id = $4 RETURNING *",
          [redemption.token.email, at, stamp, previous.id],
        );
        const user = readUser(row as Row);
        const mail = previous.email === user.email ? undefined : notice(previous.email, user);
        if (mail !== undefined) await insertMail(tx, mail);
        await record(tx, [event(previous.email !== user.email)], user.id, { email: user.email });
        if (previous.email !== user.email) await publish(tx, "user.updated", user.id, { email: user.email });
        await notify(tx, user.id);
        return { ...redemption, user };
      });
      if (redemption.outcome === "redeemed") changes.changed(redemption.user.id);
      return redemption;
    },
    // The proof of the address
    async proveAddress(userId, decide, { link, events }) {
      if (!isUuid(userId)) return { outcome: "refused" };
      const at = now();
      const elsewhere = new Error("the identity was linked to another account meanwhile");
      try {
        return await writeUser(userId, false, async (tx): Promise<AddressProofResult> => {
          // Concurrent proofs, resets and logins of this user queue here (SQLite's one writer holds it all).
          const row = await tx.one<Row>(`SELECT * FROM users WHERE id = $1${d.forUpdate}`, [userId]);
          const before = row && readUser(row);
          const plan = before && decide(before);
          if (before === undefined || plan === undefined) return { outcome: "refused" };
          if (link !== undefined) {
            const known = await tx.one<{ user_id: string }>(
              "SELECT user_id FROM upstream_identities WHERE issuer = $1 AND subject = $2",
              [link.issuer, link.subject],
            );
            if (known !== undefined && known.user_id !== userId) return { outcome: "elsewhere" };
          }
          const params: Param[] = [at];
          const assignments = ["updated_at = $1"];
          const set = (column: string, value: Param) => {
            params.push(value);
            assignments.push(`${column} = $${params.length}`);
          };
          if (plan.hashedPassword !== undefined) set("hashed_password", plan.hashedPassword);
          if (plan.markVerified) set("email_verified_at", at);
          if (plan.endSessions) {
            set("credential_stamp", newCredentialStamp());
            set("credentials_changed_at", at);
          }
          params.push(userId);
          // A plan that changes nothing of the account (a mailed link to a verified one) leaves its row alone.
          const updated =
            assignments.length === 1
              ? row
              : await tx.one<Row>(
                  `UPDATE users SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`,
                  params,
                );
          const user = readUser(updated as Row);
          const ways = await endWaysIn(tx, before, plan, at, link);
          const sessions = plan.endSessions ? await endEverySession(tx, userId, at) : 0;
          if (plan.endSessions) {
            // A sign-in ticket not yet spent would sign in through an identity that may be gone now, and a
            // link started from the security page before the proof would link its identity after it.
            await tx.run("DELETE FROM upstream_tickets WHERE user_id = $1", [userId]);
            await tx.run("DELETE FROM upstream_pending WHERE link_user_id = $1", [userId]);
          }
          if (link !== undefined) {
            const inserted = await tx.one(
              `INSERT INTO upstream_identities (id, user_id, provider, issuer, subject, email, sealed_tokens,
                                                created_at, last_used_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) ON CONFLICT (issuer, subject) DO NOTHING RETURNING id`,
              // Linked at the proof's own time, so that a later reset counts it as added with the proof.
              [link.id, userId, link.provider, link.issuer, link.subject, link.email, link.sealedTokens, at],
            );
            // Linked by another transaction since the check: to this account (fine) or another (undo all).
            if (inserted === undefined) {
              const known = await tx.one<{ user_id: string }>(
                "SELECT user_id FROM upstream_identities WHERE issuer = $1 AND subject = $2",
                [link.issuer, link.subject],
              );
              if (known?.user_id !== userId) throw elsewhere;
            }
          }
          const password = plan.hashedPassword === "" && before.hashedPassword !== "";
          const ended: EndedWaysIn = { ...ways, password, sessions };
          await record(tx, events(ended, user), userId, { email: user.email });
          return { outcome: "proven", user, ended };
        });
      } catch (error) {
        if (error === elsewhere) return { outcome: "elsewhere" };
        throw error;
      }
    },
  };
}
