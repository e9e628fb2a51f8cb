// All settings of the service, read from an environment object once at
// start-up and validated here. A bad value throws ConfigError naming the
// setting; server.ts prints that one line and exits. Nothing else in the
// code reads process.env. This module also owns the generated signing-secret
// file used when SIGNING_SECRET is unset on the embedded SQLite default, and
// the generated private-key file used when an asymmetric SIGNING_ALGORITHM is
// chosen without SIGNING_KEY_FILE; both are owner-only.
import { randomBytes } from "node:crypto";
import { closeSync, fstatSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { DEFAULT_HASH_QUEUE_LIMIT } from "./auth/hash-capacity.ts";
import {
  type AsymmetricAlgorithm,
  generatePrivateKeyPem,
  parsePrivateKey,
  SIGNING_ALGORITHMS,
  type SigningAlgorithm,
} from "./auth/keys.ts";
import { createPasswordPolicy } from "./auth/password-policy.ts";
import { ConfigError } from "./errors.ts";
import { GRANT_TYPES, type GrantType, isScopeToken } from "./oidc/clients.ts";
import { DEFAULT_DYNAMIC_GRANT_TYPES, DEFAULT_DYNAMIC_SCOPES } from "./oidc/registration-policy.ts";
import { NOTICE_KINDS, type NoticeKind } from "./store/store.ts";
import { parseUpstreamConfig, type UpstreamConfig } from "./upstream/settings.ts";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** RFC 7518 section 3.2: an HS256 key has at least 256 bits. */
export const MIN_SECRET_BYTES = 32;
export const DEFAULT_DATABASE_URL = "sqlite:data/users.db";
export const SECRET_FILE_NAME = "signing-secret";
export const MFA_KEY_FILE_NAME = "mfa-encryption-key";

export type DatabaseLocation =
  | { kind: "sqlite"; path: string; synchronous: "normal" | "full" }
  | { kind: "postgres"; url: string; poolSize: number; timeoutMs: number };

export interface Config {
  host: string;
  port: number;
  logLevel: LogLevel;
  database: DatabaseLocation;
  /** HS256 (the spec's default), or EdDSA / ES256 with private keys. */
  signingAlgorithm: SigningAlgorithm;
  /** HS256 keys: the first signs, every one verifies (rotation). Empty under EdDSA and ES256. */
  signingSecrets: string[];
  /** EdDSA / ES256 private keys as PEM: the first signs, every one verifies and is published. Empty under HS256. */
  signingKeys: string[];
  /**
   * OIDC_SIGNING_KEY_FILE: RSA private keys (PEM) that sign ID tokens (RS256), the first signs, all are
   * published. Empty or absent: OpenID Connect is off (PostgreSQL without the setting).
   */
  oidcSigningKeys?: string[];
  /**
   * Where the service is reached from outside (absolute http(s) URL, no trailing slash): the tokens'
   * issuer and the base of every link in a mail. Unset: the listen address.
   */
  publicUrl?: string;
  /**
   * The tokens' iss, required of every token: TOKEN_ISSUER, else PUBLIC_URL. Unset: tokens name the
   * listen address, and iss is not compared (it differs between instances and across ports).
   */
  tokenIssuer?: string;
  /** The tokens' aud, required of every token; unset means the declared issuer (none: not compared). */
  tokenAudience?: string;
  /** Resource servers that may call POST /auth/introspect with HTTP Basic (besides admins). */
  introspectionClients: IntrospectionClient[];
  /**
   * OAUTH_ERROR_FIELDS: the token endpoints' errors also carry RFC 6749's `error` and
   * `error_description`, for OAuth client libraries. Off by default: the spec's error body is `detail` alone.
   */
  oauthErrorFields: boolean;
  /** Clock skew tolerated when checking exp, nbf and iat. */
  clockLeewaySeconds: number;
  argon2: Argon2Params;
  /**
   * PASSWORD_HASH_QUEUE_LIMIT: hashes and verifies that may wait for a core; beyond it a route that
   * hashes answers 503 with Retry-After at once (src/auth/passwords.ts).
   */
  passwordHashQueueLimit: number;
  rateLimit: RateLimitConfig;
  /** Fastify's trustProxy: whether X-Forwarded-For names the client address. */
  trustProxy: boolean | number | string[];
  /** Shared state (rate-limit counters) in Redis when set; in the process otherwise. */
  redis?: { url: string; timeoutMs: number; prefix: string };
  sessions: { idleSeconds: number; absoluteSeconds: number; reuseGraceSeconds: number; maxPerUser: number };
  /** Audit events older than this are pruned. */
  auditRetentionDays: number;
  /** The token check's user cache (src/auth/user-cache.ts); ttlMs 0 turns it off. */
  userCache: { ttlMs: number; maxEntries: number };
  /** Prometheus metrics on their own address; off when unset, so they are never public by accident. */
  metrics?: { host: string; port: number };
  /** How long SIGTERM waits for requests in flight before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** Slow clients, drain and connection storms: see ConnectionConfig. */
  connections: ConnectionConfig;
  /** Browser origins allowed to call the API cross-origin; empty means CORS off. */
  corsOrigins: string[];
  /** Anyone may POST /users; when false only admins create users. */
  signupOpen: boolean;
  /** Created (or promoted) at start-up when no active admin exists. */
  firstAdmin?: { email: string; password: string };
  mail: MailConfig;
  accountRecovery: AccountRecoveryConfig;
  /** NIST SP 800-63B 3.1.1.2: refuse passwords found on the shipped list of common and breached ones. */
  passwordListCheck: boolean;
  /** SECURITY_NOTIFICATIONS: the security notification mails that go out (mail/notices.ts); all by default. */
  securityNotifications: ReadonlySet<NoticeKind>;
  /** Second factors (issue 14). */
  mfa: MfaConfig;
  /** Sign-in with Google, Microsoft, GitHub or any OpenID Connect provider (issue 25): src/upstream/settings.ts. */
  upstream?: UpstreamConfig;
  /**
   * DYNAMIC_CLIENT_REGISTRATION (RFC 7591), off by default; when on, REGISTRATION_ACCESS_TOKEN is the
   * initial access token a registrant must send as a bearer token, and DYNAMIC_CLIENT_GRANT_TYPES and
   * DYNAMIC_CLIENT_SCOPES are what a registrant may ask for (oidc/registration-policy.ts).
   */
  dynamicRegistration?: { initialAccessToken: string; grantTypes: readonly GrantType[]; scopes: readonly string[] };
  /** Webhooks (issue 26). */
  webhooks: WebhookConfig;
}

export interface WebhookConfig {
  /**
   * WEBHOOK_REFUSE_PRIVATE_ADDRESSES: endpoints, and back-channel logout URIs, whose host has no public
   * address (loopback, private, link-local, ...) are refused at creation (422) and at every delivery. On
   * by default (the safe value); off lets a receiver on a private network or this machine be reached
   * (development), except by a dynamically registered client (oidc/backchannel-uri.ts).
   */
  refusePrivateAddresses: boolean;
  /** One deadline for connecting, the answer and its body. */
  timeoutMs: number;
  /** How long a rotated-away secret keeps signing deliveries beside the new one. */
  secretGraceSeconds: number;
  /** How often the worker looks for due deliveries (it is also woken when this process publishes one). */
  pollIntervalMs: number;
}

export interface MfaConfig {
  /**
   * MFA_ENCRYPTION_KEY: keys that seal TOTP secrets and key the recovery-code hashes. The first seals,
   * every one opens (rotation); each at least 32 bytes. Empty when it is unset with PostgreSQL:
   * authenticator apps are off then, and recovery codes are keyed by the signing material.
   */
  encryptionKeys: string[];
  /** The issuer shown by authenticator apps (the otpauth URI's issuer). */
  totpIssuer: string;
}

/** Where mail goes: a real SMTP server, or .eml files in a folder (the embedded default). */
export type MailTransportSetting = { kind: "smtp"; url: string } | { kind: "file"; directory: string };

export interface MailConfig {
  transport: MailTransportSetting;
  /** The From header of every message. */
  from: string;
  /** Deliveries tried before a message is marked failed. */
  maxAttempts: number;
  /** The first retry waits this long; each later one twice as long as the one before (capped at an hour). */
  retryBaseSeconds: number;
  /** How often the sender looks for due messages (it is also woken at once when this process queues one). */
  pollIntervalMs: number;
}

export interface AccountRecoveryConfig {
  passwordResetTtlSeconds: number;
  emailVerificationTtlSeconds: number;
  /** When true, an account whose address is not verified cannot log in, and e-mail changes wait for confirmation. */
  verificationRequired: boolean;
  /** Where the links in mails point: the service's own pages by default, or a team's own app. */
  linkBaseUrl: string;
}

export interface IntrospectionClient {
  id: string;
  secret: string;
}

export interface Argon2Params {
  memoryKib: number;
  timeCost: number;
  parallelism: number;
}

export interface RateLimitConfig {
  enabled: boolean;
  windowSeconds: number;
  /** Failed logins for one account from one address. */
  loginPerAccountAndAddress: number;
  /** Failed logins for one account from all addresses together. */
  loginPerAccount: number;
  /** Failed logins from one address, over all accounts. */
  loginPerAddress: number;
  /** Sign-ups from one address. */
  signupPerAddress: number;
  /** Password-reset and verification mail requests from one address. */
  mailRequestsPerAddress: number;
  /** Password-reset and verification mail requests for one target e-mail. */
  mailRequestsPerEmail: number;
  /** Failed second-factor codes (and passwords on the second-factor routes) for one user. */
  secondFactorPerAccount: number;
}

export interface LoadedConfig {
  config: Config;
  /** Start-up facts worth one log line each (never a secret value). */
  notices: string[];
}

export type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env, cwd: string = process.cwd()): LoadedConfig {
  const notices: string[] = [];
  const database = parseDatabaseUrl(setting(env, "DATABASE_URL") ?? DEFAULT_DATABASE_URL, cwd, {
    poolSize: parseInteger(env, "DB_POOL_SIZE", 10, 1, 1000),
    timeoutMs: parseInteger(env, "DB_TIMEOUT_MS", 2000, 100, 60_000),
    synchronous: parseSynchronous(setting(env, "SQLITE_SYNCHRONOUS") ?? "normal"),
  });
  const host = setting(env, "HOST") ?? "127.0.0.1";
  const port = parsePort(setting(env, "PORT") ?? "8000");
  const signingAlgorithm = parseSigningAlgorithm(setting(env, "SIGNING_ALGORITHM"));
  const rawPublicUrl = setting(env, "PUBLIC_URL");
  const publicUrl = rawPublicUrl === undefined ? undefined : parseBaseUrl("PUBLIC_URL", rawPublicUrl);
  // Links in mails need a base even when PUBLIC_URL is unset: the listen address, as a person at this
  // machine would type it.
  const linkBase = publicUrl ?? defaultPublicUrl(host, port);
  const config: Config = {
    host,
    port,
    logLevel: parseLogLevel(setting(env, "LOG_LEVEL") ?? "info"),
    database,
    signingAlgorithm,
    ...resolveSigningMaterial(signingAlgorithm, env, database, cwd, notices),
    oidcSigningKeys: resolveOidcSigningKeys(setting(env, "OIDC_SIGNING_KEY_FILE"), publicUrl, database, cwd, notices),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...optional("tokenIssuer", parsePublicUrl("TOKEN_ISSUER", setting(env, "TOKEN_ISSUER")) ?? publicUrl),
    ...optional("tokenAudience", parseAudience(setting(env, "TOKEN_AUDIENCE"))),
    introspectionClients: parseIntrospectionClients(setting(env, "INTROSPECTION_CLIENTS")),
    oauthErrorFields: parseBoolean("OAUTH_ERROR_FIELDS", setting(env, "OAUTH_ERROR_FIELDS") ?? "off"),
    clockLeewaySeconds: parseInteger(env, "CLOCK_LEEWAY_SECONDS", 5, 0, 300),
    argon2: {
      memoryKib: parseInteger(env, "ARGON2_MEMORY_KIB", 19_456, 7_168, 4_194_304),
      timeCost: parseInteger(env, "ARGON2_TIME_COST", 2, 1, 100),
      parallelism: parseInteger(env, "ARGON2_PARALLELISM", 1, 1, 16),
    },
    passwordHashQueueLimit: parseInteger(env, "PASSWORD_HASH_QUEUE_LIMIT", DEFAULT_HASH_QUEUE_LIMIT, 0, 100_000),
    rateLimit: {
      enabled: parseBoolean("RATE_LIMIT", setting(env, "RATE_LIMIT") ?? "on"),
      windowSeconds: parseInteger(env, "RATE_LIMIT_WINDOW_SECONDS", 900, 1, 86_400),
      loginPerAccountAndAddress: parseInteger(env, "LOGIN_LIMIT_PER_ACCOUNT_AND_ADDRESS", 5, 1, 1_000_000),
      loginPerAccount: parseInteger(env, "LOGIN_LIMIT_PER_ACCOUNT", 50, 1, 1_000_000),
      loginPerAddress: parseInteger(env, "LOGIN_LIMIT_PER_ADDRESS", 20, 1, 1_000_000),
      signupPerAddress: parseInteger(env, "SIGNUP_LIMIT_PER_ADDRESS", 10, 1, 1_000_000),
      mailRequestsPerAddress: parseInteger(env, "MAIL_REQUEST_LIMIT_PER_ADDRESS", 10, 1, 1_000_000),
      mailRequestsPerEmail: parseInteger(env, "MAIL_REQUEST_LIMIT_PER_EMAIL", 3, 1, 1_000_000),
      secondFactorPerAccount: parseInteger(env, "MFA_LIMIT_PER_ACCOUNT", 5, 1, 1000),
    },
    trustProxy: parseTrustProxy(setting(env, "TRUST_PROXY") ?? "false"),
    corsOrigins: parseOrigins(setting(env, "CORS_ORIGINS")),
    redis: parseRedis(
      setting(env, "REDIS_URL"),
      parseInteger(env, "REDIS_TIMEOUT_MS", 1000, 50, 60_000),
      setting(env, "REDIS_KEY_PREFIX") ?? "uts:",
    ),
    shutdownTimeoutMs: parseInteger(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    connections: parseConnections(env),
    auditRetentionDays: parseInteger(env, "AUDIT_RETENTION_DAYS", 90, 1, 3650),
    userCache: {
      ttlMs: parseInteger(env, "USER_CACHE_TTL_MS", 5000, 0, 60_000),
      maxEntries: parseInteger(env, "USER_CACHE_SIZE", 10_000, 1, 1_000_000),
    },
    metrics:
      setting(env, "METRICS_PORT") === undefined
        ? undefined
        : {
            host: setting(env, "METRICS_HOST") ?? "127.0.0.1",
            port: parseInteger(env, "METRICS_PORT", 9464, 0, 65_535),
          },
    sessions: {
      idleSeconds: parseInteger(env, "REFRESH_IDLE_SECONDS", 14 * 86_400, 60, 365 * 86_400),
      absoluteSeconds: parseInteger(env, "REFRESH_ABSOLUTE_SECONDS", 30 * 86_400, 60, 3 * 365 * 86_400),
      reuseGraceSeconds: parseInteger(env, "REFRESH_REUSE_GRACE_SECONDS", 10, 0, 300),
      maxPerUser: parseInteger(env, "MAX_SESSIONS_PER_USER", 50, 1, 10_000),
    },
    signupOpen: parseBoolean("SIGNUP_OPEN", setting(env, "SIGNUP_OPEN") ?? "true"),
    firstAdmin: parseFirstAdmin(setting(env, "FIRST_ADMIN_EMAIL"), env.FIRST_ADMIN_PASSWORD),
    mail: {
      transport: parseMailUrl(setting(env, "MAIL_URL"), database, cwd),
      from: parseMailFrom(setting(env, "MAIL_FROM") ?? defaultMailFrom(linkBase)),
      maxAttempts: parseInteger(env, "MAIL_MAX_ATTEMPTS", 10, 1, 100),
      retryBaseSeconds: parseInteger(env, "MAIL_RETRY_BASE_SECONDS", 30, 1, 3600),
      pollIntervalMs: 2000,
    },
    accountRecovery: {
      passwordResetTtlSeconds: parseInteger(env, "PASSWORD_RESET_TTL_SECONDS", 1800, 60, 86_400),
      emailVerificationTtlSeconds: parseInteger(env, "EMAIL_VERIFICATION_TTL_SECONDS", 86_400, 60, 30 * 86_400),
      verificationRequired: parseBoolean(
        "EMAIL_VERIFICATION_REQUIRED",
        setting(env, "EMAIL_VERIFICATION_REQUIRED") ?? "false",
      ),
      linkBaseUrl: parseBaseUrl("ACCOUNT_LINK_BASE_URL", setting(env, "ACCOUNT_LINK_BASE_URL") ?? linkBase),
    },
    passwordListCheck: parseBoolean("PASSWORD_LIST_CHECK", setting(env, "PASSWORD_LIST_CHECK") ?? "on"),
    securityNotifications: parseNotices(setting(env, "SECURITY_NOTIFICATIONS") ?? "all"),
    mfa: {
      encryptionKeys: resolveSecrets(MFA_KEY, setting(env, MFA_KEY.name), database, notices),
      totpIssuer: parseTotpIssuer(setting(env, "TOTP_ISSUER") ?? defaultTotpIssuer(linkBase)),
    },
    webhooks: {
      refusePrivateAddresses: parseBoolean(
        "WEBHOOK_REFUSE_PRIVATE_ADDRESSES",
        setting(env, "WEBHOOK_REFUSE_PRIVATE_ADDRESSES") ?? "true",
      ),
      timeoutMs: parseInteger(env, "WEBHOOK_TIMEOUT_MS", 10_000, 100, 60_000),
      secretGraceSeconds: parseInteger(env, "WEBHOOK_SECRET_GRACE_SECONDS", 86_400, 0, 30 * 86_400),
      pollIntervalMs: 1000,
    },
    upstream: parseUpstreamConfig(env, parseBoolean),
  };
  if (config.upstream?.keepTokens && config.mfa.encryptionKeys.length === 0)
    throw new ConfigError("UPSTREAM_KEEP_TOKENS", "needs MFA_ENCRYPTION_KEY, which seals the kept tokens");
  const registration = parseDynamicRegistration(env);
  if (registration) config.dynamicRegistration = registration;
  if (config.firstAdmin) {
    // The bootstrap admin's password follows the same rules as every other new password.
    const { email, password } = config.firstAdmin;
    const problem = createPasswordPolicy({ listCheck: config.passwordListCheck }).problem(password, email);
    if (problem) throw new ConfigError("FIRST_ADMIN_PASSWORD", problem);
  }
  return { config, notices };
}

/** `{ name: value }` when there is a value, `{}` otherwise: optional settings stay absent, not undefined. */
function optional<K extends string>(name: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: string };
}

