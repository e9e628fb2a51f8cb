// The back-channel logout outbox's verbs (backchannel-logouts.ts): the
// delivery worker's claim and completion (sql/outbox-rows.ts), the
// operator's list, housekeeping. The rows are queued by every ending of
// sessions, in its transaction (sql/backchannel-queue.ts).
import type { BackchannelLogoutMessage, BackchannelLogoutVerbs } from "../backchannel-logouts.ts";
import { claimDueRows, completeRow } from "./outbox-rows.ts";
import { reader } from "./reader.ts";
import type { Row, Shared } from "./shared.ts";

const readLogout = reader<BackchannelLogoutMessage>({}, ["lease_owner", "lease_until"]);

export function backchannelLogoutVerbs({ db, logouts }: Shared): BackchannelLogoutVerbs {
  return {
    async claimBackchannelLogouts(owner, at, leaseUntil, limit) {
      return (await claimDueRows(db, "backchannel_logouts", owner, at, leaseUntil, limit)).map(readLogout);
    },
    completeBackchannelLogout: (id, owner, outcome) => completeRow(db, "backchannel_logouts", id, owner, outcome),
    async listBackchannelLogouts({ status, limit }) {
      const rows =
        status === undefined
          ? await db.all<Row>("SELECT * FROM backchannel_logouts ORDER BY id DESC LIMIT $1", [limit])
          : await db.all<Row>("SELECT * FROM backchannel_logouts WHERE status = $1 ORDER BY id DESC LIMIT $2", [
              status,
              limit,
            ]);
      return rows.map(readLogout);
    },
    pruneBackchannelLogouts(before, limit) {
      return db.run(
        `DELETE FROM backchannel_logouts WHERE id IN (SELECT id FROM backchannel_logouts
           WHERE status <> 'pending' AND created_at < $1 LIMIT $2)`,
        [before, limit],
      );
    },
    onBackchannelLogouts(listener) {
      logouts.onQueued(listener);
    },
  };
}
