// Versioned schema changes, one list for both backends: each migration is
// written once, with the column types and the few steps that differ taken
// from its dialect's table below, so that `sqlite` and `postgres` hold the
// SQL each backend's runner applies (byte for byte what earlier releases
// applied). A runner applies the versions it has not recorded in
// schema_migrations, in order, under a lock (SQLite's write lock,
// PostgreSQL's advisory lock) so that several instances starting at once
// apply each version exactly once. A migration is never edited once
// released: add a new one.

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

/**
 * What differs between the dialects' DDL: column types; STRICT tables, so that SQLite refuses a
 * value of the wrong type as PostgreSQL does; booleans (SQLite stores 0 or 1, checked); and the
 * steps written differently in each dialect, marked with only(): the one place the SQL differs.
 */
const SQLITE = {
  id: "TEXT",
  text: "TEXT",
  time: "TEXT",
  integer: "INTEGER",
  bigint: "INTEGER",
  strict: " STRICT",
  bool: (column: string, byDefault: boolean) =>
    `${column} INTEGER NOT NULL DEFAULT ${Number(byDefault)} CHECK (${column} IN (0, 1))`,
  only: (step: { sqlite: string; postgres: string }) => step.sqlite,
};
type Types = typeof SQLITE;

const POSTGRES: Types = {
  id: "uuid",
  text: "text",
  time: "timestamptz",
  integer: "integer",
  bigint: "bigint",
  strict: "",
  bool: (column, byDefault) => `${column} boolean NOT NULL DEFAULT ${byDefault}`,
  only: (step) => step.postgres,
};

function migration(version: number, name: string, sql: (t: Types) => string): Migration {
  return { version, name, sqlite: sql(SQLITE), postgres: sql(POSTGRES) };
}