/** An empty value counts as unset, so `PORT=` in a .env file means "default". */
function setting(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

function parsePort(raw: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new ConfigError("PORT", `must be a whole number from 0 to 65535, got "${raw}"`);
  }
  return port;
}

function parseInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = setting(env, name);
  if (raw === undefined) return fallback;
  const value = /^\d{1,10}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  return value;
}

/**
 * How the HTTP listener treats connections. Node enforces the two receive timeouts by sweeping the
 * connections that are part-way through a request every `checkIntervalMs`, so a limit is applied
 * between its value and its value plus that interval.
 */
export interface ConnectionConfig {
  /** From a request's first byte to the end of its headers; then 408 and the connection closes. */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body; then 408 and the connection closes. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: number;
  /** How often Node checks the two receive timeouts (derived, not a setting). */
  checkIntervalMs: number;
  /** The listen(2) backlog: connections the kernel completes and queues until the process accepts them. */
  listenBacklog: number;
  /** On SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes. */
  shutdownDelayMs: number;
}

/**
 * Timeouts, backlog and drain delay (issue 15). Defaults: headers in 10 s and a whole request in 30 s
 * (our largest body is 16 KiB, so 30 s is generous even on a poor mobile link); keep-alive 72 s, above
 * the 60 s idle timeout of common load balancers (AWS ALB, nginx upstream keepalive), which must close
 * an idle connection before the service does or they race it and answer 502; backlog 4096 rather than
 * Node's 511, which a burst of 2,000 connections overflows (docs/deployment.md, "Connection storms");
 * a 5 s drain delay (at most half of SHUTDOWN_TIMEOUT_MS, which bounds the whole shutdown).
 */
