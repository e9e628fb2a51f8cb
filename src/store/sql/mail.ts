// The mail outbox's verbs (mail.ts): messages are queued by the writes that
// send them, in their transaction (insertMail, sql/shared.ts); here the
// delivery worker claims and completes them (sql/outbox-rows.ts), the
// operator lists and retries them, and housekeeping prunes what was sent
// (with the expired links of recovery.ts, pruneAccountRecords).
import type { MailVerbs, OutboxMessage } from "../mail.ts";
import { claimDueRows, completeRow, type SentColumns } from "./outbox-rows.ts";
import { reader } from "./reader.ts";
import { filtered, type Row, type Shared } from "./shared.ts";

const MAIL_SENT: SentColumns = { status: "sent", atColumn: "sent_at", also: "payload = '{}'" };

const readOutbox = reader<OutboxMessage>({}, ["lease_owner", "lease_until"]);

export function mailVerbs({ db, insertMail, deleteSome }: Shared): MailVerbs {
  return {
    enqueueMail: (mail) => insertMail(db, mail),
    async claimMail(owner, at, leaseUntil, limit) {
      return (await claimDueRows(db, "mail_outbox", owner, at, leaseUntil, limit)).map(readOutbox);
    },
    // The payload (a sealed link token) is no longer needed once the message is out.
    completeMail: (id, owner, outcome) => completeRow(db, "mail_outbox", id, owner, outcome, MAIL_SENT),
    async listMail({ status, limit }) {
      const query = filtered("SELECT * FROM mail_outbox", [["status =", status]], "id DESC", limit);
      return (await db.all<Row>(...query)).map(readOutbox);
    },
    async retryFailedMail(id, at) {
      return db.run(
        `UPDATE mail_outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL
         WHERE status = 'failed'${id === undefined ? "" : " AND id = $2"}`,
        id === undefined ? [at] : [at, id],
      );
    },
    async pruneAccountRecords(tokensBefore, sentBefore, limit) {
      const tokens = await deleteSome("account_tokens", "token_hash", "expires_at < $1", tokensBefore, limit);
      // A mail given up on is kept for the console to retry, as long as audit events: after that its links
      // are long expired and a retry would only send a dead mail.
      const mail = await deleteSome(
        "mail_outbox",
        "id",
        "(status = 'sent' AND sent_at < $1) OR (status = 'failed' AND created_at < $1)",
        sentBefore,
        limit,
      );
      return tokens + mail;
    },
  };
}
