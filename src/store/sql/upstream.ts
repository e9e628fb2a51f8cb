// Upstream sign-in's verbs (upstream.ts): identities keyed by (issuer,
// subject); pending sign-ins, tickets and mailed links spent by one
// conditional UPDATE, so of two callbacks (or two instances) presenting one
// state or ticket exactly one wins and the other finds nothing. A link is
// added only while the sign-in asking is live (sql/signed-in.ts).
import type { Queryable } from "../db.ts";
import type {
  UpstreamIdentityRecord,
  UpstreamLinkMailRecord,
  UpstreamPendingRecord,
  UpstreamTicketRecord,
  UpstreamVerbs,
} from "../upstream.ts";
import { reader } from "./reader.ts";
import type { Shared } from "./shared.ts";
import { assertStillSignedIn } from "./signed-in.ts";

const readIdentity = reader<UpstreamIdentityRecord>({}, ["sealed_tokens"]);
const readPending = reader<UpstreamPendingRecord>({}, ["spent_at"]);
const readTicket = reader<UpstreamTicketRecord>({}, ["spent_at"]);
const readLinkMail = reader<UpstreamLinkMailRecord>({}, ["spent_at"]);

export function upstreamVerbs({ db, insertMail }: Shared): UpstreamVerbs {
  return {
    async savePendingUpstream(p) {
      await db.run(
        `INSERT INTO upstream_pending (state_hash, provider, binding_hash, nonce, code_verifier, continue_to,
                                       link_user_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          p.stateHash,
          p.provider,
          p.bindingHash,
          p.nonce,
          p.codeVerifier,
          p.continueTo,
          p.linkUserId,
          p.createdAt,
          p.expiresAt,
        ],
      );
    },
    async takePendingUpstream(stateHash, at) {
      const row = await db.one<Record<string, unknown>>(
        `UPDATE upstream_pending SET spent_at = $1
         WHERE state_hash = $2 AND spent_at IS NULL AND expires_at > $1 RETURNING *`,
        [at, stateHash],
      );
      return row && readPending(row);
    },
    async saveUpstreamTicket(t) {
      await db.run(
        `INSERT INTO upstream_tickets (ticket_hash, kind, binding_hash, user_id, provider, issuer, subject, email,
                                       sealed_tokens, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [
          t.ticketHash,
          t.kind,
          t.bindingHash,
          t.userId,
          t.provider,
          t.issuer,
          t.subject,
          t.email,
          t.sealedTokens,
          t.createdAt,
          t.expiresAt,
        ],
      );
    },
    async takeUpstreamTicket(ticketHash, kind, at) {
      const row = await db.one<Record<string, unknown>>(
        `UPDATE upstream_tickets SET spent_at = $1
         WHERE ticket_hash = $2 AND kind = $3 AND spent_at IS NULL AND expires_at > $1 RETURNING *`,
        [at, ticketHash, kind],
      );
      return row && readTicket(row);
    },
    async findIdentity(issuer, subject) {
      const row = await db.one<Record<string, unknown>>(
        "SELECT * FROM upstream_identities WHERE issuer = $1 AND subject = $2",
        [issuer, subject],
      );
      return row && readIdentity(row);
    },
    async listIdentities(userId) {
      const rows = await db.all<Record<string, unknown>>(
        "SELECT * FROM upstream_identities WHERE user_id = $1 ORDER BY created_at, id",
        [userId],
      );
      return rows.map(readIdentity);
    },
    async linkIdentity(identity, signedIn) {
      // A pair already linked (to anyone) is left as it is: the caller reads it back to tell which.
      const insert = (q: Queryable) =>
        q.one<Record<string, unknown>>(
          `INSERT INTO upstream_identities (id, user_id, provider, issuer, subject, email, sealed_tokens, created_at,
                                            last_used_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
           ON CONFLICT (issuer, subject) DO NOTHING RETURNING *`,
          [
            identity.id,
            identity.userId,
            identity.provider,
            identity.issuer,
            identity.subject,
            identity.email,
            identity.sealedTokens,
            identity.createdAt,
          ],
        );
      const row =
        signedIn === undefined
          ? await insert(db)
          : await db.transaction(async (tx) => {
              await assertStillSignedIn(tx, db.dialect, identity.userId, signedIn);
              return insert(tx);
            });
      return row && readIdentity(row);
    },
    async touchIdentity(id, email, sealedTokens, at) {
      await db.run(
        `UPDATE upstream_identities SET last_used_at = $1, email = $2,
                sealed_tokens = COALESCE($3, sealed_tokens) WHERE id = $4`,
        [at, email, sealedTokens, id],
      );
    },
    async unlinkIdentity(userId, id) {
      return (await db.run("DELETE FROM upstream_identities WHERE user_id = $1 AND id = $2", [userId, id])) > 0;
    },
    async issueUpstreamLinkMail(l, mail) {
      await db.transaction(async (tx) => {
        await tx.run(
          "UPDATE upstream_link_mails SET spent_at = $1 WHERE user_id = $2 AND spent_at IS NULL AND expires_at > $1",
          [l.createdAt, l.userId],
        );
        await tx.run(
          `INSERT INTO upstream_link_mails (token_hash, user_id, binding_hash, provider, issuer, subject, email,
                                            sealed_tokens, continue_to, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [
            l.tokenHash,
            l.userId,
            l.bindingHash,
            l.provider,
            l.issuer,
            l.subject,
            l.email,
            l.sealedTokens,
            l.continueTo,
            l.createdAt,
            l.expiresAt,
          ],
        );
        await insertMail(tx, mail);
      });
    },
    async takeUpstreamLinkMail(tokenHash, bindingHash, at) {
      const row = await db.one<Record<string, unknown>>(
        `UPDATE upstream_link_mails SET spent_at = $1
         WHERE token_hash = $2 AND binding_hash = $3 AND spent_at IS NULL AND expires_at > $1 RETURNING *`,
        [at, tokenHash, bindingHash],
      );
      return row && readLinkMail(row);
    },
    async purgeUpstreamPending(before, limit) {
      const pending = await db.run(
        `DELETE FROM upstream_pending WHERE state_hash IN
           (SELECT state_hash FROM upstream_pending WHERE expires_at < $1 LIMIT ${Math.trunc(limit)})`,
        [before],
      );
      const tickets = await db.run(
        `DELETE FROM upstream_tickets WHERE ticket_hash IN
           (SELECT ticket_hash FROM upstream_tickets WHERE expires_at < $1 LIMIT ${Math.trunc(limit)})`,
        [before],
      );
      const mails = await db.run(
        `DELETE FROM upstream_link_mails WHERE token_hash IN
           (SELECT token_hash FROM upstream_link_mails WHERE expires_at < $1 LIMIT ${Math.trunc(limit)})`,
        [before],
      );
      return pending + tickets + mails;
    },
  };
}