function parseConnections(env: Env): ConnectionConfig {
  const headersTimeoutMs = parseInteger(env, "HEADERS_TIMEOUT_MS", 10_000, 500, 600_000);
  const requestTimeoutMs = parseInteger(env, "REQUEST_TIMEOUT_MS", 30_000, 500, 3_600_000);
  if (requestTimeoutMs < headersTimeoutMs)
    throw new ConfigError(
      "REQUEST_TIMEOUT_MS",
      `must be at least HEADERS_TIMEOUT_MS (${headersTimeoutMs}), got "${requestTimeoutMs}"`,
    );
  const shutdownTimeoutMs = parseInteger(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000);
  // The default leaves at least half of the shutdown bound for the requests in flight.
  const defaultDelayMs = Math.min(5_000, Math.floor(shutdownTimeoutMs / 2));
  const shutdownDelayMs = parseInteger(env, "SHUTDOWN_DELAY_MS", defaultDelayMs, 0, 600_000);
  if (shutdownDelayMs > 0 && shutdownDelayMs >= shutdownTimeoutMs)
    throw new ConfigError(
      "SHUTDOWN_DELAY_MS",
      `must be less than SHUTDOWN_TIMEOUT_MS (${shutdownTimeoutMs}), which bounds the whole shutdown, got "${shutdownDelayMs}"`,
    );
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: parseInteger(env, "KEEP_ALIVE_TIMEOUT_MS", 72_000, 1_000, 600_000),
    checkIntervalMs: Math.min(1_000, Math.ceil(headersTimeoutMs / 2)),
    listenBacklog: parseInteger(env, "LISTEN_BACKLOG", 4096, 1, 65_535),
    shutdownDelayMs,
  };
}

