// The OAuth clients' and OpenID Connect's verbs (clients.ts): the registry,
// codes (spent by one conditional UPDATE: of two redemptions of one code,
// exactly one wins and the other sees a replay), consents and client
// sessions. removeClient and revokeConsent end the client's sessions, each
// with its event, through sessionsEnded (sql/shared.ts), in their
// transaction.
import type { AuditEntry } from "../audit.ts";
import type {
  AuthorizationCodeRecord,
  ClientMetadataRecord,
  ClientRecord,
  ClientSessionRecord,
  ClientVerbs,
  ConsentRecord,
} from "../clients.ts";
import { type Param, prepared } from "../db.ts";
import { newId } from "../ids.ts";
import { reader } from "./reader.ts";
import { filtered, flag, iso, isUuid, type Row, type Shared } from "./shared.ts";

/** Ends the live sessions of a client ($1 now, $2 the client), all users' or one's ($3). */
const END_SESSIONS_OF_CLIENT = `UPDATE sessions SET revoked_at = $1 WHERE revoked_at IS NULL AND id IN
  (SELECT session_id FROM oidc_client_sessions WHERE client_id = $2)`;

const CLIENT_BY_ID = prepared("oauth_clients_by_id", "SELECT * FROM oauth_clients WHERE id = $1");

/** The columns of a client's metadata, by field: an allow-list, since the names go into the SQL. */
const CLIENT_COLUMN_OF: Record<keyof ClientMetadataRecord, string> = {
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
  requirePushedAuthorizationRequests: "require_pushed_authorization_requests",
  dpopBoundAccessTokens: "dpop_bound_access_tokens",
  brandColor: "brand_color",
};

/** A client's metadata as the parameters $2 to $13 of the insert (and $17, DPoP's), lists as JSON. */
function clientColumns(client: Omit<ClientMetadataRecord, "brandColor">): Param[] {
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
    client.requirePushedAuthorizationRequests,
  ];
}

const jsonList = (value: unknown) => JSON.parse(value as string) as string[];
const readClient = reader<ClientRecord>({
  redirectUris: jsonList,
  postLogoutRedirectUris: jsonList,
  grantTypes: jsonList,
  responseTypes: jsonList,
  firstParty: flag,
  resources: jsonList,
  resourceServer: flag,
  requirePushedAuthorizationRequests: flag,
  dpopBoundAccessTokens: flag,
});
const readCode = reader<AuthorizationCodeRecord>();
const readClientSession = reader<ClientSessionRecord>();
const readConsent = reader<ConsentRecord>({}, ["user_id"]);

export function clientVerbs({ db, d, clock, now, find, record, eventful, sessionsEnded }: Shared): ClientVerbs {
  return {
    // The registry
    async createClient(client, events = []) {
      const at = clock();
      const values = [
        client.id ?? newId(at),
        ...clientColumns(client),
        client.registeredBy,
        client.secretHash,
        iso(at),
      ];
      // Issue 36 (DPoP): its column after the others, so that the numbering above stays as it was.
      values.push(client.dpopBoundAccessTokens);
      // Issue 37: after DPoP's.
      values.push(client.brandColor ?? null);
      return db.transaction(async (tx) => {
        const row = (await tx.one<Row>(
          `INSERT INTO oauth_clients (id, name, redirect_uris, post_logout_redirect_uris, grant_types, response_types,
             token_endpoint_auth_method, scope, backchannel_logout_uri, first_party, resources, resource_server,
             require_pushed_authorization_requests,
             registered_by, secret_hash, created_at, updated_at, dpop_bound_access_tokens, brand_color)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, $17, $18) RETURNING *`,
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
      for (const [field, value] of Object.entries(changes) as [keyof ClientMetadataRecord, unknown][]) {
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
        const entry: AuditEntry = {
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
        await tx.run("DELETE FROM brands WHERE owner = $1", [id]);
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
        const entry: AuditEntry = {
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

    // OpenID Connect: codes, consents and client sessions
    async saveAuthorizationCode(code, events = []) {
      await db.transaction(async (tx) => {
        await tx.run(
          `INSERT INTO oidc_codes (code_hash, client_id, user_id, browser_session_id, redirect_uri, code_challenge,
                                   nonce, scope, created_at, expires_at, dpop_jkt)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [
            code.codeHash,
            code.clientId,
            code.userId,
            code.browserSessionId,
            code.redirectUri,
            code.codeChallenge,
            code.nonce,
            code.scope,
            code.createdAt,
            code.expiresAt,
            code.dpopJkt ?? null,
          ],
        );
        await record(tx, events, code.userId);
      });
    },
    async redeemAuthorizationCode(codeHash, at) {
      const spent = await db.one<Record<string, unknown>>(
        "UPDATE oidc_codes SET redeemed_at = $1 WHERE code_hash = $2 AND redeemed_at IS NULL RETURNING *",
        [at, codeHash],
      );
      if (spent) return { outcome: "redeemed", code: readCode(spent) };
      const known = await db.one<Record<string, unknown>>("SELECT * FROM oidc_codes WHERE code_hash = $1", [codeHash]);
      return known ? { outcome: "replayed", code: readCode(known) } : { outcome: "unknown" };
    },
    async findClientSession(sessionId) {
      if (!isUuid(sessionId)) return undefined;
      const row = await db.one<Record<string, unknown>>("SELECT * FROM oidc_client_sessions WHERE session_id = $1", [
        sessionId,
      ]);
      return row && readClientSession(row);
    },
    async findConsent(userId, clientId) {
      const row = await db.one<Record<string, unknown>>(
        "SELECT * FROM oidc_consents WHERE user_id = $1 AND client_id = $2",
        [userId, clientId],
      );
      return row && readConsent(row);
    },
    async grantConsent(userId, clientId, scope, at) {
      await db.run(
        `INSERT INTO oidc_consents (user_id, client_id, scope, granted_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, granted_at = excluded.granted_at`,
        [userId, clientId, scope, at],
      );
    },
    async listConsents(userId) {
      const rows = await db.all<Record<string, unknown>>(
        "SELECT * FROM oidc_consents WHERE user_id = $1 ORDER BY granted_at DESC",
        [userId],
      );
      return rows.map(readConsent);
    },
    purgeAuthorizationCodes(before, limit) {
      return db.run(
        "DELETE FROM oidc_codes WHERE code_hash IN (SELECT code_hash FROM oidc_codes WHERE expires_at < $1 LIMIT $2)",
        [before, limit],
      );
    },
  };
}
