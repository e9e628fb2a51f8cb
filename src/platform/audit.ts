// The audit trail: security events (sign-up, login, password change, role
// change, deactivation, deletion, session revocation) with time, user id,
// client address and outcome, never a password or a token. Admins read them
// at GET /users/{id}/events; events older than AUDIT_RETENTION_DAYS are pruned.
import type { AuditEventType, UserStore } from "../store/store.ts";

export interface Audit {
  record(type: AuditEventType, userId: string | null, outcome: string, clientAddress: string | null): Promise<void>;
}

export function createAudit(store: UserStore): Audit {
  return {
    record: (type, userId, outcome, clientAddress) => store.recordEvent({ type, userId, outcome, clientAddress }),
  };
}
