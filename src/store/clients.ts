// OAuth clients and what OpenID Connect keeps of them (store.ts): the
// registry (RFC 7591 metadata, secrets' hashes), authorization codes (spent by
// one conditional UPDATE, so of two instances redeeming one code at once
// exactly one wins and the other sees a replay), consents, and the sessions a
// client's code grant started. removeClient and revokeConsent end the
// client's sessions in their transaction, as every ending of sessions does
// (sessions.ts).
import type { AuditEntry } from "./audit.ts";

/** How a client authenticates at the token endpoint (RFC 7591 section 2); `none`: a public client. */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post" | "none";

/** A registered OAuth client (relying party): its RFC 7591 metadata and its secrets' hashes. */
export interface ClientRecord {
  /** The client_id: a UUIDv7. */
  id: string;
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  responseTypes: string[];
  tokenEndpointAuthMethod: ClientAuthMethod;
  /** Space-separated scopes the client may ask for. */
  scope: string;
  backchannelLogoutUri: string | null;
  /** The service's own app: no consent screen. */
  firstParty: boolean;
  /**
   * RFC 8707 resource indicators (absolute URIs) the client's access tokens may name as their
   * audience: the resource servers it may call. Set by admins only.
   */
  resources: string[];
  /** A resource server: may introspect every token (RFC 7662 section 4), as INTROSPECTION_CLIENTS do. Admins only. */
  resourceServer: boolean;
  // Issue 36, PAR: only pushed authorization requests (RFC 9126 section 5), set by an admin or the registrant.
  requirePushedAuthorizationRequests: boolean;
  /** RFC 9449 section 5.2 (issue 36): the client must send a DPoP proof with every token request. */
  dpopBoundAccessTokens: boolean;
  /** Issue 37: the colour of its sign-in and consent pages (#rrggbb, WCAG AA-checked); null: the service's. */
  brandColor: string | null;
  /** By an admin (/clients, the CLI) or through dynamic registration (RFC 7591). */
  registeredBy: "admin" | "dynamic";
  /** SHA-256 of the secret, base64url; null for a public client. */
  secretHash: string | null;
  /** The secret before the last rotation, valid until previousSecretExpiresAt. */
  previousSecretHash: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type ClientMetadataRecord = Pick<
  ClientRecord,
  | "name"
  | "redirectUris"
  | "postLogoutRedirectUris"
  | "grantTypes"
  | "responseTypes"
  | "tokenEndpointAuthMethod"
  | "scope"
  | "backchannelLogoutUri"
  | "firstParty"
  | "resources"
  | "resourceServer"
  | "requirePushedAuthorizationRequests"
  | "dpopBoundAccessTokens"
  | "brandColor"
>;

export type NewClient = Omit<ClientMetadataRecord, "brandColor"> &
  Pick<ClientRecord, "registeredBy" | "secretHash"> & {
    /** Issue 37: none unless given. */
    brandColor?: string | null;
    /** Issue 35: a fixed client_id (the admin console's, registered once by every instance); else a new UUIDv7. */
    id?: string;
  };

/** An authorization code as stored (its hash only), bound to everything the token request must match. */
export interface AuthorizationCodeRecord {
  codeHash: string;
  clientId: string;
  userId: string;
  /** The browser session the user approved in; the code dies with it. */
  browserSessionId: string;
  redirectUri: string;
  /** The PKCE S256 challenge. */
  codeChallenge: string;
  nonce: string | null;
  /** Space-separated granted scopes. */
  scope: string;
  createdAt: string;
  expiresAt: string;
  redeemedAt: string | null;
  /** The session the redemption started, revoked when the code is presented again. */
  issuedSessionId: string | null;
  /** RFC 9449 section 10: the thumbprint of the DPoP key its redemption must prove (dpop_jkt), if asked. */
  dpopJkt?: string | null;
}

export type NewAuthorizationCode = Omit<AuthorizationCodeRecord, "redeemedAt" | "issuedSessionId">;

export type CodeRedemption =
  | { outcome: "redeemed"; code: AuthorizationCodeRecord }
  /** Presented before: what its first redemption issued, to revoke. */
  | { outcome: "replayed"; code: AuthorizationCodeRecord }
  | { outcome: "unknown" };

/** A session started by a client's code grant: its refresh token is that client's only. */
export interface ClientSessionRecord {
  sessionId: string;
  clientId: string;
  scope: string;
  browserSessionId: string;
}

export interface ConsentRecord {
  clientId: string;
  /** Space-separated scopes granted so far. */
  scope: string;
  grantedAt: string;
}

/** OAuth clients, and OpenID Connect's (issue 24) codes, consents and client-bound sessions. */
export interface ClientVerbs {
  /** Inserts a client (a new id) with its events. */
  createClient(client: NewClient, events?: readonly AuditEntry[]): Promise<ClientRecord>;
  findClient(id: string): Promise<ClientRecord | undefined>;
  /** Clients in id order (creation order), at most `limit`; `publicOnly`: those without a secret. */
  listClients(query: { limit: number; after?: string; publicOnly?: boolean }): Promise<ClientRecord[]>;
  /** Sets the metadata given (with its events); undefined when no such client. */
  updateClient(
    id: string,
    changes: Partial<ClientMetadataRecord>,
    events?: readonly AuditEntry[],
  ): Promise<ClientRecord | undefined>;
  /**
   * A confidential client's new secret: the current one becomes the previous one, valid until
   * `previousExpiresAt` (null: it stops at once). Undefined when no such client or it has no secret.
   */
  rotateClientSecret(
    id: string,
    secretHash: string,
    previousExpiresAt: string | null,
    events?: readonly AuditEntry[],
  ): Promise<ClientRecord | undefined>;
  /**
   * Deletes (with its events), forgetting its consents and ending its sessions (each a
   * session_revocation with outcome client_deleted, and its logout token), in one transaction;
   * false when no such client.
   */
  removeClient(id: string, events?: readonly AuditEntry[]): Promise<boolean>;
  // OpenID Connect: codes, consents and client-bound sessions
  /** Stores a new code with its audit events (code_issued), in one transaction. */
  saveAuthorizationCode(code: NewAuthorizationCode, events?: readonly AuditEntry[]): Promise<void>;
  /** Spends the code at once, whatever the caller then finds wrong with it: a code works once. */
  redeemAuthorizationCode(codeHash: string, at: string): Promise<CodeRedemption>;
  findClientSession(sessionId: string): Promise<ClientSessionRecord | undefined>;
  findConsent(userId: string, clientId: string): Promise<ConsentRecord | undefined>;
  /** Remembers the scopes (replacing the earlier grant's, which the caller merged in). */
  grantConsent(userId: string, clientId: string, scope: string, at: string): Promise<void>;
  listConsents(userId: string): Promise<ConsentRecord[]>;
  /**
   * Forgets the grant and ends the client's sessions of this user (each a session_revocation with
   * outcome consent_revoked, and its logout token), with `events`, in one transaction; false when
   * there was no grant.
   */
  revokeConsent(userId: string, clientId: string, at: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /** Deletes up to `limit` codes that expired before `before`. */
  purgeAuthorizationCodes(before: string, limit: number): Promise<number>;
}
