// The UserStore over either database: each verb, with its transaction, is
// written once here against a Db (db.ts), whose dialect holds the few
// fragments that differ. Every verb applies normalizeEmail, keeps the one
// invariant that needs a transaction (a change never removes the last
// active admin: LastActiveAdmin), and writes more than one row only inside
// one transaction (see store.ts). Ids that cannot be UUIDs, and text with a
// NUL byte, name nothing: they are answered without a query, because
// PostgreSQL refuses them in a uuid or text column.
import { LastActiveAdmin } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import { type EventFacts, eventOfAudit, type WebhookEventType, webhookEvent } from "../webhooks/events.ts";
import { ChangeListeners } from "./change-feed.ts";
import { type Db, type Dialect, type Param, prepared, type Queryable, type Sql } from "./db.ts";
import { newCredentialStamp, newId } from "./ids.ts";
import { oidcStore } from "./oidc-store.ts";
import { claimDueRows, completeRow, outcomeAssignments, type SentColumns } from "./outbox-rows.ts";
import { reader } from "./reader.ts";
import { judgePresentedToken, parseAmr, type SessionTokenState } from "./rotation.ts";
import { assertStillSignedIn } from "./signed-in.ts";
import { backchannelLogouts } from "./sql/backchannel-logouts.ts";
import type * as store from "./store.ts";
import { upstreamStore } from "./upstream-store.ts";
import { createWebhookPublisher } from "./webhook-events.ts";

const MAIL_SENT: SentColumns = { status: "sent", atColumn: "sent_at", also: "payload = '{}'" };
const WEBHOOK_DELIVERED: SentColumns = { status: "delivered", atColumn: "delivered_at" };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (...ids: string[]) => ids.every((id) => UUID.test(id));

const USER_BY_EMAIL = prepared("users_by_email", "SELECT * FROM users WHERE email = $1");
const USER_BY_ID = prepared("users_by_id", "SELECT * FROM users WHERE id = $1");
const INSERT_USER = prepared(
  "users_insert",
  `INSERT INTO users (id, email, hashed_password, full_name, is_active, is_admin, created_at, updated_at,
                     credential_stamp, email_verified_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9) RETURNING *`,
);
const INSERT_SESSION = prepared(
  "sessions_insert",
  `INSERT INTO sessions (id, user_id, created_at, last_used_at, expires_at, client_address, user_agent,
                         refresh_token_hash, refresh_generation, refresh_expires_at, amr)
   VALUES ($1, $2, $3, $3, $4, $5, $6, $7, 0, $8, $9)`,
);
const ROTATE = prepared(
  "sessions_rotate",
  `UPDATE sessions SET refresh_token_hash = $1, refresh_generation = refresh_generation + 1,
     refresh_expires_at = $2, rotated_at = $3, last_used_at = $3, client_address = $4, user_agent = $5
   WHERE id = $6 RETURNING *`,
);
const SECOND_FACTORS_OF = prepared(
  "second_factors_of",
  `SELECT EXISTS (SELECT 1 FROM totp_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL) AS totp,
          (SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL) AS codes,
          (SELECT count(*) FROM webauthn_credentials WHERE user_id = $1) AS passkeys`,
);
const INSERT_EVENT = prepared(
  "audit_events_insert",
  "INSERT INTO audit_events (id, user_id, type, outcome, client_address, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
);
const DEVICES_OF = "SELECT count(*) AS n FROM known_devices WHERE user_id = $1";
const SPEND_ACCOUNT_TOKENS =
  "UPDATE account_tokens SET spent_at = $1 WHERE user_id = $2 AND purpose = $3 AND spent_at IS NULL";
// Equalities (not bare columns), so that SQLite too answers from the index users_active_admins.
const ACTIVE_ADMINS = "SELECT count(*) AS n FROM users WHERE is_admin = $1 AND is_active = $1";

/**
 * Ends the live sessions beyond the newest `cap` ($1 user, $2 now, $3 cap) when a login starts one
 * more. Runs on every login, through the index of live sessions (migration 8), so its cost does not
 * grow with the revoked sessions the user has (test/session-index.test.ts).
 */
export const revokeSessionsPastCap = (d: Dialect) =>
  prepared(
    "sessions_past_cap",
    `UPDATE sessions SET revoked_at = $2 WHERE id IN (SELECT id FROM sessions
       WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND refresh_expires_at > $2
         AND NOT EXISTS (SELECT 1 FROM oidc_client_sessions WHERE session_id = sessions.id)
       ORDER BY id DESC ${d.noLimit} OFFSET $3) RETURNING id`,
  );

/**
 * The same cap for the sessions of one OpenID Connect client ($4): each client's sessions of a user
 * count apart, so a relying party that signs in often never ends the user's own sessions (nor
 * another app's). The user's own cap ends an app's session only by ending the browser session it
 * was begun in (sessionsEnded's cascade, like any other ending of a browser session).
 */
export const revokeClientSessionsPastCap = (d: Dialect) =>
  prepared(
    "client_sessions_past_cap",
    `UPDATE sessions SET revoked_at = $2 WHERE id IN (SELECT sessions.id FROM sessions
       JOIN oidc_client_sessions ON oidc_client_sessions.session_id = sessions.id
       WHERE sessions.user_id = $1 AND oidc_client_sessions.client_id = $4 AND sessions.revoked_at IS NULL
         AND sessions.expires_at > $2 AND sessions.refresh_expires_at > $2
       ORDER BY sessions.id DESC ${d.noLimit} OFFSET $3) RETURNING id`,
  );

/**
 * Housekeeping's delete of sessions past any of their three ends ($1 now, $2 limit). The OR reads
 * the table whichever single column is indexed (test/session-index.test.ts), which is why migration
 * 9 dropped the index of expires_at that every login wrote.
 */
export const PURGE_SESSIONS = `DELETE FROM sessions WHERE id IN (
   SELECT id FROM sessions WHERE expires_at <= $1 OR refresh_expires_at <= $1 OR revoked_at <= $1 LIMIT $2)`;

const SESSION_LIMIT: store.AuditEntry = { type: "session_revocation", outcome: "session_limit", clientAddress: null };

/** Ends the live client sessions begun in a browser session ($1 now, $2 the browser session). */
const END_CLIENT_SESSIONS_OF = `UPDATE sessions SET revoked_at = $1 WHERE revoked_at IS NULL AND id IN
  (SELECT session_id FROM oidc_client_sessions WHERE browser_session_id = $2) RETURNING id, user_id`;
