// The UserStore (store.ts) over either database: the composition of the
// aggregates' verbs, each written once in sql/ against a Db (db.ts), whose
// dialect holds the few fragments that differ.
//
// How the store is laid out, and the one way to add a verb:
// - An aggregate is a pair of files: its interface, src/store/<name>.ts (the
//   records, and `<Name>Verbs`, with the transactions its verbs are), and its
//   SQL, src/store/sql/<name>.ts (`<name>Verbs(shared)`, which answers those
//   verbs). Users, sessions, second factors, recovery, mail, clients,
//   upstream, webhooks, audit, back-channel logouts, device
//   authorizations, brands and mail sign-ins (issue 37), and the service-wide admin reads (admin.ts).
// - To add a verb: declare it in the aggregate's interface, and write it in
//   the object its SQL factory returns. Nothing else changes: this file
//   spreads every factory's verbs into the store, and UserStore extends every
//   interface; the type checker names a verb declared and not written, or
//   written and not declared. Verb names are unique across aggregates.
// - What a verb needs of another aggregate inside its transaction (an audit
//   event with its notice and webhook events: record; a mail: insertMail;
//   an ending of sessions: sessionsEnded; a write to a user: writeUser) it
//   takes from its factory's argument, sql/shared.ts, made once per store;
//   never from another aggregate's factory. A statement that two aggregates
//   read is exported from the module of the one that owns the table.
// - A new aggregate: its two files, a line in the list below, and its
//   interface in store.ts's re-exports and UserStore's union. New tables: a
//   migration in migrations.ts.
// - Every verb that writes more than one row does it in one transaction
//   (db.transaction, or eventful and writeUser in sql/shared.ts), and a verb
//   that has committed answers from what it wrote.
import type { Db } from "./db.ts";
import { adminVerbs } from "./sql/admin.ts";
import { auditVerbs } from "./sql/audit.ts";
import { backchannelLogoutVerbs } from "./sql/backchannel-logouts.ts";
import { brandVerbs } from "./sql/branding.ts";
import { clientVerbs } from "./sql/clients.ts";
import { deviceVerbs } from "./sql/device.ts";
import { mailVerbs } from "./sql/mail.ts";
import { mailSignInVerbs } from "./sql/mail-sign-ins.ts";
import { pushedRequestVerbs } from "./sql/pushed-requests.ts";
import { recoveryVerbs } from "./sql/recovery.ts";
import { secondFactorVerbs } from "./sql/second-factors.ts";
import { sessionVerbs } from "./sql/sessions.ts";
import { shared } from "./sql/shared.ts";
import { upstreamVerbs } from "./sql/upstream.ts";
import { userVerbs } from "./sql/users.ts";
import { webhookVerbs } from "./sql/webhooks.ts";
import type { UserStore } from "./store.ts";

/** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
export function sqlStore(db: Db, clock: () => number): UserStore {
  const s = shared(db, clock);
  return {
    ...userVerbs(s),
    ...sessionVerbs(s),
    ...secondFactorVerbs(s),
    ...recoveryVerbs(s),
    ...mailVerbs(s),
    ...clientVerbs(s),
    ...upstreamVerbs(s),
    ...webhookVerbs(s),
    ...auditVerbs(s),
    ...adminVerbs(s),
    ...backchannelLogoutVerbs(s),
    ...pushedRequestVerbs(s),
    ...deviceVerbs(s),
    ...brandVerbs(s),
    ...mailSignInVerbs(s),
    // The database itself
    ping: () => db.one("SELECT 1").then(() => {}),
    close: () => db.close(),
  };
}
