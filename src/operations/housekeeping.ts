// The database's housekeeping: expired and old rows deleted in small
// batches every ten minutes (each instance runs its own), so requests never
// wait behind a long delete.
import type { FastifyInstance } from "fastify";
import type { Clock } from "../auth/tokens.ts";
import type { UserStore } from "../store/store.ts";

/**
 * Every ten minutes, deletes expired sessions and refresh tokens, audit events past their retention,
 * old link tokens, sent mail, and mail or webhook events given up on long ago, a thousand rows per
 * statement, yielding between batches so that requests are never held up behind a long delete.
 */
export function startHousekeeping(app: FastifyInstance, store: UserStore, clock: Clock, retentionDays: number): void {
  const purge = async () => {
    try {
      const now = clock();
      // Authorization codes live 60 seconds; an hour later nobody can ask about one any more.
      const codeCutoff = new Date(now - 3_600_000).toISOString();
      const auditCutoff = new Date(now - retentionDays * 86_400_000).toISOString();
      // Link tokens are kept a week past their expiry (so a late click still hears "expired"), sent mail,
      // delivered webhook events and the webhook delivery log as long as audit events; mail and webhook
      // events given up on as long, from when they were queued (until then the console can retry them).
      const tokenCutoff = new Date(now - 7 * 86_400_000).toISOString();
      while (
        (await store.purgeExpired(new Date(now).toISOString(), 1000)) +
          (await store.pruneEvents(auditCutoff, 1000)) +
          (await store.pruneAccountRecords(tokenCutoff, auditCutoff, 1000)) +
          (await store.pruneWebhookRecords(auditCutoff, 1000)) +
          (await store.pruneBackchannelLogouts(auditCutoff, 1000)) +
          (await store.purgeAuthorizationCodes(codeCutoff, 1000)) +
          // Pending upstream sign-ins and their tickets live minutes; the same hour's margin.
          (await store.purgeUpstreamPending(codeCutoff, 1000)) +
          // Pushed authorization requests live a minute (issue 36); the same hour's margin.
          (await store.purgePushedRequests(codeCutoff, 1000)) +
          // Device authorizations (issue 36) live ten minutes by default; the same hour's margin.
          (await store.purgeDeviceAuthorizations(codeCutoff, 1000)) +
          // Sign-in mails' attempts (issue 37) live fifteen minutes; the same hour's margin.
          (await store.purgeMailSignIns(codeCutoff, 1000)) >
        0
      ) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      app.log.warn({ err: error }, "housekeeping (expired sessions, old audit events) failed; will retry");
    }
  };
  const timer = setInterval(purge, 10 * 60_000);
  timer.unref();
  app.addHook("onClose", async function stopPurging() {
    clearInterval(timer);
  });
}
