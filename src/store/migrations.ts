// Versioned schema changes, one list for both backends: each migration
// carries its SQL for SQLite and for PostgreSQL, and each backend's runner
// applies the versions it has not recorded in schema_migrations, in order,
// under a lock (SQLite's write lock, PostgreSQL's advisory lock) so that
// several instances starting at once apply each version exactly once.
// A migration is never edited once released: add a new one.

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "create users",
    sqlite: `
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        hashed_password TEXT NOT NULL,
        full_name TEXT,
        is_active INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
        is_admin INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      ) STRICT;
      CREATE INDEX users_active_admins ON users (is_admin, is_active);
    `,
    postgres: `
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email text NOT NULL UNIQUE,
        hashed_password text NOT NULL,
        full_name text,
        is_active boolean NOT NULL DEFAULT true,
        is_admin boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE INDEX users_active_admins ON users (is_admin, is_active);
    `,
  },
  {
    version: 2,
    name: "sessions and refresh tokens",
    sqlite: `
      ALTER TABLE users ADD COLUMN credentials_changed_at TEXT;
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        last_used_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        revoked_at TEXT,
        client_address TEXT,
        user_agent TEXT
      ) STRICT;
      CREATE INDEX sessions_by_user ON sessions (user_id);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);
      CREATE TABLE refresh_tokens (
        token_hash TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        spent_at TEXT
      ) STRICT;
      CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);
      CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    `,
    postgres: `
      ALTER TABLE users ADD COLUMN credentials_changed_at timestamptz;
      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        client_address text,
        user_agent text
      );
      CREATE INDEX sessions_by_user ON sessions (user_id);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);
      CREATE TABLE refresh_tokens (
        token_hash text PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        spent_at timestamptz
      );
      CREATE INDEX refresh_tokens_by_session ON refresh_tokens (session_id);
      CREATE INDEX refresh_tokens_by_expiry ON refresh_tokens (expires_at);
    `,
  },
  {
    version: 3,
    name: "audit events",
    sqlite: `
      CREATE TABLE audit_events (
        id TEXT PRIMARY KEY,
        user_id TEXT,
        type TEXT NOT NULL,
        outcome TEXT NOT NULL,
        client_address TEXT,
        created_at TEXT NOT NULL
      ) STRICT;
      CREATE INDEX audit_events_by_user ON audit_events (user_id, id);
      CREATE INDEX audit_events_by_time ON audit_events (created_at);
    `,
    postgres: `
      CREATE TABLE audit_events (
        id uuid PRIMARY KEY,
        user_id uuid,
        type text NOT NULL,
        outcome text NOT NULL,
        client_address text,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX audit_events_by_user ON audit_events (user_id, id);
      CREATE INDEX audit_events_by_time ON audit_events (created_at);
    `,
  },
  {
    version: 4,
    name: "credential stamps; one refresh token per session",
    // A refresh token now names its session and generation, so only the current generation's hash is
    // kept (on the session row) and any older one is still recognised as a reuse: refresh_tokens,
    // which kept every spent token until its session expired, goes. Tokens of the old format cannot
    // be carried over (they do not name their session), so sessions open at the upgrade end with it.
    // Every user gets a random credential stamp that access tokens must carry (see guard.ts).
    sqlite: `
      ALTER TABLE users ADD COLUMN credential_stamp TEXT NOT NULL DEFAULT '';
      UPDATE users SET credential_stamp = lower(hex(randomblob(9)));
      ALTER TABLE sessions ADD COLUMN refresh_token_hash TEXT;
      ALTER TABLE sessions ADD COLUMN refresh_generation INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN refresh_expires_at TEXT NOT NULL DEFAULT '';
      ALTER TABLE sessions ADD COLUMN rotated_at TEXT;
      UPDATE sessions SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE revoked_at IS NULL;
      DROP TABLE refresh_tokens;
      CREATE INDEX sessions_by_user_newest ON sessions (user_id, id);
      DROP INDEX sessions_by_user;
    `,
    postgres: `
      ALTER TABLE users ADD COLUMN credential_stamp text NOT NULL DEFAULT '';
      UPDATE users SET credential_stamp = substr(md5(gen_random_uuid()::text), 1, 16);
      ALTER TABLE sessions ADD COLUMN refresh_token_hash text;
      ALTER TABLE sessions ADD COLUMN refresh_generation integer NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN refresh_expires_at timestamptz NOT NULL DEFAULT now();
      ALTER TABLE sessions ADD COLUMN rotated_at timestamptz;
      UPDATE sessions SET revoked_at = now() WHERE revoked_at IS NULL;
      DROP TABLE refresh_tokens;
      CREATE INDEX sessions_by_user_newest ON sessions (user_id, id);
      DROP INDEX sessions_by_user;
    `,
  },
  // Version 4 is taken by the sessions-storage change (issue 15); this is version 5.
  {
    version: 5,
    name: "e-mail verification, account tokens and the mail outbox",
    sqlite: `
      ALTER TABLE users ADD COLUMN email_verified_at TEXT;
      CREATE TABLE account_tokens (
        token_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        purpose TEXT NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
        email TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        spent_at TEXT
      ) STRICT;
      CREATE INDEX account_tokens_by_user ON account_tokens (user_id, purpose);
      CREATE INDEX account_tokens_by_expiry ON account_tokens (expires_at);
      CREATE TABLE mail_outbox (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        recipient TEXT NOT NULL,
        user_id TEXT,
        payload TEXT NOT NULL,
        message_id TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TEXT NOT NULL,
        lease_owner TEXT,
        lease_until TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        sent_at TEXT
      ) STRICT;
      CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at);
    `,
    postgres: `
      ALTER TABLE users ADD COLUMN email_verified_at timestamptz;
      CREATE TABLE account_tokens (
        token_hash text PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        purpose text NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
        email text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        spent_at timestamptz
      );
      CREATE INDEX account_tokens_by_user ON account_tokens (user_id, purpose);
      CREATE INDEX account_tokens_by_expiry ON account_tokens (expires_at);
      CREATE TABLE mail_outbox (
        id uuid PRIMARY KEY,
        kind text NOT NULL,
        recipient text NOT NULL,
        user_id uuid,
        payload text NOT NULL,
        message_id text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL,
        lease_owner text,
        lease_until timestamptz,
        last_error text,
        created_at timestamptz NOT NULL,
        sent_at timestamptz
      );
      CREATE INDEX mail_outbox_due ON mail_outbox (status, next_attempt_at);
    `,
  },
  {
    version: 6,
    name: "second factors: TOTP, recovery codes, second-factor challenges, session amr",
    // Secrets are sealed (AES-256-GCM under MFA_ENCRYPTION_KEY, see auth/mfa-keys.ts); recovery codes and
    // challenge tokens are stored only as hashes. last_step is the RFC 6238 time step of the last code
    // accepted: a code for that step or an earlier one is refused (no replay). sessions.amr is a JSON
    // array (RFC 8176); NULL for sessions from before means ["pwd"].
    sqlite: `
      CREATE TABLE totp_factors (
        user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        sealed_secret TEXT NOT NULL,
        created_at TEXT NOT NULL,
        confirmed_at TEXT,
        last_step INTEGER
      ) STRICT;
      CREATE TABLE recovery_codes (
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        used_at TEXT,
        PRIMARY KEY (user_id, code_hash)
      ) STRICT;
      CREATE TABLE mfa_challenges (
        token_hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        spent_at TEXT,
        failures INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX mfa_challenges_by_user ON mfa_challenges (user_id);
      CREATE INDEX mfa_challenges_by_expiry ON mfa_challenges (expires_at);
      ALTER TABLE sessions ADD COLUMN amr TEXT;
    `,
    postgres: `
      CREATE TABLE totp_factors (
        user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
        sealed_secret text NOT NULL,
        created_at timestamptz NOT NULL,
        confirmed_at timestamptz,
        last_step integer
      );
      CREATE TABLE recovery_codes (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash text NOT NULL,
        created_at timestamptz NOT NULL,
        used_at timestamptz,
        PRIMARY KEY (user_id, code_hash)
      );
      CREATE TABLE mfa_challenges (
        token_hash text PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        spent_at timestamptz,
        failures integer NOT NULL DEFAULT 0
      );
      CREATE INDEX mfa_challenges_by_user ON mfa_challenges (user_id);
      CREATE INDEX mfa_challenges_by_expiry ON mfa_challenges (expires_at);
      ALTER TABLE sessions ADD COLUMN amr text;
    `,
  },
  {
    version: 7,
    name: "passkeys (WebAuthn credentials) and their ceremony challenges",
    // A passkey's API id is a UUID; its credential id (base64url, up to 1023 bytes) is what the
    // authenticator names it by, unique across users. The public key is COSE, base64url. The
    // challenges of the ceremonies are stored as SHA-256 only, spent by deleting them, and expire
    // after minutes, so any instance can finish a ceremony another one began.
    sqlite: `
      CREATE TABLE webauthn_credentials (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        credential_id TEXT NOT NULL UNIQUE,
        public_key TEXT NOT NULL,
        counter INTEGER NOT NULL DEFAULT 0,
        transports TEXT NOT NULL DEFAULT '[]',
        name TEXT NOT NULL,
        device_type TEXT NOT NULL,
        backed_up INTEGER NOT NULL DEFAULT 0 CHECK (backed_up IN (0, 1)),
        aaguid TEXT,
        created_at TEXT NOT NULL,
        last_used_at TEXT
      ) STRICT;
      CREATE INDEX webauthn_credentials_by_user ON webauthn_credentials (user_id, id);
      CREATE TABLE webauthn_challenges (
        id TEXT PRIMARY KEY,
        challenge_hash TEXT NOT NULL UNIQUE,
        purpose TEXT NOT NULL CHECK (purpose IN ('registration', 'login', 'second_factor')),
        user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      ) STRICT;
      CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges (expires_at);
    `,
    postgres: `
      CREATE TABLE webauthn_credentials (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        credential_id text NOT NULL UNIQUE,
        public_key text NOT NULL,
        counter bigint NOT NULL DEFAULT 0,
        transports text NOT NULL DEFAULT '[]',
        name text NOT NULL,
        device_type text NOT NULL,
        backed_up boolean NOT NULL DEFAULT false,
        aaguid text,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz
      );
      CREATE INDEX webauthn_credentials_by_user ON webauthn_credentials (user_id, id);
      CREATE TABLE webauthn_challenges (
        id uuid PRIMARY KEY,
        challenge_hash text NOT NULL UNIQUE,
        purpose text NOT NULL CHECK (purpose IN ('registration', 'login', 'second_factor')),
        user_id uuid REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX webauthn_challenges_by_expiry ON webauthn_challenges (expires_at);
    `,
  },
  {
    version: 8,
    name: "an index of each user's live sessions",
    // A login asks for the user's live sessions beyond the cap, and the sessions list shows the
    // live ones. Through (user_id, id) both walked every session the user ever had that
    // housekeeping had not yet deleted (revoked ones stay up to ten minutes): at 10,000 of them a
    // login spent 4.8 ms of the event loop on that walk. This index holds live sessions only.
    // sessions_by_user_newest stays for the cascade when a user is deleted. IF NOT EXISTS: on a
    // large PostgreSQL sessions table the index can be built beforehand without blocking writes
    // (CREATE INDEX CONCURRENTLY, docs/deployment.md); this migration then only records itself.
    sqlite: `
      CREATE INDEX IF NOT EXISTS sessions_live_by_user ON sessions (user_id, id) WHERE revoked_at IS NULL;
    `,
    postgres: `
      CREATE INDEX IF NOT EXISTS sessions_live_by_user ON sessions (user_id, id) WHERE revoked_at IS NULL;
    `,
  },
  {
    version: 9,
    name: "no index of sessions by expiry",
    // Every login wrote this index and no query read it: housekeeping's purge asks for sessions past
    // any of three ends (expires_at, refresh_expires_at, revoked_at), an OR that one column's index
    // cannot answer, so both databases read the table for it anyway (test/session-index.test.ts).
    sqlite: `
      DROP INDEX IF EXISTS sessions_by_expiry;
    `,
    postgres: `
      DROP INDEX IF EXISTS sessions_by_expiry;
    `,
  },
];

/** The versions still to apply, in order. */
export function pending(applied: ReadonlySet<number>): Migration[] {
  return migrations.filter((migration) => !applied.has(migration.version)).sort((a, b) => a.version - b.version);
}