/** "false" (default), "true" (any proxy), a hop count, or a comma-separated list of proxy addresses/CIDRs. */
function parseTrustProxy(raw: string): boolean | number | string[] {
  const lower = raw.toLowerCase();
  if (lower === "false" || lower === "off" || lower === "0") return false;
  if (lower === "true" || lower === "on") return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const entries = raw.split(",").map((entry) => entry.trim());
  if (entries.every((entry) => /^[0-9a-f.:]+(\/\d{1,3})?$/i.test(entry))) return entries;
  throw new ConfigError("TRUST_PROXY", `must be false, true, a hop count or a list of proxy addresses, got "${raw}"`);
}

function parseRedis(raw: string | undefined, timeoutMs: number, prefix: string): Config["redis"] {
  if (raw === undefined) return undefined;
  if (!/^rediss?:\/\/[^\s]+$/.test(raw))
    throw new ConfigError("REDIS_URL", 'must look like "redis://host:6379" or "rediss://..."');
  return { url: raw, timeoutMs, prefix };
}

function parseOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  return raw.split(",").map((entry) => {
    const origin = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {}
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(
        "CORS_ORIGINS",
        `each entry must be an origin like https://app.example.com, got "${origin}"`,
      );
    }
    return origin;
  });
}

function parseBoolean(name: string, raw: string): boolean {
  const value = raw.toLowerCase();
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** `all`, `none`, or a comma list of notice kinds (mail/notices.ts). */
export function parseNotices(raw: string): ReadonlySet<NoticeKind> {
  const value = raw.trim().toLowerCase();
  if (value === "all") return new Set(NOTICE_KINDS);
  if (value === "none") return new Set();
  const kinds = value.split(",").map((kind) => kind.trim());
  const unknown = kinds.find((kind) => !(NOTICE_KINDS as readonly string[]).includes(kind));
  if (unknown !== undefined) {
    throw new ConfigError(
      "SECURITY_NOTIFICATIONS",
      `must be "all", "none" or a comma list of ${NOTICE_KINDS.join(", ")}; got "${unknown}"`,
    );
  }
  return new Set(kinds as NoticeKind[]);
}

/** Both or neither; the password is taken exactly as given and never echoed. */
function parseFirstAdmin(email: string | undefined, password: string | undefined): Config["firstAdmin"] {
  if (email === undefined && (password === undefined || password === "")) return undefined;
  if (email === undefined) throw new ConfigError("FIRST_ADMIN_EMAIL", "is required when FIRST_ADMIN_PASSWORD is set");
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) {
    throw new ConfigError("FIRST_ADMIN_EMAIL", "must be an e-mail address");
  }
  if (password === undefined || password === "") {
    throw new ConfigError("FIRST_ADMIN_PASSWORD", "is required when FIRST_ADMIN_EMAIL is set");
  }
  const length = [...password].length;
  if (length < 8 || length > 256)
    throw new ConfigError("FIRST_ADMIN_PASSWORD", `must be 8 to 256 characters, got ${length}`);
  return { email, password };
}