/** Ends the live sessions of a client ($1 now, $2 the client), all users' or one's ($3). */
const END_SESSIONS_OF_CLIENT = `UPDATE sessions SET revoked_at = $1 WHERE revoked_at IS NULL AND id IN
  (SELECT session_id FROM oidc_client_sessions WHERE client_id = $2)`;

/** What resetSecondFactors deletes of a user: its second factors and pending challenges. */
const RESET = ["totp_factors", "recovery_codes", "webauthn_credentials", "webauthn_challenges", "mfa_challenges"];

/** The fields of a user whose change publishes user.updated (a password or a verification does not). */
const PROFILE_FIELDS = ["email", "fullName", "isActive", "isAdmin"] as const;

/** The columns update() may set, by field: an allow-list, since the names go into the SQL. */
const COLUMN_OF: Record<keyof store.UserChanges, string> = {
  email: "email",
  hashedPassword: "hashed_password",
  fullName: "full_name",
  isActive: "is_active",
  isAdmin: "is_admin",
  emailVerifiedAt: "email_verified_at",
};

const CLIENT_BY_ID = prepared("oauth_clients_by_id", "SELECT * FROM oauth_clients WHERE id = $1");

/** The columns of a client's metadata, by field: an allow-list, since the names go into the SQL. */
const CLIENT_COLUMN_OF: Record<keyof store.ClientMetadataRecord, string> = {
  name: "name",
  redirectUris: "redirect_uris",
  postLogoutRedirectUris: "post_logout_redirect_uris",
  grantTypes: "grant_types",
  responseTypes: "response_types",
  tokenEndpointAuthMethod: "token_endpoint_auth_method",
  scope: "scope",
  backchannelLogoutUri: "backchannel_logout_uri",
  firstParty: "first_party",
  resources: "resources",
  resourceServer: "resource_server",
};

/** A client's metadata as the parameters $2 to $12 of the insert, lists as JSON. */
function clientColumns(client: store.ClientMetadataRecord): Param[] {
  return [
    client.name,
    JSON.stringify(client.redirectUris),
    JSON.stringify(client.postLogoutRedirectUris),
    JSON.stringify(client.grantTypes),
    JSON.stringify(client.responseTypes),
    client.tokenEndpointAuthMethod,
    client.scope,
    client.backchannelLogoutUri,
    client.firstParty,
    JSON.stringify(client.resources),
    client.resourceServer,
  ];
}

/** Conditions whose value is undefined are left out; parameters are numbered from 1, `limit` last. */
function filtered(select: string, conditions: [string, Param | undefined][], order: string, limit: number) {
  const params: Param[] = [];
  const clauses: string[] = [];
  for (const [clause, value] of conditions) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`${clause} $${params.length}`);
  }
  params.push(limit);
  const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
  return [`${select} ${where} ORDER BY ${order} LIMIT $${params.length}`, params] as const;
}

