// The audit trail's verbs (audit.ts): the events that writes record in
// their own transaction (record, sql/shared.ts), read back by user and
// pruned; recordEvent for an event that changes nothing else.
import type { AuditEvent, AuditVerbs } from "../audit.ts";
import type { Param } from "../db.ts";
import { reader } from "./reader.ts";
import { filtered, type Row, type Shared } from "./shared.ts";

const readEvent = reader<AuditEvent>();

export function auditVerbs({ db, record, deleteSome }: Shared): AuditVerbs {
  return {
    async recordEvent(event) {
      await record(db, [event], event.userId);
    },
    async listEvents({ userId, limit, after, type, from, to }) {
      const conditions: [string, Param | undefined][] = [
        ["user_id =", userId],
        ["id >", after],
        ["type =", type],
        ["created_at >=", from],
        ["created_at <=", to],
      ];
      return (await db.all<Row>(...filtered("SELECT * FROM audit_events", conditions, "id", limit))).map(readEvent);
    },
    async pruneEvents(before, limit) {
      return deleteSome("audit_events", "id", "created_at < $1", before, limit);
    },
  };
}