/** Without PUBLIC_URL, links point at the address the service listens on (a wildcard becomes loopback). */
function defaultPublicUrl(host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port || 8000}`;
}

/** no-reply at the public host name; "localhost" when that is an IP address, which is no mail domain. */
function defaultMailFrom(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return `User service <no-reply@${/^[\d.]+$|^\[/.test(host) ? "localhost" : host}>`;
}

/** An absolute http(s) URL, kept without a trailing slash so that paths can be appended. */
function parseBaseUrl(name: string, raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "" || url.username !== "") {
    throw new ConfigError(name, `must be an absolute http:// or https:// URL without query or fragment, got "${raw}"`);
  }
  return url.href.replace(/\/+$/, "");
}

/**
 * MAIL_URL names the transport: smtp://user:pass@host:port (STARTTLS when offered), smtps://... (TLS from the
 * start), or file:PATH for .eml files. Unset: file transport into a "mail" folder beside the SQLite file
 * (or ./data/mail), the convention of Django's file e-mail backend. The raw value is never echoed (it may
 * carry the SMTP password).
 */
function parseMailUrl(raw: string | undefined, database: DatabaseLocation, cwd: string): MailTransportSetting {
  if (raw === undefined) {
    const beside =
      database.kind === "sqlite" && database.path !== ":memory:" ? dirname(database.path) : join(cwd, "data");
    return { kind: "file", directory: join(beside, "mail") };
  }
  if (raw.startsWith("file:")) {
    const path = raw.slice("file:".length);
    if (path === "") throw new ConfigError("MAIL_URL", 'file: needs a folder, as in "file:data/mail"');
    return { kind: "file", directory: resolve(cwd, path) };
  }
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || !/^smtps?:$/.test(url.protocol) || url.hostname === "") {
    throw new ConfigError("MAIL_URL", 'must look like "smtp://user:password@host:587", "smtps://..." or "file:PATH"');
  }
  return { kind: "smtp", url: raw };
}

/** An address, optionally with a display name: "Team <no-reply@example.com>" or "no-reply@example.com". */
function parseMailFrom(raw: string): string {
  const address = /<([^<>]+)>\s*$/.exec(raw)?.[1] ?? raw;
  if (!/^[^\s@<>]+@[^\s@<>]+$/.test(address) || /[\r\n]/.test(raw)) {
    throw new ConfigError("MAIL_FROM", `must be an e-mail address, optionally as "Name <address>", got "${raw}"`);
  }
  return raw;
}

function parseLogLevel(raw: string): LogLevel {
  const level = raw.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError("LOG_LEVEL", `must be one of ${LOG_LEVELS.join(", ")}, got "${raw}"`);
  }
  return level as LogLevel;
}