/** `clock` stamps created_at and updated_at (milliseconds); tests pass the app's clock. */
export function sqlStore(db: Db, clock: () => number): store.UserStore {
  const d = db.dialect;
  const changes = new ChangeListeners();
  const now = () => new Date(clock()).toISOString();
  const sessionForRotation = prepared("sessions_for_rotation", `SELECT * FROM sessions WHERE id = $1${d.forUpdate}`);
  const pastCap = revokeSessionsPastCap(d);
  const clientPastCap = revokeClientSessionsPastCap(d);
  const webhooks = createWebhookPublisher(clock);
  const logouts = backchannelLogouts(db, clock);
  // The primary key (user_id, device_hash) answers it; one hash per key in use.
  const knownDevice = prepared(
    "known_devices_find",
    `SELECT device_hash, last_seen_at FROM known_devices
     WHERE user_id = $1 AND device_hash IN (SELECT value FROM ${d.elements("$2")})`,
  );

  /** The record of the first row the statement answers, if any. */
  async function find<T>(sql: Sql, params: Param[], read: (row: Row) => T): Promise<T | undefined> {
    const row = await db.one<Row>(sql, params);
    return row && read(row);
  }

  /**
   * Inserts audit events, and the notices they carry; those without a user id are about `subject`.
   * The webhook events they name (webhooks/events.ts) are published with them, in the same
   * transaction; `facts` fill in their data.
   */
  async function record(
    q: Queryable,
    events: readonly store.AuditEntry[],
    subject: string | null,
    facts: EventFacts = {},
  ): Promise<void> {
    const published: store.WebhookEvent[] = [];
    for (const event of events) {
      const at = clock();
      const userId = event.userId === undefined ? subject : event.userId;
      const values = [newId(at), userId, event.type, event.outcome, event.clientAddress, new Date(at).toISOString()];
      await q.run(INSERT_EVENT, values);
      const derived = userId === null ? undefined : eventOfAudit(event, facts);
      if (derived && userId !== null && (await webhooks.wanted(q, derived.type))) {
        published.push(webhookEvent(derived.type, userId, derived.data, at));
      }
      if (event.notice !== undefined) await insertMail(q, event.notice);
    }
    await webhooks.publish(q, published);
  }

  /**
   * Inside the transaction that ended `sessionIds` (revoked, or about to be deleted with their user):
   * the one path by which every ending of a session reaches the relying parties. With `cascade`, the
   * live client sessions begun in an ended browser session end with it (an OpenID Connect sign-out is
   * the browser session's), each recorded as `cascade` (so its webhook session.ended too); then the
   * logout tokens owed for all of them are queued, one per client and sid (backchannel-logouts.ts).
   */
  async function sessionsEnded(tx: Queryable, sessionIds: readonly string[], at: string, cascade?: store.AuditEntry) {
    const all = [...sessionIds];
    if (cascade !== undefined) {
      for (const id of sessionIds) {
        for (const begun of await tx.all<{ id: string; user_id: string }>(END_CLIENT_SESSIONS_OF, [at, id])) {
          await record(tx, [cascade], begun.user_id, { sessionId: begun.id });
          all.push(begun.id);
        }
      }
    }
    await logouts.queue(tx, all);
  }

  /** A session revoked with `events`, and what follows from it (sessionsEnded); the owner's id if it was live. */
  async function revokeOne(
    sql: string,
    params: Param[],
    sessionId: string,
    at: string,
    events: readonly store.AuditEntry[],
  ) {
    return db.transaction(async (tx) => {
      const row = await tx.one<{ user_id: string }>(sql, params);
      if (row === undefined) return undefined;
      await record(tx, events, row.user_id, { sessionId });
      const cascade: store.AuditEntry = {
        type: "session_revocation",
        outcome: "browser_session_ended",
        clientAddress: events[0]?.clientAddress ?? null,
      };
      await sessionsEnded(tx, [sessionId], at, cascade);
      return row.user_id;
    });
  }

  /** Publishes one webhook event that no audit entry names (user.updated), when anyone subscribes. */
  async function publish(q: Queryable, type: WebhookEventType, userId: string, data: Record<string, string>) {
    if (await webhooks.wanted(q, type)) await webhooks.publish(q, [webhookEvent(type, userId, data, clock())]);
  }

  /**
   * Inside a login's transaction: whether the device is new to the user, remembering it either way.
   * A known device costs one read of the primary key (and a write at most once a day, for its
   * last-seen time); only a new one writes, and forgets the least recently seen past the cap.
   */
  async function sighted(tx: Queryable, userId: string, device: store.DeviceSighting, at: string) {
    const [current] = device.hashes as [string];
    const known = await tx.one<{ device_hash: string; last_seen_at: string }>(knownDevice, [userId, device.hashes]);
    if (known !== undefined) {
      // A hash under an older key is moved to the current one, so that it survives that key's removal.
      if (known.last_seen_at < device.refreshBefore || known.device_hash !== current) {
        await tx.run(
          "UPDATE known_devices SET device_hash = $1, last_seen_at = $2 WHERE user_id = $3 AND device_hash = $4",
          [current, at, userId, known.device_hash],
        );
      }
      return false;
    }
    const others = Number((await tx.one<{ n: number | string }>(DEVICES_OF, [userId]))?.n ?? 0);
    await tx.run(
      "INSERT INTO known_devices (user_id, device_hash, first_seen_at, last_seen_at) VALUES ($1, $2, $3, $3)",
      [userId, current, at],
    );
    if (others >= device.maxPerUser) {
      await tx.run(
        `DELETE FROM known_devices WHERE user_id = $1 AND device_hash IN (SELECT device_hash FROM known_devices
           WHERE user_id = $1 ORDER BY last_seen_at DESC, device_hash ${d.noLimit} OFFSET $2)`,
        [userId, device.maxPerUser],
      );
    }
    // A user's first device is not news: the sign-in right after sign-up, or the first after an upgrade.
    return others > 0;
  }

  /**
   * One statement and, if it answered a row, its events (about the row's user_id, or `subject`), in
   * one transaction: the shape of most single-row changes.
   */
  async function eventful<R extends { user_id?: string }>(
    sql: string,
    params: Param[],
    events: readonly store.AuditEntry[],
    subject?: string | null,
    facts?: EventFacts,
  ): Promise<R | undefined> {
    return db.transaction(async (tx) => {
      const row = await tx.one<R>(sql, params);
      if (row !== undefined) await record(tx, events, subject ?? row.user_id ?? null, facts);
      return row;
    });
  }

  /** Inside a transaction: the user's recovery codes become exactly these. */
  async function replaceCodes(tx: Queryable, userId: string, codeHashes: readonly string[], at: string) {
    await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
    if (codeHashes.length === 0) return;
    await tx.run(
      `INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT $1, value, $3 FROM ${d.elements("$2")}`,
      [userId, codeHashes, at],
    );
  }

  async function insertMail(q: Queryable, mail: store.NewOutboxMessage): Promise<void> {
    const at = clock();
    const id = newId(at);
    await q.run(
      `INSERT INTO mail_outbox (id, kind, recipient, user_id, payload, message_id, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
      [id, mail.kind, mail.recipient, mail.userId, mail.payload, `<${id}@${mail.messageDomain}>`, iso(at)],
    );
  }

  /** Inside a transaction: spends a live token and its siblings, or says why it cannot. */
  async function redeem(tx: Queryable, tokenHash: string, purpose: string, at: string): Promise<store.Redemption> {
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

  /** Deletes up to `limit` rows of `table` (by its `key`) that `condition` ($1) picks; answers how many. */
  function deleteSome(table: string, key: string, condition: string, value: string, limit: number) {
    const sql = `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${condition} LIMIT $2)`;
    return db.run(sql, [value, limit]);
  }

  /**
   * Inside a user write's transaction: ends every session of the user and the pending second-factor
   * challenges (they proved the old password), each session with its webhook and back-channel logouts;
   * answers how many sessions ended. The caller replaces the credential stamp.
   */
  async function endEverySession(tx: Queryable, userId: string, at: string): Promise<number> {
    const ended = await tx.all<{ id: string }>(
      "UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL RETURNING id",
      [at, userId],
    );
    await tx.run("DELETE FROM mfa_challenges WHERE user_id = $1", [userId]);
    for (const session of ended) {
      await publish(tx, "session.ended", userId, { session_id: session.id, reason: "credentials_changed" });
    }
    // Every session of the user ended: no client session is left to cascade to.
    await sessionsEnded(
      tx,
      ended.map((session) => session.id),
      at,
    );
    return ended.length;
  }

  /**
   * Inside proveAddress's transaction: what the plan ends of the user's ways in besides the sessions,
   * keeping the identity (issuer, subject) the proof links. Answers what was there and is gone.
   */
  async function endWaysIn(
    tx: Queryable,
    user: store.UserRecord,
    plan: store.AddressProofPlan,
    at: string,
    keep: { issuer: string; subject: string } | undefined,
  ): Promise<Omit<store.EndedWaysIn, "password" | "sessions">> {
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

  /** Inside a user write's transaction: tells other instances, where the dialect tells them this way. */
  async function notify(tx: Queryable, userId: string): Promise<void> {
    if (d.notifyUserChange !== undefined) await tx.run(d.notifyUserChange, [userId]);
  }

  async function activeAdmins(q: Queryable): Promise<number> {
    return Number((await q.one<{ n: number | string }>(ACTIVE_ADMINS, [true]))?.n ?? 0);
  }

  /**
   * A write to one user in one transaction: when it may remove an admin, under the admin lock and
   * rolled back if it took the active admins from some to none. Other instances hear of it on
   * commit (notify), this one's listeners right after, before the caller answers.
   */
  async function writeUser<T>(userId: string, canRemoveAnAdmin: boolean, write: (tx: Queryable) => Promise<T>) {
    const result = await db.transaction(async (tx) => {
      if (canRemoveAnAdmin && d.lockAdmins !== undefined) await tx.run(d.lockAdmins);
      const before = canRemoveAnAdmin ? await activeAdmins(tx) : 0;
      const written = await write(tx);
      if (before > 0 && (await activeAdmins(tx)) === 0) throw new LastActiveAdmin();
      await notify(tx, userId);
      return written;
    });
    changes.changed(userId);
    return result;
  }

  return {
    // Users (UserStore)
    userChanges: db.userChanges(changes),
    onWebhookEvents: (listener) => webhooks.onPublished(listener),
    async findByEmail(email) {
      return email.includes("\0") ? undefined : find(USER_BY_EMAIL, [normalizeEmail(email)], readUser);
    },
    findById: (id) => find(USER_BY_ID, [id], readUser),
    async list({ limit, after, email, isActive, isAdmin }) {
      const conditions: [string, Param | undefined][] = [
        ["id >", after],
        ["email =", email === undefined ? undefined : normalizeEmail(email)],
        ["is_active =", isActive],
        ["is_admin =", isAdmin],
      ];
      return (await db.all<Row>(...filtered("SELECT * FROM users", conditions, "id", limit))).map(readUser);
    },
    countActiveAdmins: () => activeAdmins(db),
    async create(user, { events = [] } = {}) {
      const at = clock();
      return db.transaction(async (tx) => {
        const { hashedPassword, fullName = null, isActive = true, isAdmin = false, emailVerifiedAt = null } = user;
        const values = [newId(at), normalizeEmail(user.email), hashedPassword, fullName, isActive, isAdmin, iso(at)];
        const row = (await tx.one<Row>(INSERT_USER, [...values, newCredentialStamp(), emailVerifiedAt])) as Row;
        await record(tx, events, row.id as string, { email: row.email as string });
        return readUser(row);
      });
    },
    async update(id, fields, { endSessions = false, events = [] } = {}) {
      const at = now();
      const params: Param[] = [at];
      const assignments = ["updated_at = $1"];
      for (const [field, value] of Object.entries(fields) as [keyof store.UserChanges, Param | undefined][]) {
        if (value === undefined) continue;
        params.push(field === "email" ? normalizeEmail(value as string) : value);
        assignments.push(`${COLUMN_OF[field]} = $${params.length}`);
      }
      if (endSessions || fields.email !== undefined) {
        // Changing only when the e-mail really changes would need a read first; a new stamp is harmless.
        params.push(newCredentialStamp());
        assignments.push(`credential_stamp = $${params.length}`);
      }
      if (endSessions) assignments.push("credentials_changed_at = $1");
      params.push(id);
      const sql = `UPDATE users SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
      return writeUser(id, fields.isAdmin === false || fields.isActive === false, async (tx) => {
        const row = await tx.one<Row>(sql, params);
        if (row === undefined) return undefined;
        if (endSessions) await endEverySession(tx, id, at);
        const user = readUser(row);
        await record(tx, events, id, { email: user.email });
        if (PROFILE_FIELDS.some((field) => fields[field] !== undefined)) {
          await publish(tx, "user.updated", id, { email: user.email });
        }
        return user;
      });
    },
    async proveAddress(userId, decide, { link, events }) {
      if (!isUuid(userId)) return { outcome: "refused" };
      const at = now();
      const elsewhere = new Error("the identity was linked to another account meanwhile");
      try {
        return await writeUser(userId, false, async (tx): Promise<store.AddressProofResult> => {
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
          const ended: store.EndedWaysIn = { ...ways, password, sessions };
          await record(tx, events(ended, user), userId, { email: user.email });
          return { outcome: "proven", user, ended };
        });
      } catch (error) {
        if (error === elsewhere) return { outcome: "elsewhere" };
        throw error;
      }
    },
    async remove(id, { events = [] } = {}) {
      return writeUser(id, true, async (tx) => {
        // The sessions go with the user (cascade); their relying parties are told first, while they are known.
        const live = await tx.all<{ id: string }>("SELECT id FROM sessions WHERE user_id = $1 AND revoked_at IS NULL", [
          id,
        ]);
        await sessionsEnded(
          tx,
          live.map((session) => session.id),
          now(),
        );
        const removed = (await tx.run("DELETE FROM users WHERE id = $1", [id])) > 0;
        if (removed) await record(tx, events, id);
        return removed;
      });
    },

    // Sessions (SessionStore)
    async createSession(session, { maxPerUser, events = [], device, client }) {
      const at = now();
      const amr = [...(session.amr ?? ["pwd"])];
      return db.transaction(async (tx) => {
        // One login of a user at a time past this point, so that two cannot both stay under the cap.
        if (d.forUpdate) await tx.run(`SELECT 1 FROM users WHERE id = $1${d.forUpdate}`, [session.userId]);
        const { id, userId, expiresAt, clientAddress, userAgent, tokenHash, tokenExpiresAt } = session;
        const values = [id, userId, at, expiresAt, clientAddress, userAgent, tokenHash, tokenExpiresAt];
        await tx.run(INSERT_SESSION, [...values, JSON.stringify(amr)]);
        // A client's session is bound to its client in the same transaction: the cap it counts against.
        if (client !== undefined)
          await tx.run(
            "INSERT INTO oidc_client_sessions (session_id, client_id, scope, browser_session_id) VALUES ($1, $2, $3, $4)",
            [id, client.clientId, client.scope, client.browserSessionId],
          );
        await record(tx, events, userId, { sessionId: id });
        const capped =
          client === undefined
            ? await tx.all<{ id: string }>(pastCap, [userId, at, maxPerUser])
            : await tx.all<{ id: string }>(clientPastCap, [userId, at, maxPerUser, client.clientId]);
        for (const ended of capped) await record(tx, [SESSION_LIMIT], userId, { sessionId: ended.id });
        if (capped.length > 0) {
          const ids = capped.map((session) => session.id);
          await sessionsEnded(tx, ids, at, { ...SESSION_LIMIT, outcome: "browser_session_ended" });
        }
        const notice = device !== undefined && (await sighted(tx, userId, device, at)) ? device.notice : undefined;
        if (notice !== undefined) await insertMail(tx, notice);
        // Built from what was written rather than read back: a login is this store's hottest write.
        const started = { id, userId, createdAt: at, lastUsedAt: at, expiresAt, revokedAt: null, clientAddress };
        return { ...started, userAgent, amr, newDeviceNoticed: notice !== undefined };
      });
    },
    async rotateRefreshToken(presented, successor, at, client) {
      if (!isUuid(presented.sessionId)) return { outcome: "invalid" };
      return db.transaction(async (tx): Promise<store.Rotation> => {
        // Concurrent rotations of one session queue here (FOR UPDATE, or SQLite's one writer), and
        // only the first finds its generation current.
        const row = await tx.one<Row>(sessionForRotation, [presented.sessionId]);
        const state = row && readTokenState(row);
        if (!state || state.revokedAt !== null || state.expiresAt <= at) return { outcome: "invalid" };
        const outcome = judgePresentedToken(state, presented, at);
        if (outcome !== "current") return outcome;
        const expiresAt = successor.expiresAt < state.expiresAt ? successor.expiresAt : state.expiresAt;
        const values = [successor.tokenHash, expiresAt, at, client.address, client.userAgent, state.id];
        const updated = (await tx.one<Row>(ROTATE, values)) as Row;
        const user = (await tx.one<Row>(USER_BY_ID, [state.userId])) as Row;
        return { outcome: "rotated", session: readSession(updated), user: readUser(user) };
      });
    },
    async findSession(id) {
      return isUuid(id) ? find("SELECT * FROM sessions WHERE id = $1", [id], readSession) : undefined;
    },
    async listSessions(userId, at, { limit, before }) {
      const rows = await db.all<Row>(
        `SELECT * FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
           AND refresh_expires_at > $2 ${before ? "AND id < $4" : ""} ORDER BY id DESC LIMIT $3`,
        [userId, at, limit, ...(before ? [before] : [])],
      );
      return rows.map(readSession);
    },
    async revokeSession(id, at, events = []) {
      if (!isUuid(id)) return false;
      const sql = "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING user_id";
      return (await revokeOne(sql, [at, id], id, at, events)) !== undefined;
    },
    async revokeSessionByToken(presented, at, events = []) {
      if (!isUuid(presented.sessionId)) return undefined;
      return revokeOne(
        `UPDATE sessions SET revoked_at = $1
         WHERE id = $2 AND refresh_generation = $3 AND refresh_token_hash = $4 AND revoked_at IS NULL
         RETURNING user_id`,
        [at, presented.sessionId, presented.generation, presented.tokenHash],
        presented.sessionId,
        at,
        events,
      );
    },
    async purgeExpired(at, limit) {
      const sessions = await db.run(PURGE_SESSIONS, [at, limit]);
      const challenges = await deleteSome("mfa_challenges", "token_hash", "expires_at <= $1", at, limit);
      const ceremonies = await deleteSome("webauthn_challenges", "id", "expires_at <= $1", at, limit);
      return sessions + challenges + ceremonies;
    },

    // Passkeys and WebAuthn challenges (PasskeyStore)
    async addPasskey(passkey, events = [], recoveryCodeHashes, signedIn) {
      const at = clock();
      const { userId, credentialId, publicKey, counter, transports, name, deviceType, backedUp, aaguid } = passkey;
      const rest = [name, deviceType, backedUp, aaguid];
      return db.transaction(async (tx) => {
        if (signedIn !== undefined) await assertStillSignedIn(tx, d, userId, signedIn);
        const row = await tx.one<Row>(
          `INSERT INTO webauthn_credentials (id, user_id, credential_id, public_key, counter, transports, name,
                                             device_type, backed_up, aaguid, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (credential_id) DO NOTHING RETURNING *`,
          [newId(at), userId, credentialId, publicKey, counter, JSON.stringify(transports), ...rest, iso(at)],
        );
        if (row === undefined) return undefined;
        if (recoveryCodeHashes !== undefined) await replaceCodes(tx, userId, recoveryCodeHashes, iso(at));
        await record(tx, events, userId);
        return readPasskey(row);
      });
    },
    async listPasskeys(userId) {
      if (!isUuid(userId)) return [];
      const sql = "SELECT * FROM webauthn_credentials WHERE user_id = $1 ORDER BY id";
      return (await db.all<Row>(sql, [userId])).map(readPasskey);
    },
    async countPasskeys(userId) {
      if (!isUuid(userId)) return 0;
      const sql = "SELECT count(*) AS n FROM webauthn_credentials WHERE user_id = $1";
      return Number((await db.one<{ n: number | string }>(sql, [userId]))?.n ?? 0);
    },
    async findPasskeyByCredentialId(credentialId) {
      if (credentialId.includes("\0")) return undefined;
      return find("SELECT * FROM webauthn_credentials WHERE credential_id = $1", [credentialId], readPasskey);
    },
    async renamePasskey(userId, id, name, events = []) {
      if (!isUuid(id, userId)) return undefined;
      const sql = "UPDATE webauthn_credentials SET name = $1 WHERE id = $2 AND user_id = $3 RETURNING *";
      const row = await eventful<Row>(sql, [name, id, userId], events);
      return row && readPasskey(row);
    },
    async removePasskey(userId, id, events = []) {
      if (!isUuid(id, userId)) return false;
      const sql = "DELETE FROM webauthn_credentials WHERE id = $1 AND user_id = $2 RETURNING user_id";
      return (await eventful(sql, [id, userId], events)) !== undefined;
    },
    async recordPasskeyUse(id, use, events = []) {
      if (!isUuid(id)) return false;
      const row = await eventful(
        `UPDATE webauthn_credentials SET counter = $1, backed_up = $2, last_used_at = $3
         WHERE id = $4 AND counter = $5 RETURNING user_id`,
        [use.counter, use.backedUp, use.at, id, use.previousCounter],
        events,
      );
      return row !== undefined;
    },
    async saveWebAuthnChallenge(challenge) {
      await db.run(
        `INSERT INTO webauthn_challenges (id, challenge_hash, purpose, user_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [challenge.id, challenge.challengeHash, challenge.purpose, challenge.userId, now(), challenge.expiresAt],
      );
    },
    async takeWebAuthnChallenge(key, purpose, at) {
      if ("id" in key && !isUuid(key.id)) return undefined;
      const [column, value] = "id" in key ? ["id", key.id] : ["challenge_hash", key.challengeHash];
      if (value.includes("\0")) return undefined;
      // One statement: of several concurrent takers, only the one whose DELETE removed the row gets it.
      const row = await db.one<Row>(`DELETE FROM webauthn_challenges WHERE ${column} = $1 RETURNING *`, [value]);
      const challenge = row && readWebAuthnChallenge(row);
      return challenge?.purpose === purpose && challenge.expiresAt > at ? challenge : undefined;
    },

    // Second factors (SecondFactorStore)
    async secondFactorsOf(userId) {
      const row = (await db.one<Row>(SECOND_FACTORS_OF, [userId])) as Row;
      return { totp: Boolean(row.totp), recoveryCodesRemaining: Number(row.codes), passkeys: Number(row.passkeys) };
    },
    findTotp: (userId) => find("SELECT * FROM totp_factors WHERE user_id = $1", [userId], readTotp),
    async startTotp(userId, sealedSecret) {
      const written = await db.run(
        `INSERT INTO totp_factors (user_id, sealed_secret, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET sealed_secret = excluded.sealed_secret,
           created_at = excluded.created_at, last_step = NULL WHERE totp_factors.confirmed_at IS NULL`,
        [userId, sealedSecret, now()],
      );
      return written > 0;
    },
    async confirmTotp(userId, step, recoveryCodeHashes, events = []) {
      const at = now();
      return db.transaction(async (tx) => {
        const confirmed = await tx.run(
          `UPDATE totp_factors SET confirmed_at = $1, last_step = $2
           WHERE user_id = $3 AND confirmed_at IS NULL AND (last_step IS NULL OR last_step < $2)`,
          [at, step, userId],
        );
        if (confirmed === 0) return false;
        if (recoveryCodeHashes !== undefined) await replaceCodes(tx, userId, recoveryCodeHashes, at);
        await record(tx, events, userId);
        return true;
      });
    },
    async acceptTotpStep(userId, step, events = []) {
      const accepted = await eventful(
        `UPDATE totp_factors SET last_step = $1
         WHERE user_id = $2 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $1) RETURNING user_id`,
        [step, userId],
        events,
      );
      return accepted !== undefined;
    },
    async removeTotp(userId, { dropRecoveryCodes, events = [] }) {
      return db.transaction(async (tx) => {
        if ((await tx.run("DELETE FROM totp_factors WHERE user_id = $1", [userId])) === 0) return false;
        if (dropRecoveryCodes) await tx.run("DELETE FROM recovery_codes WHERE user_id = $1", [userId]);
        await record(tx, events, userId);
        return true;
      });
    },
    async replaceRecoveryCodes(userId, codeHashes, events = []) {
      const at = now();
      await db.transaction(async (tx) => {
        await replaceCodes(tx, userId, codeHashes, at);
        await record(tx, events, userId);
      });
    },
    async useRecoveryCode(userId, candidateHashes, at, events = []) {
      if (candidateHashes.length === 0) return false;
      const used = await eventful(
        `UPDATE recovery_codes SET used_at = $1
         WHERE user_id = $2 AND used_at IS NULL AND code_hash IN (SELECT value FROM ${d.elements("$3")})
         RETURNING user_id`,
        [at, userId, candidateHashes],
        events,
        userId,
      );
      return used !== undefined;
    },
    async resetSecondFactors(userId, events = []) {
      await db.transaction(async (tx) => {
        for (const table of RESET) await tx.run(`DELETE FROM ${table} WHERE user_id = $1`, [userId]);
        await record(tx, events, userId);
      });
    },
    async createMfaChallenge({ tokenHash, userId, expiresAt, firstFactor = "pwd" }) {
      await db.run(
        `INSERT INTO mfa_challenges (token_hash, user_id, created_at, expires_at, first_factor)
         VALUES ($1, $2, $3, $4, $5)`,
        [tokenHash, userId, now(), expiresAt, firstFactor],
      );
    },
    findMfaChallenge: (tokenHash) =>
      find("SELECT * FROM mfa_challenges WHERE token_hash = $1", [tokenHash], readMfaChallenge),
    async failMfaChallenge(tokenHash, maxFailures, at) {
      const row = await db.one<{ failures: number }>(
        `UPDATE mfa_challenges SET failures = failures + 1,
           spent_at = CASE WHEN failures + 1 >= $1 THEN $2 ELSE spent_at END
         WHERE token_hash = $3 AND spent_at IS NULL RETURNING failures`,
        [maxFailures, at, tokenHash],
      );
      return row ? Number(row.failures) : maxFailures;
    },
    async spendMfaChallenge(tokenHash, at) {
      const row = await db.one<{ user_id: string }>(
        `UPDATE mfa_challenges SET spent_at = $1
         WHERE token_hash = $2 AND spent_at IS NULL AND expires_at > $1 RETURNING user_id`,
        [at, tokenHash],
      );
      return row?.user_id;
    },
    async listTotpSecrets() {
      const rows = await db.all<Row>("SELECT user_id, sealed_secret FROM totp_factors ORDER BY user_id");
      return rows.map((row) => ({ userId: row.user_id as string, sealedSecret: row.sealed_secret as string }));
    },
    async replaceTotpSecret(userId, previous, next) {
      const sql = "UPDATE totp_factors SET sealed_secret = $1 WHERE user_id = $2 AND sealed_secret = $3";
      return (await db.run(sql, [next, userId, previous])) > 0;
    },

    // OAuth clients (ClientStore)
    async createClient(client, events = []) {
      const at = clock();
      const values = [newId(at), ...clientColumns(client), client.registeredBy, client.secretHash, iso(at)];
      return db.transaction(async (tx) => {
        const row = (await tx.one<Row>(
          `INSERT INTO oauth_clients (id, name, redirect_uris, post_logout_redirect_uris, grant_types, response_types,
             token_endpoint_auth_method, scope, backchannel_logout_uri, first_party, resources, resource_server,
             registered_by, secret_hash, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) RETURNING *`,
          values,
        )) as Row;
        await record(tx, events, null);
        return readClient(row);
      });
    },
    async findClient(id) {
      return isUuid(id) ? find(CLIENT_BY_ID, [id], readClient) : undefined;
    },
    async listClients({ limit, after, publicOnly }) {
      const conditions: [string, Param | undefined][] = [
        ["id >", after],
        ["token_endpoint_auth_method =", publicOnly ? "none" : undefined],
      ];
      return (await db.all<Row>(...filtered("SELECT * FROM oauth_clients", conditions, "id", limit))).map(readClient);
    },
    async updateClient(id, changes, events = []) {
      if (!isUuid(id)) return undefined;
      const params: Param[] = [now()];
      const assignments = ["updated_at = $1"];
      for (const [field, value] of Object.entries(changes) as [keyof store.ClientMetadataRecord, unknown][]) {
        if (value === undefined) continue;
        params.push(Array.isArray(value) ? JSON.stringify(value) : (value as Param));
        assignments.push(`${CLIENT_COLUMN_OF[field]} = $${params.length}`);
      }
      params.push(id);
      const sql = `UPDATE oauth_clients SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
      const row = await eventful<Row>(sql, params, events, null);
      return row && readClient(row);
    },
    async rotateClientSecret(id, secretHash, previousExpiresAt, events = []) {
      if (!isUuid(id)) return undefined;
      const row = await eventful<Row>(
        `UPDATE oauth_clients SET previous_secret_hash = CASE WHEN $5 THEN secret_hash ELSE NULL END,
           previous_secret_expires_at = $2, secret_hash = $3, updated_at = $4
         WHERE id = $1 AND secret_hash IS NOT NULL RETURNING *`,
        [id, previousExpiresAt, secretHash, now(), previousExpiresAt !== null],
        events,
        null,
      );
      return row && readClient(row);
    },
    async removeClient(id, events = []) {
      if (!isUuid(id)) return false;
      const at = now();
      return db.transaction(async (tx) => {
        if ((await tx.one(`SELECT id FROM oauth_clients WHERE id = $1${d.forUpdate}`, [id])) === undefined)
          return false;
        // Its sessions end, and are told, while the client's backchannel_logout_uri is still known.
        const ended = await tx.all<{ id: string; user_id: string }>(`${END_SESSIONS_OF_CLIENT} RETURNING id, user_id`, [
          at,
          id,
        ]);
        const entry: store.AuditEntry = {
          type: "session_revocation",
          outcome: "client_deleted",
          clientAddress: events[0]?.clientAddress ?? null,
        };
        for (const session of ended) await record(tx, [entry], session.user_id, { sessionId: session.id });
        await sessionsEnded(
          tx,
          ended.map((session) => session.id),
          at,
        );
        await tx.run("DELETE FROM oidc_consents WHERE client_id = $1", [id]);
        await tx.run("DELETE FROM oauth_clients WHERE id = $1", [id]);
        await record(tx, events, null);
        return true;
      });
    },
    async revokeConsent(userId, clientId, at, events = []) {
      if (!isUuid(userId)) return false;
      return db.transaction(async (tx) => {
        const removed = await tx.run("DELETE FROM oidc_consents WHERE user_id = $1 AND client_id = $2", [
          userId,
          clientId,
        ]);
        if (removed === 0) return false;
        const ended = await tx.all<{ id: string }>(`${END_SESSIONS_OF_CLIENT} AND user_id = $3 RETURNING id`, [
          at,
          clientId,
          userId,
        ]);
        await record(tx, events, userId);
        const entry: store.AuditEntry = {
          type: "session_revocation",
          outcome: "consent_revoked",
          clientAddress: events[0]?.clientAddress ?? null,
        };
        for (const session of ended) await record(tx, [entry], userId, { sessionId: session.id });
        await sessionsEnded(
          tx,
          ended.map((session) => session.id),
          at,
        );
        return true;
      });
    },

    // The audit trail (AuditStore)
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

    // Reset and verification links (AccountTokenStore)
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
      const redemption = await db.transaction(async (tx): Promise<store.Redemption> => {
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

    // The mail outbox (OutboxStore)
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
      const mail = await deleteSome("mail_outbox", "id", "status = 'sent' AND sent_at < $1", sentBefore, limit);
      return tokens + mail;
    },

    // Webhooks (WebhookStore)
    async createWebhookEndpoint(endpoint, events = []) {
      const at = clock();
      const { url, description, eventTypes, enabled, sealedSecret } = endpoint;
      const row = await db.transaction(async (tx) => {
        const created = (await tx.one<Row>(
          `INSERT INTO webhook_endpoints (id, url, description, event_types, enabled, sealed_secret, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
          [newId(at), url, description, JSON.stringify(eventTypes), enabled, sealedSecret, iso(at)],
        )) as Row;
        await record(tx, events, null);
        return created;
      });
      webhooks.invalidate();
      return readEndpoint(row);
    },
    async listWebhookEndpoints({ limit, after }) {
      const query = filtered("SELECT * FROM webhook_endpoints", [["id >", after]], "id", limit);
      return (await db.all<Row>(...query)).map(readEndpoint);
    },
    async findWebhookEndpoint(id) {
      return isUuid(id) ? find("SELECT * FROM webhook_endpoints WHERE id = $1", [id], readEndpoint) : undefined;
    },
    async updateWebhookEndpoint(id, changes, events = []) {
      if (!isUuid(id)) return undefined;
      const params: Param[] = [now()];
      const assignments = ["updated_at = $1"];
      const values: [string, Param | undefined][] = [
        ["url", changes.url],
        ["description", changes.description],
        ["event_types", changes.eventTypes && JSON.stringify(changes.eventTypes)],
        ["enabled", changes.enabled],
        // Turning an endpoint on (again) forgets why it was turned off.
        ["disabled_reason", changes.enabled === true ? null : changes.disabledReason],
      ];
      for (const [column, value] of values) {
        if (value === undefined) continue;
        params.push(value);
        assignments.push(`${column} = $${params.length}`);
      }
      params.push(id);
      const sql = `UPDATE webhook_endpoints SET ${assignments.join(", ")} WHERE id = $${params.length} RETURNING *`;
      const row = await eventful<Row>(sql, params, events);
      webhooks.invalidate();
      return row && readEndpoint(row);
    },
    async rotateWebhookSecret(id, sealedSecret, previousUntil, events = []) {
      if (!isUuid(id)) return undefined;
      const row = await eventful<Row>(
        `UPDATE webhook_endpoints SET previous_sealed_secret = sealed_secret, previous_secret_until = $1,
           sealed_secret = $2, updated_at = $3 WHERE id = $4 RETURNING *`,
        [previousUntil, sealedSecret, now(), id],
        events,
      );
      return row && readEndpoint(row);
    },
    async removeWebhookEndpoint(id, events = []) {
      if (!isUuid(id)) return false;
      const sql = "DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id";
      const removed = (await eventful(sql, [id], events)) !== undefined;
      webhooks.invalidate();
      return removed;
    },
    async claimWebhookMessages(owner, at, leaseUntil, limit) {
      // As claimMail, and in order per user: a message waits while an earlier one of its user for its
      // endpoint is pending (due later, or leased by a sender in any instance).
      const rows = await db.claiming((tx) =>
        tx.all<Row>(
          `UPDATE webhook_messages SET lease_owner = $1, lease_until = $2, attempts = attempts + 1
           WHERE (endpoint_id, event_id) IN (
             SELECT m.endpoint_id, m.event_id FROM webhook_messages m
             WHERE m.status = 'pending' AND m.next_attempt_at <= $3 AND (m.lease_until IS NULL OR m.lease_until <= $3)
               AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = m.endpoint_id AND e.enabled = $5)
               AND NOT EXISTS (SELECT 1 FROM webhook_messages earlier WHERE earlier.endpoint_id = m.endpoint_id
                 AND earlier.user_id = m.user_id AND earlier.status = 'pending' AND earlier.event_id < m.event_id)
             ORDER BY m.event_id LIMIT $4 ${d.skipLocked}) RETURNING *`,
          [owner, leaseUntil, at, limit, true],
        ),
      );
      return rows.map(readWebhookMessage).sort((a, b) => (a.eventId < b.eventId ? -1 : 1));
    },
    async completeWebhookMessage({ endpointId, eventId }, owner, outcome, attempt) {
      const at = clock();
      const [set, params] = outcomeAssignments(outcome, 4, WEBHOOK_DELIVERED);
      await db.transaction(async (tx) => {
        await tx.run(
          `INSERT INTO webhook_attempts (id, endpoint_id, event_id, type, attempt, status_code, duration_ms, error, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            newId(at),
            endpointId,
            eventId,
            attempt.type,
            attempt.attempt,
            attempt.statusCode,
            attempt.durationMs,
            attempt.error,
            iso(at),
          ],
        );
        await tx.run(
          `UPDATE webhook_messages SET ${set} WHERE endpoint_id = $1 AND event_id = $2 AND lease_owner = $3`,
          [endpointId, eventId, owner, ...params],
        );
      });
    },
    async listWebhookAttempts(endpointId, { limit, before }) {
      if (!isUuid(endpointId)) return [];
      const rows = await db.all<Row>(
        `SELECT * FROM webhook_attempts WHERE endpoint_id = $1 ${before ? "AND id < $3" : ""} ORDER BY id DESC LIMIT $2`,
        [endpointId, limit, ...(before ? [before] : [])],
      );
      return rows.map(readWebhookAttempt);
    },
    async redeliverWebhookEvent(endpointId, eventId, at) {
      if (!isUuid(endpointId, eventId)) return undefined;
      const row = await db.one<Row>(
        `UPDATE webhook_messages SET status = 'pending', attempts = 0, next_attempt_at = $1, last_error = NULL,
           lease_owner = NULL, lease_until = NULL WHERE endpoint_id = $2 AND event_id = $3 RETURNING *`,
        [at, endpointId, eventId],
      );
      return row && readWebhookMessage(row);
    },
    async pruneWebhookRecords(before, limit) {
      const messages = await db.run(
        `DELETE FROM webhook_messages WHERE (endpoint_id, event_id) IN (SELECT endpoint_id, event_id
           FROM webhook_messages WHERE status = 'delivered' AND delivered_at < $1 LIMIT $2)`,
        [before, limit],
      );
      return messages + (await deleteSome("webhook_attempts", "id", "created_at < $1", before, limit));
    },
    ...oidcStore(db),
    ...logouts.verbs,
    ...upstreamStore(db, insertMail),

    // The database itself
    ping: () => db.one("SELECT 1").then(() => {}),
    close: () => db.close(),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A row as the driver answers it: timestamps as ISO text (both backends), booleans as 0/1 on SQLite. */
type Row = Record<string, unknown>;

/** PostgreSQL's boolean; SQLite's 0 or 1. */
const flag = (value: unknown) => Boolean(value);

const readUser = reader<store.UserRecord>({ isActive: flag, isAdmin: flag });
// The refresh columns are the session's current token, read only by the rotation.
const readSession = reader<store.SessionRecord>({ amr: (value) => parseAmr(value as string | null) }, [
  "refresh_token_hash",
  "refresh_generation",
  "refresh_expires_at",
  "rotated_at",
]);
/** What the rotation reads of a session: its token columns and its ends. */
const readTokenState = reader<SessionTokenState & Pick<store.SessionRecord, "expiresAt" | "revokedAt">>();
const readPasskey = reader<store.PasskeyRecord>({
  // PostgreSQL answers bigint as text; 32-bit counters fit a number exactly.
  counter: Number,
  transports: (value) => JSON.parse(value as string) as string[],
  backedUp: flag,
});
const readWebAuthnChallenge = reader<store.WebAuthnChallengeRecord>();
const readAccountToken = reader<store.AccountTokenRecord>();
const readOutbox = reader<store.OutboxMessage>({}, ["lease_owner", "lease_until"]);
const readEvent = reader<store.AuditEvent>();
const readTotp = reader<store.TotpFactor>();
const readMfaChallenge = reader<store.MfaChallenge>();
const readEndpoint = reader<store.WebhookEndpointRecord>({
  eventTypes: (value) => JSON.parse(value as string) as string[],
  enabled: flag,
});
const readWebhookMessage = reader<store.WebhookMessage>({}, ["lease_owner", "lease_until"]);
const readWebhookAttempt = reader<store.WebhookAttempt>();
const jsonList = (value: unknown) => JSON.parse(value as string) as string[];
const readClient = reader<store.ClientRecord>({
  redirectUris: jsonList,
  postLogoutRedirectUris: jsonList,
  grantTypes: jsonList,
  responseTypes: jsonList,
  firstParty: flag,
  resources: jsonList,
  resourceServer: flag,
});
