// The registry of OAuth clients (relying parties): their RFC 7591 metadata,
// checked once here for every way in (the /clients resource, the CLI,
// dynamic registration); their secrets, random (256 bits), shown once and
// stored only as SHA-256; the check of a presented id and secret; and the
// redirect-URI rule (exact match; a native (public) app's loopback redirect
// on any port, RFC 8252 section 7.3, and only a native app's: RFC 9700
// section 2.1); where logout tokens may go, checked with the outbound
// guard's rules whenever a backchannel_logout_uri is registered or changed
// (backchannel-uri.ts); and that no client's resources name the service's
// own first-party audience. Lookups are answered from a short, bounded
// cache that every change made through this registry empties at once; a
// change made by another instance (or the CLI) is seen within CACHE_TTL_MS.

import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import { CONSOLE_CLIENT_ID } from "../admin/console-id.ts";
import { primaryColourProblem } from "../branding/colour.ts";
import { HttpError } from "../errors.ts";
import type { Resolve } from "../outbound/guard.ts";
import type { AuditEntry, ClientAuthMethod, ClientMetadataRecord, ClientRecord, UserStore } from "../store/store.ts";
import { type BackchannelSettings, backchannelUriProblem } from "./backchannel-uri.ts";

export const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"] as const;
/** RFC 8628's grant type (issue 36): a device without a browser (a CLI, a TV) signs a person in. */
export const DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";
export const GRANT_TYPES = [
  "authorization_code",
  "refresh_token",
  "client_credentials",
  DEVICE_CODE_GRANT_TYPE,
] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const RESPONSE_TYPES = ["code"] as const;
/** The scopes a client gets when its registration names none and it signs users in. */
export const DEFAULT_USER_SCOPE = "openid profile email";
/** How long the previous secret may keep working after a rotation, at most: 30 days. */
export const MAX_SECRET_GRACE_SECONDS = 30 * 86_400;
export const MAX_REDIRECT_URIS = 20;
export const MAX_RESOURCES = 20;
export const MAX_URI_LENGTH = 2000;
/** How long a client read from the store is believed: the bound on seeing another instance's change. */
export const CACHE_TTL_MS = 2000;
const CACHE_MAX_ENTRIES = 1000;

/** A client as the rest of the service sees it: its metadata, never its secrets' hashes. */
export type Client = Omit<ClientRecord, "secretHash" | "previousSecretHash"> & {
  /** Has a secret (client_secret_basic or client_secret_post); false for a public client (`none`). */
  confidential: boolean;
};

/**
 * RFC 7591's metadata as sent (snake_case), before its defaults and checks. The routes' schemas check
 * the types; clientMetadata() checks the rest.
 */
export interface ClientMetadataInput {
  client_name?: string;
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  grant_types?: string[];
  response_types?: string[];
  token_endpoint_auth_method?: string;
  scope?: string;
  backchannel_logout_uri?: string | null;
  first_party?: boolean;
  resources?: string[];
  resource_server?: boolean;
  // Issue 36, PAR (RFC 9126 section 6).
  require_pushed_authorization_requests?: boolean;
  /** RFC 9449 section 5.2: every token request of the client must carry a DPoP proof. */
  dpop_bound_access_tokens?: boolean;
  /** Issue 37: the colour of its sign-in and consent pages, #RRGGBB, checked for WCAG AA contrast. */
  brand_color?: string | null;
}

/**
 * Metadata the registry refuses: 422 {"detail"} on the /clients resource; RFC 7591 section 3.2.2's
 * 400 with `error` (this code) at the registration endpoint.
 */
export class InvalidClientMetadata extends HttpError {
  readonly code: "invalid_redirect_uri" | "invalid_client_metadata";
  constructor(code: "invalid_redirect_uri" | "invalid_client_metadata", detail: string) {
    super(422, detail);
    this.name = "InvalidClientMetadata";
    this.code = code;
  }
}

const invalid = (detail: string) => new InvalidClientMetadata("invalid_client_metadata", detail);
const invalidUri = (detail: string) => new InvalidClientMetadata("invalid_redirect_uri", detail);

/** RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
/**
 * A loopback redirect of a native app (RFC 8252 section 7.3): http, an IP literal, a port written as
 * a number without leading zeros (its range checked apart), then the path and query.
 */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::([1-9]\d{0,4}))?([/?].*)?$/;
const MAX_PORT = 65535;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Whether `token` is one scope token (RFC 6749 section 3.3). */
export const isScopeToken = (token: string) => SCOPE_TOKEN.test(token);

/** The scope tokens of a space-separated scope string, or throws. */
export function scopeTokens(scope: string): string[] {
  const tokens = scope.split(" ").filter((token) => token !== "");
  if (!tokens.every(isScopeToken)) throw invalid("scope: not a list of scope tokens");
  return [...new Set(tokens)];
}

/**
 * Whether `uri` may be registered as a place to send the browser back to. https; http only on a
 * loopback host (a native app's listener, or a developer's machine); a private-use scheme in reverse
 * domain-name form (RFC 8252 section 7.1: `com.example.app:/callback`) only for a public client. Never
 * a fragment (RFC 6749 section 3.1.2), credentials, or a wildcard: matching is exact.
 */
function checkRedirectUri(field: string, uri: string, publicClient: boolean): void {
  if (uri.length > MAX_URI_LENGTH) throw invalidUri(`${field}: longer than ${MAX_URI_LENGTH} characters`);
  const port = writtenPort(uri);
  if (port !== undefined && !(port >= 1 && port <= MAX_PORT))
    throw invalidUri(`${field}: the port must be between 1 and ${MAX_PORT}`);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalidUri(`${field}: not an absolute URI`);
  }
  if (uri.includes("#")) throw invalidUri(`${field}: must not have a fragment`);
  if (uri.includes("*")) throw invalidUri(`${field}: wildcards are not allowed (redirect URIs match exactly)`);
  if (url.username !== "" || url.password !== "") throw invalidUri(`${field}: must not carry credentials`);
  const scheme = url.protocol.slice(0, -1);
  if (scheme === "https") return;
  if (scheme === "http") {
    if (LOOPBACK_HOSTS.has(url.hostname)) return;
    throw invalidUri(`${field}: http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https`);
  }
  if (scheme.includes(".") && publicClient) return;
  throw invalidUri(
    `${field}: must be https, http on a loopback host, or (for a public client) a private-use scheme such as ` +
      "com.example.app:/callback",
  );
}