/** SQLite's durability in WAL mode: "normal" survives a process crash, "full" also a power loss. */
function parseSynchronous(raw: string): "normal" | "full" {
  const value = raw.toLowerCase();
  if (value === "normal" || value === "full") return value;
  throw new ConfigError("SQLITE_SYNCHRONOUS", `must be normal or full, got "${raw}"`);
}

/** Accepted forms: `sqlite:PATH` (relative to the working directory), `sqlite::memory:`, `postgres://...`. */
export function parseDatabaseUrl(
  raw: string,
  cwd: string,
  options: { poolSize: number; timeoutMs: number; synchronous: "normal" | "full" } = {
    poolSize: 10,
    timeoutMs: 2000,
    synchronous: "normal",
  },
): DatabaseLocation {
  const { synchronous, ...pool } = options;
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length);
    if (path === "") throw new ConfigError("DATABASE_URL", 'sqlite: needs a file path, as in "sqlite:data/users.db"');
    if (path === ":memory:") return { kind: "sqlite", path, synchronous };
    return { kind: "sqlite", path: resolve(cwd, path), synchronous };
  }
  // Never echo the raw value: a database URL may carry a password.
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(raw)?.[0];
  if (scheme === "postgres:" || scheme === "postgresql:") {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError("DATABASE_URL", "is not a valid postgres:// URL");
    }
    if (url.hostname === "" && !url.searchParams.has("host"))
      throw new ConfigError("DATABASE_URL", "postgres:// needs a host");
    return { kind: "postgres", url: raw, ...pool };
  }
  throw new ConfigError("DATABASE_URL", 'must look like "sqlite:PATH", "sqlite::memory:" or "postgres://user@host/db"');
}

function parseSigningAlgorithm(raw: string | undefined): SigningAlgorithm {
  if (raw === undefined) return "HS256";
  const algorithm = SIGNING_ALGORITHMS.find((name) => name.toLowerCase() === raw.toLowerCase());
  if (algorithm === undefined)
    throw new ConfigError("SIGNING_ALGORITHM", `must be one of ${SIGNING_ALGORITHMS.join(", ")}, got "${raw}"`);
  return algorithm;
}

/** An absolute http(s) URL without query, fragment or trailing slash (RFC 8414 section 2 for an issuer). */
function parsePublicUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol) || url.search !== "" || url.hash !== "" || raw.endsWith("/")) {
    throw new ConfigError(
      name,
      `must be an absolute http(s) URL without query, fragment or trailing slash, got "${raw}"`,
    );
  }
  return raw;
}

function parseAudience(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,256}$/.test(raw) || raw.includes(","))
    throw new ConfigError("TOKEN_AUDIENCE", "must be one value of 1 to 256 visible characters without commas");
  return raw;
}

/**
 * Dynamic client registration is off unless DYNAMIC_CLIENT_REGISTRATION is on, and then needs its
 * initial access token: a credential like SIGNING_SECRET, with its minimum length, never echoed. What
 * a registrant may ask for is checked whether or not registration is on, so that a bad value is found
 * before the day it is turned on.
 */
function parseDynamicRegistration(env: Env): Config["dynamicRegistration"] {
  const on = parseBoolean("DYNAMIC_CLIENT_REGISTRATION", setting(env, "DYNAMIC_CLIENT_REGISTRATION") ?? "off");
  const grantTypes = parseDynamicGrantTypes(setting(env, "DYNAMIC_CLIENT_GRANT_TYPES"));
  const scopes = parseDynamicScopes(setting(env, "DYNAMIC_CLIENT_SCOPES"));
  const token = setting(env, "REGISTRATION_ACCESS_TOKEN");
  if (!on) return undefined;
  if (token === undefined)
    throw new ConfigError("REGISTRATION_ACCESS_TOKEN", "is required when DYNAMIC_CLIENT_REGISTRATION is on");
  if (Buffer.byteLength(token, "utf8") < MIN_SECRET_BYTES)
    throw new ConfigError("REGISTRATION_ACCESS_TOKEN", `must be at least ${MIN_SECRET_BYTES} bytes`);
  return { initialAccessToken: token, grantTypes, scopes };
}

/** The entries of a list setting: separated by commas or spaces, empty ones dropped, each once. */
const listEntries = (raw: string) => [...new Set(raw.split(/[\s,]+/).filter((entry) => entry !== ""))];

/** DYNAMIC_CLIENT_GRANT_TYPES: grant types a client can have; refresh_token only beside authorization_code. */
function parseDynamicGrantTypes(raw: string | undefined): readonly GrantType[] {
  if (raw === undefined) return DEFAULT_DYNAMIC_GRANT_TYPES;
  const grantTypes = listEntries(raw);
  const unknown = grantTypes.find((grant) => !(GRANT_TYPES as readonly string[]).includes(grant));
  if (unknown !== undefined)
    throw new ConfigError(
      "DYNAMIC_CLIENT_GRANT_TYPES",
      `must list grant types among ${GRANT_TYPES.join(", ")}; got "${unknown}"`,
    );
  if (grantTypes.includes("refresh_token") && !grantTypes.includes("authorization_code"))
    throw new ConfigError("DYNAMIC_CLIENT_GRANT_TYPES", "refresh_token only comes with authorization_code");
  return grantTypes as GrantType[];
}

/** DYNAMIC_CLIENT_SCOPES: scope tokens (RFC 6749 section 3.3), separated by spaces or commas. */
function parseDynamicScopes(raw: string | undefined): readonly string[] {
  if (raw === undefined) return DEFAULT_DYNAMIC_SCOPES;
  const scopes = listEntries(raw);
  const bad = scopes.find((scope) => !isScopeToken(scope));
  if (bad !== undefined)
    throw new ConfigError("DYNAMIC_CLIENT_SCOPES", `must list scope tokens; "${bad.slice(0, 64)}" is not one`);
  return scopes;
}

