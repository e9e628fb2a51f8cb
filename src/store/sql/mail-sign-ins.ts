// Sign-in by mail's verbs (mail-sign-ins.ts): every change of an attempt is
// one conditional UPDATE ... RETURNING, so that of two redemptions exactly
// one spends it, and every answer compared has taken a try first, so that five
// wrong ones end the attempt even when many arrive at once.
import type { MailSignInRecord, MailSignInVerbs } from "../mail-sign-ins.ts";
import { reader } from "./reader.ts";
import type { Row, Shared } from "./shared.ts";

const readAttempt = reader<MailSignInRecord>({ wrongCodes: (value) => Number(value) });

export function mailSignInVerbs({ db, now, insertMail }: Shared): MailSignInVerbs {
  return {
    async createMailSignIn(attempt, mail) {
      const at = now();
      await db.transaction(async (tx) => {
        await tx.run(
          `INSERT INTO mail_sign_ins (id, email, binding_hash, token_hash, code_hash, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [attempt.id, attempt.email, attempt.bindingHash, attempt.tokenHash, attempt.codeHash, at, attempt.expiresAt],
        );
        if (mail !== undefined) await insertMail(tx, mail);
      });
    },
    async findMailSignIn(id) {
      const row = await db.one<Row>("SELECT * FROM mail_sign_ins WHERE id = $1", [id]);
      return row && readAttempt(row);
    },
    async tryMailSignIn(id, now, maxTries) {
      const row = await db.one<Row>(
        `UPDATE mail_sign_ins SET wrong_codes = wrong_codes + 1
         WHERE id = $1 AND used_at IS NULL AND expires_at > $2 AND wrong_codes < $3 RETURNING *`,
        [id, now, maxTries],
      );
      return row && readAttempt(row);
    },
    async useMailSignIn(id, at) {
      const row = await db.one<Row>(
        `UPDATE mail_sign_ins SET used_at = $1, wrong_codes = wrong_codes - 1
         WHERE id = $2 AND used_at IS NULL RETURNING *`,
        [at, id],
      );
      return row && readAttempt(row);
    },
    async releaseMailSignInTry(id) {
      await db.run("UPDATE mail_sign_ins SET wrong_codes = wrong_codes - 1 WHERE id = $1 AND used_at IS NULL", [id]);
    },
    purgeMailSignIns(before, limit) {
      return db.run(
        `DELETE FROM mail_sign_ins WHERE id IN
           (SELECT id FROM mail_sign_ins WHERE expires_at < $1 LIMIT $2)`,
        [before, limit],
      );
    },
  };
}