/** The port written in an absolute URI's authority (`scheme://[userinfo@]host:port`), as a number. */
function writtenPort(uri: string): number | undefined {
  const port = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?(?:\[[^\]/?#]*\]|[^/?#:]*):(\d+)(?=[/?#]|$)/i.exec(uri)?.[1];
  return port === undefined ? undefined : Number(port);
}

/**
 * Whether the browser can be sent to `uri`: an absolute URI whose port, if written, is 1-65535.
 * Registration refuses any other; this also guards what an older release may have stored.
 */
export function usableRedirectUri(uri: string): boolean {
  const port = writtenPort(uri);
  if (port !== undefined && !(port >= 1 && port <= MAX_PORT)) return false;
  try {
    return new URL(uri).port !== "0";
  } catch {
    return false;
  }
}

/**
 * Whether a redirect URI presented in an authorization request is one of the client's: the same
 * string, character for character; or, for a native app (a public client, token_endpoint_auth_method
 * `none`) and a registered loopback redirect (http, 127.0.0.1 or [::1]), the same string but for the
 * port, which the app picks when it starts listening (RFC 8252 section 7.3). A confidential (web)
 * client's loopback redirect matches exactly, port included (RFC 9700 section 2.1). Nothing is
 * normalised: a URI that differs in any other way is not the client's.
 */
export function matchRedirectUri(
  client: Pick<ClientMetadataRecord, "redirectUris" | "tokenEndpointAuthMethod"> & { id?: string },
  presented: string,
): boolean {
  if (client.redirectUris.includes(presented)) return true;
  if (client.tokenEndpointAuthMethod !== "none") return false;
  // Issue 35: the admin console's codes become tokens that open the admin API; only its own exact
  // callback may receive them, never a program listening on another loopback port.
  if (client.id === CONSOLE_CLIENT_ID) return false;
  const asked = LOOPBACK.exec(presented);
  if (asked === null || Number(asked[2] ?? "80") > MAX_PORT) return false;
  return client.redirectUris.some((uri) => {
    const known = LOOPBACK.exec(uri);
    return known !== null && known[1] === asked[1] && (known[3] ?? "") === (asked[3] ?? "");
  });
}

/**
 * The metadata to store: RFC 7591's defaults applied (grant_types authorization_code, response_types
 * code when the client signs users in, token_endpoint_auth_method client_secret_basic) and its rules
 * checked (OpenID Connect Registration section 2): a public client (`none`) only with
 * authorization_code (and refresh_token), client_credentials only for a confidential one, response
 * types that agree with the grant types, redirect URIs for authorization_code.
 */
export function clientMetadata(input: ClientMetadataInput): ClientMetadataRecord {
  const grantTypes = [...new Set(input.grant_types ?? ["authorization_code"])];
  for (const grant of grantTypes) {
    if (!(GRANT_TYPES as readonly string[]).includes(grant))
      throw invalid(`grant_types: '${grant}' is not supported (${GRANT_TYPES.join(", ")})`);
  }
  if (grantTypes.length === 0) throw invalid("grant_types: at least one is required");
  const signsUsersIn = grantTypes.includes("authorization_code");
  // Issue 36: the device grant signs users in too, without a redirect (no redirect URI, no response type).
  const signsDevicesIn = grantTypes.includes(DEVICE_CODE_GRANT_TYPE);
  if (grantTypes.includes("refresh_token") && !signsUsersIn && !signsDevicesIn)
    throw invalid(`grant_types: refresh_token only comes with authorization_code or ${DEVICE_CODE_GRANT_TYPE}`);
  const responseTypes = [...new Set(input.response_types ?? (signsUsersIn ? ["code"] : []))];
  for (const type of responseTypes) {
    if (!(RESPONSE_TYPES as readonly string[]).includes(type))
      throw invalid(`response_types: '${type}' is not supported (only 'code')`);
  }
  if (signsUsersIn !== responseTypes.includes("code"))
    throw invalid("response_types: 'code' goes with the grant type authorization_code, and only with it");
  const method = input.token_endpoint_auth_method ?? "client_secret_basic";
  if (!(CLIENT_AUTH_METHODS as readonly string[]).includes(method))
    throw invalid(`token_endpoint_auth_method: '${method}' is not supported (${CLIENT_AUTH_METHODS.join(", ")})`);
  const publicClient = method === "none";
  if (publicClient && grantTypes.includes("client_credentials"))
    throw invalid("grant_types: client_credentials needs a confidential client (a secret), not 'none'");
  if (publicClient && !signsUsersIn && !signsDevicesIn)
    throw invalid(
      `token_endpoint_auth_method: a public client ('none') must use authorization_code or ${DEVICE_CODE_GRANT_TYPE}`,
    );
  const redirectUris = [...new Set(input.redirect_uris ?? [])];
  const postLogoutRedirectUris = [...new Set(input.post_logout_redirect_uris ?? [])];
  if (signsUsersIn && redirectUris.length === 0)
    throw invalidUri("redirect_uris: at least one is required with authorization_code");
  for (const [field, list] of [
    ["redirect_uris", redirectUris],
    ["post_logout_redirect_uris", postLogoutRedirectUris],
  ] as const) {
    if (list.length > MAX_REDIRECT_URIS) throw invalidUri(`${field}: at most ${MAX_REDIRECT_URIS}`);
    for (const uri of list) checkRedirectUri(field, uri, publicClient);
  }
  const backchannelLogoutUri = input.backchannel_logout_uri ?? null;
  if (backchannelLogoutUri !== null) checkBackchannelUri(backchannelLogoutUri);
  const resources = [...new Set(input.resources ?? [])];
  if (resources.length > MAX_RESOURCES) throw invalid(`resources: at most ${MAX_RESOURCES}`);
  for (const resource of resources) checkResource(resource);
  const name = (input.client_name ?? "").trim();
  if (name === "") throw invalid("client_name: required");
  return {
    name,
    redirectUris,
    postLogoutRedirectUris,
    grantTypes,
    responseTypes,
    tokenEndpointAuthMethod: method as ClientAuthMethod,
    scope: scopeTokens(input.scope ?? (signsUsersIn || signsDevicesIn ? DEFAULT_USER_SCOPE : "")).join(" "),
    backchannelLogoutUri,
    firstParty: input.first_party ?? false,
    resources,
    resourceServer: input.resource_server ?? false,
    requirePushedAuthorizationRequests: input.require_pushed_authorization_requests ?? false,
    dpopBoundAccessTokens: input.dpop_bound_access_tokens ?? false,
    brandColor: checkBrandColor(input.brand_color ?? null),
  };
}

/**
 * RFC 8707 section 2: a resource indicator is an absolute URI without a fragment. Like a redirect URI,
 * https, or http on a loopback host (a developer's machine); the resource server checks that a token's
 * aud names it.
 */
function checkResource(uri: string): void {
  if (uri.length > MAX_URI_LENGTH) throw invalid(`resources: longer than ${MAX_URI_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalid(`resources: '${uri.slice(0, 100)}' is not an absolute URI`);
  }
  if (uri.includes("#")) throw invalid("resources: must not have a fragment");
  if (url.username !== "" || url.password !== "") throw invalid("resources: must not carry credentials");
  if (url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname))) return;
  throw invalid("resources: must be https, or http on a loopback host (127.0.0.1, [::1], localhost)");
}

/** Issue 37: a colour its pages' white button text and links stay readable on (WCAG AA), as the brand's. */
function checkBrandColor(colour: string | null): string | null {
  if (colour === null) return null;
  const problem = primaryColourProblem("brand_color", colour);
  if (problem !== undefined) throw invalid(problem);
  return colour.toLowerCase();
}

/** OpenID Connect Back-Channel Logout section 2.2: an absolute http(s) URI without a fragment. */
function checkBackchannelUri(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw invalid("backchannel_logout_uri: not an absolute URI");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw invalid("backchannel_logout_uri: must be http or https");
  if (uri.includes("#")) throw invalid("backchannel_logout_uri: must not have a fragment");
  if (uri.length > MAX_URI_LENGTH) throw invalid(`backchannel_logout_uri: longer than ${MAX_URI_LENGTH} characters`);
}

/** The metadata of a stored client as RFC 7591 input, so a partial change can be checked as a whole. */
export function metadataInputOf(client: ClientMetadataRecord): Required<ClientMetadataInput> {
  return {
    client_name: client.name,
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    grant_types: client.grantTypes,
    response_types: client.responseTypes,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    scope: client.scope,
    backchannel_logout_uri: client.backchannelLogoutUri,
    first_party: client.firstParty,
    resources: client.resources,
    resource_server: client.resourceServer,
    require_pushed_authorization_requests: client.requirePushedAuthorizationRequests,
    dpop_bound_access_tokens: client.dpopBoundAccessTokens,
    brand_color: client.brandColor,
  };
}

/** A new client secret: 256 random bits, base64url (43 characters). */
export function newClientSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * SHA-256, base64url. A secret of 256 random bits needs no slow hash (nobody can guess it, so there is
 * nothing to slow down), and client authentication runs on every client's token request.
 */
export function hashClientSecret(secret: string): string {
  // One call, no Hash object: client authentication runs on every introspection too.
  return hash("sha256", secret, "base64url");
}

/** Compared whatever happens, so an unknown client costs what a known one does. */
const NO_SECRET = hashClientSecret("no client: compare against something all the same");

function sameHash(expected: string, presented: string): boolean {
  const a = Buffer.from(expected, "base64url");
  const b = Buffer.from(presented, "base64url");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** What a client presented at an endpoint that authenticates clients (see client-auth.ts). */
export type PresentedClient =
  | { method: "client_secret_basic" | "client_secret_post"; clientId: string; secret: string }
  | { method: "none"; clientId: string };

/** Who did a change: an admin (its user id) or a dynamic registration (null), from an address. */
export interface Actor {
  userId: string | null;
  clientAddress: string | null;
}

export interface ClientRegistry {
  /** The client with this client_id, if any. */
  find(clientId: string): Promise<Client | undefined>;
  /**
   * The client, when the id names one registered for this authentication method and, for a
   * confidential client, the secret is its current one or its previous one within the grace period
   * of the last rotation; undefined otherwise (the caller answers invalid_client).
   */
  authenticate(presented: PresentedClient): Promise<Client | undefined>;
  /** Registers a client; its secret (confidential clients) is in the answer only. */
  register(metadata: ClientMetadataRecord, by: Actor, registeredBy?: "admin" | "dynamic"): Promise<Registered>;
  /** Replaces the metadata with `metadata` (already checked); undefined when no such client. */
  update(clientId: string, metadata: ClientMetadataRecord, by: Actor): Promise<Client | undefined>;
  /** A new secret; the old one works `graceSeconds` more. Undefined when no such confidential client. */
  rotateSecret(clientId: string, graceSeconds: number, by: Actor): Promise<Registered | undefined>;
  remove(clientId: string, by: Actor): Promise<boolean>;
  /** Clients in creation order, a page at a time. */
  list(page: { limit: number; after?: string }): Promise<Client[]>;
  /**
   * The origins (scheme, host, port) of the https and http redirect URIs of every public client:
   * browser apps that may call the token and revocation endpoints cross-origin.
   */
  publicOrigins(): Promise<ReadonlySet<string>>;
}

export interface Registered {
  client: Client;
  /** Shown once: at registration (confidential clients) and at rotation. */
  secret?: string;
}

/**
 * Each record's Client, made once: the registry keeps a record object until the client changes, and
 * the copy of some thirty fields on every authentication was a measurable part of a client_credentials
 * grant (issue 34). A Client is never changed after it is made.
 */
const clientOfRecord = new WeakMap<ClientRecord, Client>();

export function toClient(record: ClientRecord): Client {
  let client = clientOfRecord.get(record);
  if (client === undefined) {
    const { secretHash, previousSecretHash: _previous, ...metadata } = record;
    client = { ...metadata, confidential: secretHash !== null };
    clientOfRecord.set(record, client);
  }
  return client;
}

function event(outcome: string, by: Actor): AuditEntry {
  return { type: "oauth_client", outcome, clientAddress: by.clientAddress, userId: by.userId };
}

/**
 * What the registry checks changes against besides the metadata's own rules: the
 * backchannel_logout_uri with WEBHOOK_REFUSE_PRIVATE_ADDRESSES (on unless given: the strict rule) and,
 * for tests, the DNS the outbound guard asks; and the audiences of the service's own first-party tokens
 * (the issuer, TOKEN_AUDIENCE), never a client's resource, or a client's token would pass for a user's
 * at a resource server.
 */
export interface RegistryRules {
  settings: BackchannelSettings;
  resolve?: Resolve;
  reservedAudiences?: () => readonly string[];
}

export function createClientRegistry(
  store: UserStore,
  clock: () => number = Date.now,
  onAuthentication?: (method: string, result: "success" | "failure") => void,
  rules: RegistryRules = { settings: { refusePrivateAddresses: true } },
): ClientRegistry {
  /** Refuses a resource that names the service's own first-party audience. */
  function checkReserved(metadata: ClientMetadataRecord): void {
    const reserved = new Set((rules.reservedAudiences?.() ?? []).map((audience) => audience.replace(/\/$/, "")));
    const taken = metadata.resources.find((resource) => reserved.has(resource.replace(/\/$/, "")));
    if (taken !== undefined)
      throw invalid(`resources: '${taken}' is this service's own audience (its first-party tokens'), not a client's`);
  }
  const cache = new Map<string, { record: ClientRecord; until: number }>();
  let origins: { set: ReadonlySet<string>; until: number } | undefined;
  // Moves on every change: a read that began before a change must not store what it read.
  let generation = 0;
  const changed = (clientId: string) => {
    generation += 1;
    cache.delete(clientId);
    origins = undefined;
  };

  async function record(clientId: string): Promise<ClientRecord | undefined> {
    const now = clock();
    const hit = cache.get(clientId);
    if (hit !== undefined && hit.until > now) return hit.record;
    const before = generation;
    const found = await store.findClient(clientId);
    if (found === undefined) {
      cache.delete(clientId);
      return undefined;
    }
    if (before === generation) {
      if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
      cache.set(clientId, { record: found, until: now + CACHE_TTL_MS });
    }
    return found;
  }

  /** Refuses a backchannel_logout_uri its client may not have (422; 400 at the registration endpoint). */
  async function checkBackchannel(uri: string | null, registeredBy: ClientRecord["registeredBy"]): Promise<void> {
    if (uri === null) return;
    const problem = await backchannelUriProblem(uri, rules.settings, registeredBy, rules.resolve);
    if (problem !== undefined) throw invalid(problem);
  }

  /** The client `presented` authenticates as, or undefined. */
  async function check(presented: PresentedClient): Promise<Client | undefined> {
    const found = await record(presented.clientId);
    if (presented.method === "none") {
      return found?.tokenEndpointAuthMethod === "none" ? toClient(found) : undefined;
    }
    const hash = hashClientSecret(presented.secret);
    const current = sameHash(found?.secretHash ?? NO_SECRET, hash);
    const previous =
      found?.previousSecretHash != null &&
      found.previousSecretExpiresAt !== null &&
      Date.parse(found.previousSecretExpiresAt) > clock() &&
      sameHash(found.previousSecretHash, hash);
    if (found === undefined || found.tokenEndpointAuthMethod !== presented.method) return undefined;
    return current || previous ? toClient(found) : undefined;
  }

  return {
    async find(clientId) {
      const found = await record(clientId);
      return found && toClient(found);
    },

    async authenticate(presented) {
      const client = await check(presented);
      onAuthentication?.(presented.method, client === undefined ? "failure" : "success");
      return client;
    },
    async register(metadata, by, registeredBy = "admin") {
      checkReserved(metadata);
      await checkBackchannel(metadata.backchannelLogoutUri, registeredBy);
      const secret = metadata.tokenEndpointAuthMethod === "none" ? undefined : newClientSecret();
      const created = await store.createClient(
        { ...metadata, registeredBy, secretHash: secret === undefined ? null : hashClientSecret(secret) },
        [event(registeredBy === "admin" ? "created" : "registered", by)],
      );
      changed(created.id);
      return { client: toClient(created), ...(secret === undefined ? {} : { secret }) };
    },

    async update(clientId, metadata, by) {
      checkReserved(metadata);
      const current = await record(clientId);
      if (current === undefined) return undefined;
      // An unchanged URI is not checked again here (a change of setting must not block other edits); every
      // delivery checks it.
      if (metadata.backchannelLogoutUri !== current.backchannelLogoutUri)
        await checkBackchannel(metadata.backchannelLogoutUri, current.registeredBy);
      const updated = await store.updateClient(clientId, metadata, [event("updated", by)]);
      changed(clientId);
      return updated && toClient(updated);
    },

    async rotateSecret(clientId, graceSeconds, by) {
      const secret = newClientSecret();
      const until = graceSeconds > 0 ? new Date(clock() + graceSeconds * 1000).toISOString() : null;
      const rotated = await store.rotateClientSecret(clientId, hashClientSecret(secret), until, [
        event("secret_rotated", by),
      ]);
      changed(clientId);
      return rotated && { client: toClient(rotated), secret };
    },

    async remove(clientId, by) {
      const removed = await store.removeClient(clientId, [event("deleted", by)]);
      changed(clientId);
      return removed;
    },

    async list(page) {
      return (await store.listClients(page)).map(toClient);
    },

    async publicOrigins() {
      const now = clock();
      if (origins !== undefined && origins.until > now) return origins.set;
      const before = generation;
      const set = new Set<string>();
      let after: string | undefined;
      for (;;) {
        const page = await store.listClients({ limit: 500, publicOnly: true, ...(after ? { after } : {}) });
        for (const client of page) {
          for (const uri of client.redirectUris) {
            if (uri.startsWith("https://") || uri.startsWith("http://")) set.add(new URL(uri).origin);
          }
        }
        if (page.length < 500) break;
        after = page.at(-1)?.id;
      }
      if (before === generation) origins = { set, until: now + CACHE_TTL_MS };
      return set;
    },
  };
}