/**
 * `id:secret` pairs separated by commas. The secret is a credential like SIGNING_SECRET, so it has
 * the same minimum length; the error never echoes it.
 */
function parseIntrospectionClients(raw: string | undefined): IntrospectionClient[] {
  if (raw === undefined) return [];
  const clients = raw.split(",").map((entry, i) => {
    const colon = entry.indexOf(":");
    const id = entry.slice(0, colon).trim();
    const secret = entry.slice(colon + 1).trim();
    if (colon < 0 || !/^[\w.-]{1,64}$/.test(id))
      throw new ConfigError(
        "INTROSPECTION_CLIENTS",
        `entry ${i + 1} must be "client-id:secret" with a plain client id`,
      );
    if (Buffer.byteLength(secret, "utf8") < MIN_SECRET_BYTES)
      throw new ConfigError(
        "INTROSPECTION_CLIENTS",
        `the secret of "${id}" must be at least ${MIN_SECRET_BYTES} bytes`,
      );
    return { id, secret };
  });
  if (new Set(clients.map((client) => client.id)).size !== clients.length)
    throw new ConfigError("INTROSPECTION_CLIENTS", "a client id appears twice");
  return clients;
}

/** HS256 takes SIGNING_SECRET; EdDSA and ES256 take SIGNING_KEY_FILE (or a generated key) and refuse a secret. */
function resolveSigningMaterial(
  algorithm: SigningAlgorithm,
  env: Env,
  database: DatabaseLocation,
  cwd: string,
  notices: string[],
): { signingSecrets: string[]; signingKeys: string[] } {
  const secret = setting(env, "SIGNING_SECRET");
  const keyFiles = setting(env, "SIGNING_KEY_FILE");
  if (algorithm === "HS256") {
    if (keyFiles !== undefined)
      throw new ConfigError(
        "SIGNING_KEY_FILE",
        "is for SIGNING_ALGORITHM=EdDSA or ES256; HS256 signs with SIGNING_SECRET",
      );
    return { signingSecrets: resolveSecrets(SIGNING_SECRET, secret, database, notices), signingKeys: [] };
  }
  if (secret !== undefined)
    throw new ConfigError("SIGNING_SECRET", `is for HS256; SIGNING_ALGORITHM=${algorithm} signs with SIGNING_KEY_FILE`);
  return { signingSecrets: [], signingKeys: resolveSigningKeys(algorithm, keyFiles, database, cwd, notices) };
}

/**
 * SIGNING_KEY_FILE names one PEM private key file, or several separated by commas for rotation: the
 * first signs, the others still verify and stay published until they are removed. Unset with an
 * SQLite file: a key is generated beside the database, owner-only, and kept across restarts.
 */
function resolveSigningKeys(
  algorithm: AsymmetricAlgorithm,
  raw: string | undefined,
  database: DatabaseLocation,
  cwd: string,
  notices: string[],
): string[] {
  const keys = resolvePrivateKeys(SIGNING_KEY, algorithm, raw, database, cwd, notices);
  if (keys === undefined)
    throw new ConfigError("SIGNING_KEY_FILE", "is required with PostgreSQL: every instance must share one key");
  return keys;
}

/** A setting naming PEM private key files, with a generated owner-only file as the SQLite default. */
interface KeyFileSetting {
  name: string;
  /** The generated file's name beside the database, for an algorithm. */
  fileName: (algorithm: AsymmetricAlgorithm) => string;
}

const SIGNING_KEY: KeyFileSetting = {
  name: "SIGNING_KEY_FILE",
  fileName: (algorithm) => `signing-key-${algorithm.toLowerCase()}.pem`,
};

/**
 * OIDC_SIGNING_KEY_FILE: the RSA keys that sign ID tokens (RS256, which OpenID Connect Discovery
 * requires of every provider), whatever SIGNING_ALGORITHM signs access tokens with.
 */
const OIDC_SIGNING_KEY: KeyFileSetting = {
  name: "OIDC_SIGNING_KEY_FILE",
  fileName: () => "oidc-signing-key-rs256.pem",
};

/**
 * OIDC_SIGNING_KEY_FILE, or a generated key on SQLite once PUBLIC_URL names the issuer that relying
 * parties reach (without either, OpenID Connect is off and nothing changes: no key is made, the JWK
 * Set stays as it was). With PostgreSQL and no file, OpenID Connect is off (one notice): every
 * instance must sign ID tokens with one key, and a key kept in the database would be readable by
 * anyone who can read a backup of it.
 */
function resolveOidcSigningKeys(
  raw: string | undefined,
  publicUrl: string | undefined,
  database: DatabaseLocation,
  cwd: string,
  notices: string[],
): string[] {
  if (raw === undefined && publicUrl === undefined) return [];
  const keys = resolvePrivateKeys(OIDC_SIGNING_KEY, "RS256", raw, database, cwd, notices);
  if (keys !== undefined) return keys;
  notices.push(
    "OIDC_SIGNING_KEY_FILE is unset: OpenID Connect (authorization endpoint, ID tokens) is off until it names an " +
      "RSA key shared by every instance",
  );
  return [];
}