export const migrations: readonly Migration[] = [
  migration(
    1,
    "create users",
    (t) => `
      CREATE TABLE users (
        id ${t.id} PRIMARY KEY,
        email ${t.text} NOT NULL UNIQUE,
        hashed_password ${t.text} NOT NULL,
        full_name ${t.text},
        ${t.bool("is_active", true)},
        ${t.bool("is_admin", false)},
        created_at ${t.time} NOT NULL,
        updated_at ${t.time} NOT NULL
      )${t.strict};
      CREATE INDEX users_active_admins ON users (is_admin, is_active);
    `,
  ),
  migration(
    2,
    "sessions and refresh tokens",
    (t) => `
      ALTER TABLE users ADD COLUMN credentials_changed_at ${t.time};
      CREATE TABLE sessions (
        id ${t.id} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at ${t.time} NOT NULL,
        last_used_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        revoked_at ${t.time},
        client_address ${t.text},
        user_agent ${t.text}
      )${t.strict};
      CREATE INDEX sessions_by_user ON sessions (user_id);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);
      CREATE TABLE refresh_tokens (
        token_hash ${t.text} PRIMARY KEY,
        session_id ${t.id} NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time}
      )${t.strict};
      CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);
      CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    `,
  ),
  migration(
    3,
    "audit events",
    (t) => `
      CREATE TABLE audit_events (
        id ${t.id} PRIMARY KEY,
        user_id ${t.id},
        type ${t.text} NOT NULL,
        outcome ${t.text} NOT NULL,
        client_address ${t.text},
        created_at ${t.time} NOT NULL
      )${t.strict};
      CREATE INDEX audit_events_by_user ON audit_events (user_id, id);
      CREATE INDEX audit_events_by_time ON audit_events (created_at);
    `,
  ),
  // A refresh token now names its session and generation, so only the current generation's hash is
  // kept (on the session row) and any older one is still recognised as a reuse: refresh_tokens,
  // which kept every spent token until its session expired, goes. Tokens of the old format cannot
  // be carried over (they do not name their session), so sessions open at the upgrade end with it.
  // Every user gets a random credential stamp that access tokens must carry (see guard.ts).
  migration(
    4,
    "credential stamps; one refresh token per session",
    (t) => `
      ALTER TABLE users ADD COLUMN credential_stamp ${t.text} NOT NULL DEFAULT '';
      UPDATE users SET credential_stamp = ${t.only({ sqlite: "lower(hex(randomblob(9)))", postgres: "substr(md5(gen_random_uuid()::text), 1, 16)" })};
      ALTER TABLE sessions ADD COLUMN refresh_token_hash ${t.text};
      ALTER TABLE sessions ADD COLUMN refresh_generation ${t.integer} NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN refresh_expires_at ${t.time} NOT NULL DEFAULT ${t.only({ sqlite: "''", postgres: "now()" })};
      ALTER TABLE sessions ADD COLUMN rotated_at ${t.time};
      UPDATE sessions SET revoked_at = ${t.only({ sqlite: "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", postgres: "now()" })} WHERE revoked_at IS NULL;
      DROP TABLE refresh_tokens;
      CREATE INDEX sessions_by_user_newest ON sessions (user_id, id);
      DROP INDEX sessions_by_user;
    `,
  ),
  // Version 4 is taken by the sessions-storage change (issue 15); this is version 5.
  migration(
    5,
    "e-mail verification, account tokens and the mail outbox",
    (t) => `
      ALTER TABLE users ADD COLUMN email_verified_at ${t.time};
      CREATE TABLE account_tokens (
        token_hash ${t.text} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        purpose ${t.text} NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
        email ${t.text} NOT NULL,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time}
      )${t.strict};
      CREATE INDEX account_tokens_by_user ON account_tokens (user_id, purpose);
      CREATE INDEX account_tokens_by_expiry ON account_tokens (expires_at);
      CREATE TABLE mail_outbox (
        id ${t.id} PRIMARY KEY,
        kind ${t.text} NOT NULL,
        recipient ${t.text} NOT NULL,
        user_id ${t.id},
        payload ${t.text} NOT NULL,
        message_id ${t.text} NOT NULL,
        status ${t.text} NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
        attempts ${t.integer} NOT NULL DEFAULT 0,
        next_attempt_at ${t.time} NOT NULL,
        lease_owner ${t.text},
        lease_until ${t.time},
        last_error ${t.text},
        created_at ${t.time} NOT NULL,
        sent_at ${t.time}
      )${t.strict};
      CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at);
    `,
  ),
  // Secrets are sealed (AES-256-GCM under MFA_ENCRYPTION_KEY, see auth/mfa-keys.ts); recovery codes and
  // challenge tokens are stored only as hashes. last_step is the RFC 6238 time step of the last code
  // accepted: a code for that step or an earlier one is refused (no replay). sessions.amr is a JSON
  // array (RFC 8176); NULL for sessions from before means ["pwd"].
  migration(
    6,
    "second factors: TOTP, recovery codes, second-factor challenges, session amr",
    (t) => `
      CREATE TABLE totp_factors (
        user_id ${t.id} PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        sealed_secret ${t.text} NOT NULL,
        created_at ${t.time} NOT NULL,
        confirmed_at ${t.time},
        last_step ${t.integer}
      )${t.strict};
      CREATE TABLE recovery_codes (
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash ${t.text} NOT NULL,
        created_at ${t.time} NOT NULL,
        used_at ${t.time},
        PRIMARY KEY (user_id, code_hash)
      )${t.strict};
      CREATE TABLE mfa_challenges (
        token_hash ${t.text} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time},
        failures ${t.integer} NOT NULL DEFAULT 0
      )${t.strict};
      CREATE INDEX mfa_challenges_by_user ON mfa_challenges (user_id);
      CREATE INDEX mfa_challenges_by_expiry ON mfa_challenges (expires_at);
      ALTER TABLE sessions ADD COLUMN amr ${t.text};
    `,
  ),
  // A passkey's API id is a UUID; its credential id (base64url, up to 1023 bytes) is what the
  // authenticator names it by, unique across users. The public key is COSE, base64url. The
  // challenges of the ceremonies are stored as SHA-256 only, spent by deleting them, and expire
  // after minutes, so any instance can finish a ceremony another one began.
  migration(
    7,
    "passkeys (WebAuthn credentials) and their ceremony challenges",
    (t) => `
      CREATE TABLE webauthn_credentials (
        id ${t.id} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        credential_id ${t.text} NOT NULL UNIQUE,
        public_key ${t.text} NOT NULL,
        counter ${t.bigint} NOT NULL DEFAULT 0,
        transports ${t.text} NOT NULL DEFAULT '[]',
        name ${t.text} NOT NULL,
        device_type ${t.text} NOT NULL,
        ${t.bool("backed_up", false)},
        aaguid ${t.text},
        created_at ${t.time} NOT NULL,
        last_used_at ${t.time}
      )${t.strict};
      CREATE INDEX webauthn_credentials_by_user ON webauthn_credentials (user_id, id);
      CREATE TABLE webauthn_challenges (
        id ${t.id} PRIMARY KEY,
        challenge_hash ${t.text} NOT NULL UNIQUE,
        purpose ${t.text} NOT NULL CHECK (purpose IN ('registration', 'login', 'second_factor')),
        user_id ${t.id} REFERENCES users (id) ON DELETE CASCADE,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL
      )${t.strict};
      CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges (expires_at);
    `,
  ),
  // A login asks for the user's live sessions beyond the cap, and the sessions list shows the
  // live ones. Through (user_id, id) both walked every session the user ever had that
  // housekeeping had not yet deleted (revoked ones stay up to ten minutes): at 10,000 of them a
  // login spent 4.8 ms of the event loop on that walk. This index holds live sessions only.
  // sessions_by_user_newest stays for the cascade when a user is deleted. IF NOT EXISTS: on a
  // large PostgreSQL sessions table the index can be built beforehand without blocking writes
  // (CREATE INDEX CONCURRENTLY, docs/deployment.md); this migration then only records itself.
  migration(
    8,
    "an index of each user's live sessions",
    () => `
      CREATE INDEX IF NOT EXISTS sessions_live_by_user ON sessions (user_id, id) WHERE revoked_at IS NULL;
    `,
  ),
  // Every login wrote this index and no query read it: housekeeping's purge asks for sessions past
  // any of three ends (expires_at, refresh_expires_at, revoked_at), an OR that one column's index
  // cannot answer, so both databases read the table for it anyway (test/session-index.test.ts).
  migration(
    9,
    "no index of sessions by expiry",
    () => `
      DROP INDEX IF EXISTS sessions_by_expiry;
    `,
  ),
  // Webhooks (issue 26): endpoints, their outbox (one row per event and endpoint, claimed with a lease
  // like mail_outbox; the payload is the exact body, so every retry sends the same bytes) and the log of
  // attempts that admins read. Secrets are sealed (webhooks/secrets.ts): they key an HMAC, so they cannot
  // be hashed. event_types is a JSON array of names; user_id has no foreign key, because user.deleted
  // outlives its user. The index by (endpoint_id, user_id, event_id) answers "is an earlier event of this
  // user still pending for this endpoint?" (delivery in order per user).
  migration(
    10,
    "webhook endpoints, their outbox and delivery log",
    (t) => `
      CREATE TABLE webhook_endpoints (
        id ${t.id} PRIMARY KEY,
        url ${t.text} NOT NULL,
        description ${t.text},
        event_types ${t.text} NOT NULL,
        ${t.bool("enabled", true)},
        disabled_reason ${t.text},
        sealed_secret ${t.text} NOT NULL,
        previous_sealed_secret ${t.text},
        previous_secret_until ${t.time},
        created_at ${t.time} NOT NULL,
        updated_at ${t.time} NOT NULL
      )${t.strict};
      CREATE TABLE webhook_messages (
        endpoint_id ${t.id} NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id ${t.id} NOT NULL,
        user_id ${t.id} NOT NULL,
        type ${t.text} NOT NULL,
        payload ${t.text} NOT NULL,
        status ${t.text} NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts ${t.integer} NOT NULL DEFAULT 0,
        next_attempt_at ${t.time} NOT NULL,
        lease_owner ${t.text},
        lease_until ${t.time},
        last_error ${t.text},
        created_at ${t.time} NOT NULL,
        delivered_at ${t.time},
        PRIMARY KEY (endpoint_id, event_id)
      )${t.strict};
      CREATE INDEX webhook_messages_due ON webhook_messages (status, next_attempt_at);
      CREATE INDEX webhook_messages_by_user ON webhook_messages (endpoint_id, user_id, event_id);
      CREATE TABLE webhook_attempts (
        id ${t.id} PRIMARY KEY,
        endpoint_id ${t.id} NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_id ${t.id} NOT NULL,
        type ${t.text} NOT NULL,
        attempt ${t.integer} NOT NULL,
        status_code ${t.integer},
        duration_ms ${t.integer} NOT NULL,
        error ${t.text},
        created_at ${t.time} NOT NULL
      )${t.strict};
      CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id);
      CREATE INDEX webhook_attempts_by_time ON webhook_attempts (created_at);
    `,
  ),
  // Security notifications (issue 26): the devices each user has signed in from, so that a sign-in
  // from a new one is told once. A device is a keyed hash (auth/devices.ts), never a raw User-Agent
  // or cookie; the primary key is the one index a login reads.
  migration(
    20,
    "known devices for new-device notifications",
    (t) => `
      CREATE TABLE known_devices (
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        device_hash ${t.text} NOT NULL,
        first_seen_at ${t.time} NOT NULL,
        last_seen_at ${t.time} NOT NULL,
        PRIMARY KEY (user_id, device_hash)
      )${t.strict};
    `,
  ),
  // OAuth clients (issue 24, part A: the client registry). One row per relying party, with its RFC 7591
  // metadata; the lists are JSON arrays of text. Secrets are random (256 bits) and stored only as
  // SHA-256 (a fast hash is right for a high-entropy secret, and client authentication is a hot
  // path); the previous secret keeps working until previous_secret_expires_at after a rotation.
  // A public client (token_endpoint_auth_method 'none') has no secret at all.
  migration(
    30,
    "OAuth clients",
    (t) => `
      CREATE TABLE oauth_clients (
        id ${t.id} PRIMARY KEY,
        name ${t.text} NOT NULL,
        redirect_uris ${t.text} NOT NULL DEFAULT '[]',
        post_logout_redirect_uris ${t.text} NOT NULL DEFAULT '[]',
        grant_types ${t.text} NOT NULL,
        response_types ${t.text} NOT NULL,
        token_endpoint_auth_method ${t.text} NOT NULL
          CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post', 'none')),
        scope ${t.text} NOT NULL,
        backchannel_logout_uri ${t.text},
        ${t.bool("first_party", false)},
        registered_by ${t.text} NOT NULL CHECK (registered_by IN ('admin', 'dynamic')),
        secret_hash ${t.text},
        previous_secret_hash ${t.text},
        previous_secret_expires_at ${t.time},
        created_at ${t.time} NOT NULL,
        updated_at ${t.time} NOT NULL
      )${t.strict};
    `,
  ),
  // OpenID Connect, the flow (issue 24, part B). Authorization codes are stored as SHA-256 only, live
  // 60 seconds and are spent by setting redeemed_at, so any instance can redeem a code another one
  // issued; issued_session_id names the session a redemption started, which a second presentation
  // of the code revokes. Consents are remembered per user and client, with the scopes granted. A
  // session started by a client's code grant is bound to that client (its refresh token is the
  // client's alone) and to the browser session it came from (logout ends both). client_id has no
  // foreign key: the registry is another feature's table.
  migration(
    40,
    "openid connect: authorization codes, consents, client sessions",
    (t) => `
      CREATE TABLE oidc_codes (
        code_hash ${t.text} PRIMARY KEY,
        client_id ${t.text} NOT NULL,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        browser_session_id ${t.id} NOT NULL,
        redirect_uri ${t.text} NOT NULL,
        code_challenge ${t.text} NOT NULL,
        nonce ${t.text},
        scope ${t.text} NOT NULL,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        redeemed_at ${t.time},
        issued_session_id ${t.id}
      )${t.strict};
      CREATE INDEX oidc_codes_by_expiry ON oidc_codes (expires_at);
      CREATE TABLE oidc_consents (
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        client_id ${t.text} NOT NULL,
        scope ${t.text} NOT NULL,
        granted_at ${t.time} NOT NULL,
        PRIMARY KEY (user_id, client_id)
      )${t.strict};
      CREATE TABLE oidc_client_sessions (
        session_id ${t.id} PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        client_id ${t.text} NOT NULL,
        scope ${t.text} NOT NULL,
        browser_session_id ${t.id} NOT NULL
      )${t.strict};
      CREATE INDEX oidc_client_sessions_by_browser_session ON oidc_client_sessions (browser_session_id);
    `,
  ),
  // Sign-in with upstream providers (issue 25): identities keyed by (issuer, subject), never by e-mail;
  // the pending sign-ins of the redirect to a provider (state, nonce and PKCE verifier kept here, so
  // that the callback may reach any instance; spent once; bound to the browser by a cookie whose
  // SHA-256 is kept); and the one-use tickets that hand a finished upstream sign-in to the sign-in page
  // (or a link still to be proved with the account's password). Upstream tokens, when kept, are sealed.
  // A second-factor challenge remembers the first factor (pwd, or fed after an upstream sign-in), so
  // that the session's amr says how the user signed in.
  migration(
    50,
    "upstream identities, pending upstream sign-ins, upstream tickets",
    (t) => `
      CREATE TABLE upstream_identities (
        id ${t.id} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        provider ${t.text} NOT NULL,
        issuer ${t.text} NOT NULL,
        subject ${t.text} NOT NULL,
        email ${t.text},
        sealed_tokens ${t.text},
        created_at ${t.time} NOT NULL,
        last_used_at ${t.time} NOT NULL,
        UNIQUE (issuer, subject)
      )${t.strict};
      CREATE INDEX upstream_identities_by_user ON upstream_identities (user_id);
      CREATE TABLE upstream_pending (
        state_hash ${t.text} PRIMARY KEY,
        provider ${t.text} NOT NULL,
        binding_hash ${t.text} NOT NULL,
        nonce ${t.text} NOT NULL,
        code_verifier ${t.text} NOT NULL,
        continue_to ${t.text},
        link_user_id ${t.id} REFERENCES users (id) ON DELETE CASCADE,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time}
      )${t.strict};
      CREATE INDEX upstream_pending_by_expiry ON upstream_pending (expires_at);
      CREATE TABLE upstream_tickets (
        ticket_hash ${t.text} PRIMARY KEY,
        kind ${t.text} NOT NULL CHECK (kind IN ('sign_in', 'link')),
        binding_hash ${t.text} NOT NULL,
        user_id ${t.id} REFERENCES users (id) ON DELETE CASCADE,
        provider ${t.text} NOT NULL,
        issuer ${t.text} NOT NULL,
        subject ${t.text} NOT NULL,
        email ${t.text},
        sealed_tokens ${t.text},
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time}
      )${t.strict};
      CREATE INDEX upstream_tickets_by_expiry ON upstream_tickets (expires_at);
      ALTER TABLE mfa_challenges ADD COLUMN first_factor ${t.text} NOT NULL DEFAULT 'pwd';
    `,
  ),
  // Back-channel logout (issue 24): the outbox of logout tokens owed to relying parties, claimed with a
  // lease like mail_outbox. A row names what the token will say (the client, the user as sub, the
  // browser session as sid) and where it goes (the client's backchannel_logout_uri when the session
  // ended, so a client deleted since is still told); the token itself is signed at each attempt, since
  // it expires within minutes. At most one pending logout per client and sid (the partial unique
  // index): sessions that end together owe one. user_id has no foreign key: a deleted user's logouts
  // outlive the user.
  migration(
    60,
    "back-channel logout outbox",
    (t) => `
      CREATE TABLE backchannel_logouts (
        id ${t.id} PRIMARY KEY,
        client_id ${t.text} NOT NULL,
        user_id ${t.id} NOT NULL,
        sid ${t.text} NOT NULL,
        uri ${t.text} NOT NULL,
        status ${t.text} NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
        attempts ${t.integer} NOT NULL DEFAULT 0,
        next_attempt_at ${t.time} NOT NULL,
        lease_owner ${t.text},
        lease_until ${t.time},
        last_error ${t.text},
        created_at ${t.time} NOT NULL,
        sent_at ${t.time}
      )${t.strict};
      CREATE UNIQUE INDEX backchannel_logouts_pending ON backchannel_logouts (client_id, sid) WHERE status = 'pending';
      CREATE INDEX backchannel_logouts_due ON backchannel_logouts (status, next_attempt_at);
    `,
  ),
  // An upstream sign-in's link to an existing account proved by a link mailed to the account's address
  // (issue 25): the link's token stored as its SHA-256, one use, short-lived, bound to the browser that
  // started the sign-in (the binding cookie's hash) and carrying the identity it will link.
  migration(
    70,
    "upstream links proved by mail",
    (t) => `
      CREATE TABLE upstream_link_mails (
        token_hash ${t.text} PRIMARY KEY,
        user_id ${t.id} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        binding_hash ${t.text} NOT NULL,
        provider ${t.text} NOT NULL,
        issuer ${t.text} NOT NULL,
        subject ${t.text} NOT NULL,
        email ${t.text} NOT NULL,
        sealed_tokens ${t.text},
        continue_to ${t.text},
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        spent_at ${t.time}
      )${t.strict};
      CREATE INDEX upstream_link_mails_by_expiry ON upstream_link_mails (expires_at);
    `,
  ),
  // Issue 32: a back-channel logout remembers how its client was registered, so that the delivery
  // refuses private addresses to a dynamically registered client whatever WEBHOOK_REFUSE_PRIVATE_ADDRESSES
  // says, also after the client is deleted. Rows queued before this migration take their client's
  // value; a row whose client is gone, or a row written without the column, counts as dynamic: the
  // stricter rule.
  migration(
    80,
    "back-channel logouts know a dynamically registered client",
    (t) => `
      ALTER TABLE backchannel_logouts ADD COLUMN registered_by ${t.text} NOT NULL DEFAULT 'dynamic'
        CHECK (registered_by IN ('admin', 'dynamic'));
      UPDATE backchannel_logouts SET registered_by = 'admin'
        WHERE client_id IN (SELECT CAST(id AS TEXT) FROM oauth_clients WHERE registered_by = 'admin');
    `,
  ),
  // Audiences and introspection rights of OAuth clients (issue 32): the RFC 8707 resource indicators
  // an admin lets a client's tokens name (a JSON list), and whether the client is a resource server
  // that may introspect every token. Both are the admin's to set; existing clients get neither.
  migration(
    90,
    "client resources and resource servers",
    (t) => `
      ALTER TABLE oauth_clients ADD COLUMN resources ${t.text} NOT NULL DEFAULT '[]';
      ALTER TABLE oauth_clients ADD COLUMN ${t.bool("resource_server", false)};
    `,
  ),
  // Issue 36, part 1: the device authorization grant (RFC 8628). One row per request, keyed by the
  // SHA-256 of its device code (the poll's one read), with the SHA-256 of its user code unique (the
  // /device page finds it; a drawn code already taken is drawn again). Its state changes by conditional
  // UPDATEs, so any instance may approve it and any other redeem it, once. The last poll and the
  // interval are kept for slow_down across instances. client_id has no foreign key, as oidc_codes.
  migration(
    100,
    "device authorization grant",
    (t) => `
      CREATE TABLE device_authorizations (
        device_code_hash ${t.text} PRIMARY KEY,
        user_code_hash ${t.text} NOT NULL UNIQUE,
        client_id ${t.text} NOT NULL,
        scope ${t.text} NOT NULL,
        status ${t.text} NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
        user_id ${t.id} REFERENCES users (id) ON DELETE CASCADE,
        browser_session_id ${t.id},
        interval_seconds ${t.integer} NOT NULL,
        last_polled_at ${t.time},
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        decided_at ${t.time},
        redeemed_at ${t.time}
      )${t.strict};
      CREATE INDEX device_authorizations_by_expiry ON device_authorizations (expires_at);
    `,
  ),
  // Issue 36, DPoP (RFC 9449): a session begun with a DPoP proof by a public client (or the spec's
  // first-party apps) is bound to the proof key's thumbprint, and its refresh tokens need a proof by
  // that key; a client may be registered to require DPoP (RFC 9449 section 5.2's metadata); an
  // authorization code asked for with dpop_jkt is redeemed only with a proof by that key (section 10).
  migration(
    110,
    "dpop: refresh tokens bound to a key, clients that require dpop",
    (t) => `
      ALTER TABLE sessions ADD COLUMN dpop_jkt ${t.text};
      ALTER TABLE oidc_codes ADD COLUMN dpop_jkt ${t.text};
      ALTER TABLE oauth_clients ADD COLUMN ${t.bool("dpop_bound_access_tokens", false)};
    `,
  ),
  // Issue 36, pushed authorization requests (RFC 9126): a pushed request is kept under the SHA-256 of
  // its request_uri's random part, with its parameters (JSON), for 60 seconds and one use (used_at);
  // a client may be registered to require them.
  migration(
    120,
    "pushed authorization requests",
    (t) => `
      CREATE TABLE pushed_authorization_requests (
        reference_hash ${t.text} PRIMARY KEY,
        client_id ${t.text} NOT NULL,
        parameters ${t.text} NOT NULL,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        used_at ${t.time}
      )${t.strict};
      CREATE INDEX pushed_authorization_requests_by_expiry ON pushed_authorization_requests (expires_at);
      ALTER TABLE oauth_clients ADD COLUMN ${t.bool("require_pushed_authorization_requests", false)};
    `,
  ),
  // Issue 35, part 1 (the admin users API): an audit event names the admin who acted on someone
  // else's account (actor_id; null when the user, the service or the command line acted; no foreign
  // key, so the trail outlives the admin's account). The users list's e-mail prefix search is a range
  // in byte order: SQLite's unique index on email is already in that order; PostgreSQL's follows the
  // database's collation, so it gets an expression index in the "C" collation (addresses are stored
  // lower-cased: lower() changes nothing but makes it an expression, whose statistics ANALYZE keeps,
  // so the planner sees how few users a prefix finds; src/store/db.ts, bytewiseEmail).
  migration(
    130,
    "audit events' actor, users by e-mail prefix",
    (t) => `
      ALTER TABLE audit_events ADD COLUMN actor_id ${t.id};
      ${t.only({ sqlite: "", postgres: 'CREATE INDEX IF NOT EXISTS users_email_bytewise ON users ((lower(email) COLLATE "C"));' })}
    `,
  ),
  // Issue 35, the service-wide admin API (GET /events, GET /admin/overview): the log filtered by type
  // or by client address, newest first, and the overview's sign-ins (type login, by id range).
  migration(
    140,
    "audit log filters",
    () => `
      CREATE INDEX audit_events_by_type_newest ON audit_events (type, id);
      CREATE INDEX audit_events_by_address ON audit_events (client_address, id);
    `,
  ),
  // Issue 37, languages: the account's saved language (one of src/i18n/locales.ts's LOCALES, set by
  // PATCH /me or an admin; null when the user never chose), which the pages and every mail follow.
  migration(
    150,
    "users' saved language",
    (t) => `
      ALTER TABLE users ADD COLUMN locale ${t.text};
    `,
  ),
  // Issue 37, branding: the service's brand (owner 'service') and each client's (owner: its id), the
  // fields an admin set (null: the setting, or the service's brand, holds), and the logo as base64 text
  // with its type and the prefix of its SHA-256 that names it in its URL (found by it: the index).
  migration(
    160,
    "brands",
    (t) => `
      CREATE TABLE brands (
        owner ${t.text} PRIMARY KEY,
        product_name ${t.text},
        primary_color ${t.text},
        support_email ${t.text},
        terms_url ${t.text},
        privacy_url ${t.text},
        logo ${t.text},
        logo_type ${t.text},
        logo_hash ${t.text},
        updated_at ${t.time} NOT NULL
      )${t.strict};
      CREATE INDEX brands_by_logo ON brands (logo_hash);
    `,
  ),
  // Issue 37: a client's own colour on the sign-in and consent pages of its requests (#rrggbb; null: the
  // service's). Its logo is a row of brands (migration 160).
  migration(165, "clients' brand colour", (t) => `ALTER TABLE oauth_clients ADD COLUMN brand_color ${t.text};`),
  // Issue 37, sign-in by mail without a password: one row per attempt, its link token, code and browser
  // binding kept as hashes only, with its expiry, the wrong codes counted and the one use (used_at).
  migration(
    170,
    "mail sign-in attempts",
    (t) => `
      CREATE TABLE mail_sign_ins (
        id ${t.text} PRIMARY KEY,
        email ${t.text} NOT NULL,
        binding_hash ${t.text} NOT NULL,
        token_hash ${t.text} NOT NULL,
        code_hash ${t.text} NOT NULL,
        wrong_codes ${t.integer} NOT NULL DEFAULT 0,
        created_at ${t.time} NOT NULL,
        expires_at ${t.time} NOT NULL,
        used_at ${t.time}
      )${t.strict};
      CREATE INDEX mail_sign_ins_by_expiry ON mail_sign_ins (expires_at);
    `,
  ),
];

/** The versions still to apply, in order. */
export function pending(applied: ReadonlySet<number>): Migration[] {
  return migrations.filter((migration) => !applied.has(migration.version)).sort((a, b) => a.version - b.version);
}