/** The PEM keys the setting names, or a generated one; undefined with PostgreSQL and no setting. */
function resolvePrivateKeys(
  kind: KeyFileSetting,
  algorithm: AsymmetricAlgorithm,
  raw: string | undefined,
  database: DatabaseLocation,
  cwd: string,
  notices: string[],
): string[] | undefined {
  if (raw !== undefined) {
    return raw.split(",").map((entry) => {
      const file = resolve(cwd, entry.trim());
      let pem: string;
      try {
        pem = readFileSync(file, "utf8");
      } catch (error) {
        throw new ConfigError(kind.name, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`);
      }
      return checkPrivateKey(kind.name, algorithm, pem, file);
    });
  }
  if (database.kind === "postgres") return undefined;
  if (database.path === ":memory:") {
    notices.push(
      `${kind.name} is unset and the database is in memory: using a random ${algorithm} key for this process only`,
    );
    return [generatePrivateKeyPem(algorithm)];
  }
  const file = join(dirname(database.path), kind.fileName(algorithm));
  const created = ensureOwnerOnlyFile(file, generatePrivateKeyPem(algorithm), kind.name);
  notices.push(
    created
      ? `${kind.name} is unset: generated a new ${algorithm} key in ${file} (owner-only permissions)`
      : `${kind.name} is unset: using the ${algorithm} key kept in ${file}`,
  );
  return [checkPrivateKey(kind.name, algorithm, readOwnerOnlyFile(file, kind.name), file)];
}

function checkPrivateKey(name: string, algorithm: AsymmetricAlgorithm, pem: string, file: string): string {
  try {
    parsePrivateKey(algorithm, pem);
  } catch (error) {
    throw new ConfigError(name, `${file} ${(error as Error).message}`);
  }
  return pem;
}

/** A comma-separated list of secrets with a generated owner-only file as the SQLite default. */
interface SecretSetting {
  name: string;
  fileName: string;
  /** What the secret is, in notices: "signing secret". */
  noun: string;
  /**
   * Unset with PostgreSQL: why the service cannot start (every instance must share one value), or, for
   * a setting that only an optional feature needs, the notice that the feature is off until it is set.
   */
  unsetWithPostgres: { required: string } | { off: string };
}

const SIGNING_SECRET: SecretSetting = {
  name: "SIGNING_SECRET",
  fileName: SECRET_FILE_NAME,
  noun: "signing secret",
  unsetWithPostgres: { required: "every instance must share one secret" },
};

const MFA_KEY: SecretSetting = {
  name: "MFA_ENCRYPTION_KEY",
  fileName: MFA_KEY_FILE_NAME,
  noun: "second-factor encryption key",
  // Only authenticator apps need it: passkeys, and recovery codes (keyed by the signing material then, see
  // auth/second-factors.ts), work without it.
  unsetWithPostgres: {
    off:
      "MFA_ENCRYPTION_KEY is unset: authenticator apps are off until it is set (one value shared by every " +
      "instance); passkeys and recovery codes work without it",
  },
};

/**
 * SIGNING_SECRET holds one secret, or several separated by commas for rotation: the first signs new
 * tokens, the others still verify until they are removed. MFA_ENCRYPTION_KEY works the same way:
 * the first seals TOTP secrets, every one opens them. Generated secrets are base64url, so they
 * never contain a comma.
 */
function resolveSecrets(
  kind: SecretSetting,
  raw: string | undefined,
  database: DatabaseLocation,
  notices: string[],
): string[] {
  if (raw !== undefined) {
    const secrets = raw.split(",").map((secret) => secret.trim());
    return secrets.map((secret, i) =>
      checkSecretLength(kind.name, secret, secrets.length > 1 ? `secret number ${i + 1}` : kind.name),
    );
  }
  if (database.kind === "postgres") {
    const unset = kind.unsetWithPostgres;
    if ("required" in unset) throw new ConfigError(kind.name, `is required with PostgreSQL: ${unset.required}`);
    notices.push(unset.off);
    return [];
  }
  if (database.path === ":memory:") {
    notices.push(
      `${kind.name} is unset and the database is in memory: using a random ${kind.noun} for this process only`,
    );
    return [generateSecret()];
  }
  const file = join(dirname(database.path), kind.fileName);
  const created = ensureOwnerOnlyFile(file, `${generateSecret()}\n`, kind.name);
  notices.push(
    created
      ? `${kind.name} is unset: generated a new ${kind.noun} in ${file} (owner-only permissions)`
      : `${kind.name} is unset: using the ${kind.noun} kept in ${file}`,
  );
  return [checkSecretLength(kind.name, readOwnerOnlyFile(file, kind.name).trim(), `the secret in ${file}`)];
}

function checkSecretLength(name: string, secret: string, where: string): string {
  const bytes = Buffer.byteLength(secret, "utf8");
  if (bytes < MIN_SECRET_BYTES) {
    throw new ConfigError(name, `${where} must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes}`);
  }
  return secret;
}

/** The public host name (an IPv6 address has colons, which the otpauth label cannot hold). */
function defaultTotpIssuer(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return host.includes(":") || host.startsWith("[") ? "user-token-service" : host;
}

/** Shown in the app and put in the otpauth URI: printable, no colon (the label's separator). */
function parseTotpIssuer(raw: string): string {
  if (!/^[\p{L}\p{N}\p{P}\p{Zs}]{1,64}$/u.test(raw) || raw.includes(":"))
    throw new ConfigError("TOTP_ISSUER", `must be 1 to 64 printable characters without a colon, got "${raw}"`);
  return raw;
}

export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Creates a secret file (signing secret or private key) if missing. The content is written to a
 * private temp file first and then hard-linked into place, so two first starts racing each other
 * agree on one complete secret (link fails with EEXIST for the loser).
 */
function ensureOwnerOnlyFile(file: string, content: string, name: string): boolean {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(temp, content, { mode: 0o600, flag: "wx" });
    linkSync(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new ConfigError(name, `cannot create the secret file ${file}: ${(error as Error).message}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

function readOwnerOnlyFile(file: string, name: string): string {
  const fd = openSync(file, "r");
  try {
    if ((fstatSync(fd).mode & 0o077) !== 0) {
      throw new ConfigError(name, `the secret file ${file} is readable by other users; run chmod 600 on it`);
    }
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
