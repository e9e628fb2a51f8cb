// The service's configuration: the settings of every capability, read from an
// environment object once at start-up. Each capability declares its own
// settings and checks them beside its code (src/<capability>/settings.ts,
// in the words of settings/declare.ts); this module only composes those
// sections into the Config the app receives, and lists them, in order, for
// the configuration reference (scripts/docs-config.ts). A bad value throws
// ConfigError naming the setting; server.ts prints that one line and exits.
// Nothing else in the code reads process.env (env.ts reads it for server.ts
// and the CLI).

import { ADMIN_CONSOLE_SETTINGS, type AdminConsoleSettings, readAdminConsoleSettings } from "./admin/settings.ts";
import { PASSWORD_SETTINGS, type PasswordSettings, readPasswordSettings } from "./auth/password-settings.ts";
import { RATE_LIMIT_SETTINGS, type RateLimitConfig, readRateLimitSettings } from "./auth/rate-limit-settings.ts";
import { readTokenSettings, TOKEN_SETTINGS, type TokenSettings } from "./auth/token-settings.ts";
import { BRANDING_SETTINGS, type BrandSettings, readBrandSettings } from "./branding/settings.ts";
import { CORE_SETTINGS, readCoreSettings } from "./core/settings.ts";
import { DEVICE_SETTINGS, type DeviceSettings, readDeviceSettings } from "./device/settings.ts";
import { DPOP_SETTINGS, type DpopSettings, readDpopSettings } from "./dpop/settings.ts";
import { ConfigError } from "./errors.ts";
import { FACTOR_SETTINGS, type MfaConfig, readFactorSettings } from "./factors/settings.ts";
import type { Locale } from "./i18n/locales.ts";
import { LANGUAGE_SETTINGS, readDefaultLocale } from "./i18n/settings.ts";
import { MAIL_SETTINGS, type MailConfig, readMailSettings } from "./mail/settings.ts";
import { PAR_SETTINGS, type PushedRequestSettings, readPushedRequestSettings } from "./oidc/par-settings.ts";
import { OIDC_SETTINGS, type OidcSettings, readOidcSettings } from "./oidc/settings.ts";
import { OPERATIONS_SETTINGS, type OperationsSettings, readOperationsSettings } from "./operations/settings.ts";
import { PASSWORDLESS_SETTINGS, type PasswordlessMail, readPasswordlessSettings } from "./passwordless/settings.ts";
import { type ConnectionConfig, type LogLevel, readServerSettings, SERVER_SETTINGS } from "./platform/settings.ts";
import { type AccountRecoveryConfig, RECOVERY_SETTINGS, readRecoverySettings } from "./recovery/settings.ts";
import { readSessionSettings, SESSION_SETTINGS, type SessionsConfig } from "./sessions/settings.ts";
import { type Env, envValue, parseBoolean, type SettingsSection } from "./settings/declare.ts";
import type { NoticeKind } from "./store/mail.ts";
import { type DatabaseLocation, type RedisConfig, readStorageSettings, STORAGE_SETTINGS } from "./store/settings.ts";
import { parseUpstreamConfig, UPSTREAM_SETTINGS, type UpstreamConfig } from "./upstream/settings.ts";
import { checkFirstAdminPassword, readUserSettings, USER_SETTINGS, type UserSettings } from "./users/settings.ts";
import { readWebhookSettings, WEBHOOK_SETTINGS, type WebhookConfig } from "./webhooks/settings.ts";

export type { Env } from "./settings/declare.ts";

/** Every section, in the order the configuration reference lists them. */
export const SETTINGS_SECTIONS: readonly SettingsSection[] = [
  SERVER_SETTINGS,
  STORAGE_SETTINGS,
  TOKEN_SETTINGS,
  CORE_SETTINGS,
  PASSWORD_SETTINGS,
  RATE_LIMIT_SETTINGS,
  SESSION_SETTINGS,
  USER_SETTINGS,
  MAIL_SETTINGS,
  RECOVERY_SETTINGS,
  PASSWORDLESS_SETTINGS,
  FACTOR_SETTINGS,
  OIDC_SETTINGS,
  PAR_SETTINGS,
  DEVICE_SETTINGS,
  DPOP_SETTINGS,
  UPSTREAM_SETTINGS,
  WEBHOOK_SETTINGS,
  OPERATIONS_SETTINGS,
  ADMIN_CONSOLE_SETTINGS,
  LANGUAGE_SETTINGS,
  BRANDING_SETTINGS,
];

export interface Config {
  host: string;
  port: number;
  logLevel: LogLevel;
  database: DatabaseLocation;
  /** HS256 (the spec's default), or EdDSA / ES256 with private keys. */
  signingAlgorithm: TokenSettings["signingAlgorithm"];
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
  introspectionClients: OidcSettings["introspectionClients"];
  /**
   * OAUTH_ERROR_FIELDS: the token endpoints' errors also carry RFC 6749's `error` and
   * `error_description`, for OAuth client libraries. Off by default: the spec's error body is `detail` alone.
   */
  oauthErrorFields: boolean;
  /** Clock skew tolerated when checking exp, nbf and iat. */
  clockLeewaySeconds: number;
  argon2: PasswordSettings["argon2"];
  /**
   * PASSWORD_HASH_QUEUE_LIMIT: hashes and verifies that may wait for a core; beyond it a route that
   * hashes answers 503 with Retry-After at once (src/auth/passwords.ts).
   */
  passwordHashQueueLimit: number;
  rateLimit: RateLimitConfig;
  /** Fastify's trustProxy: whether X-Forwarded-For names the client address. */
  trustProxy: boolean | number | string[];
  /** Shared state (rate-limit counters) in Redis when set; in the process otherwise. */
  redis?: RedisConfig;
  sessions: SessionsConfig;
  /** Audit events older than this are pruned. */
  auditRetentionDays: number;
  /** The token check's user cache (src/auth/user-cache.ts); ttlMs 0 turns it off. */
  userCache: TokenSettings["userCache"];
  /** Prometheus metrics on their own address; off when unset, so they are never public by accident. */
  metrics?: OperationsSettings["metrics"];
  /** How long SIGTERM waits for requests in flight before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** Slow clients, drain and connection storms: see ConnectionConfig. */
  connections: ConnectionConfig;
  /** Browser origins allowed to call the API cross-origin; empty means CORS off. */
  corsOrigins: string[];
  /** Anyone may POST /users; when false only admins create users. */
  signupOpen: boolean;
  /** Created (or promoted) at start-up when no active admin exists. */
  firstAdmin?: UserSettings["firstAdmin"];
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
  dynamicRegistration?: OidcSettings["dynamicRegistration"];
  /** Pushed authorization requests (issue 36, RFC 9126): src/oidc/par-settings.ts; absent, their defaults. */
  pushedAuthorizationRequests?: PushedRequestSettings;
  /** Webhooks (issue 26). */
  webhooks: WebhookConfig;
  /** The device authorization grant (issue 36): its defaults when left out (tests' configs). */
  device?: DeviceSettings;
  /** DPoP proofs (issue 36, RFC 9449): src/dpop/settings.ts; its defaults when absent. */
  dpop?: DpopSettings;
  /**
   * Issue 35: the declared settings as given at start-up (trimmed, non-empty), by name, secrets
   * included; GET /admin/settings shows a secret's only as set or unset. Absent in configs built by hand.
   */
  settingsGiven?: Readonly<Record<string, string>>;
  /** The admin console (issue 35): src/admin/settings.ts; absent (tests' configs), no console. */
  adminConsole?: AdminConsoleSettings;
  /** DEFAULT_LOCALE (issue 37): src/i18n/settings.ts; absent (tests' configs), English. */
  defaultLocale?: Locale;
  /** The brand's defaults and the front door (issue 37): src/branding/settings.ts; absent (tests' configs), theirs. */
  branding?: BrandSettings;
  /** PASSWORDLESS_MAIL (issue 37): sign-in by mail; absent (tests' configs), off. */
  passwordlessMail?: PasswordlessMail;
}

export interface LoadedConfig {
  config: Config;
  /** Start-up facts worth one log line each (never a secret value). */
  notices: string[];
}

/** Issue 35: the declared settings' values as given; a pattern's (UPSTREAM_<NAME>_LABEL) under each name it matches. */
function settingsGiven(env: Env): Record<string, string> {
  const declared = SETTINGS_SECTIONS.flatMap((section) => section.settings.map((setting) => setting.name));
  const patterns = declared.map((name) => new RegExp(`^${name.replaceAll("<NAME>", "[A-Z0-9_]+")}$`));
  const given: Record<string, string> = {};
  for (const name of Object.keys(env)) {
    const value = envValue(env, name);
    if (value !== undefined && patterns.some((pattern) => pattern.test(name))) given[name] = value;
  }
  return given;
}

/**
 * Reads every section. The order matters where a section needs another's result (the database's
 * location for generated secrets, the public URL for defaults) and for the start-up notices, which
 * keep the order they always had: the signing material, the ID-token keys, the second-factor key.
 */
export function loadConfig(env: Env, cwd: string = process.cwd()): LoadedConfig {
  const notices: string[] = [];
  const { database, redis } = readStorageSettings(env, cwd);
  const server = readServerSettings(env);
  const { publicUrl, linkBase } = server;
  const tokens = readTokenSettings(env, { database, cwd, publicUrl, notices });
  const { dynamicRegistration, ...oidc } = readOidcSettings(env, { database, cwd, publicUrl, notices });
  const passwords = readPasswordSettings(env);
  const operations = readOperationsSettings(env);
  const mail = readMailSettings(env, { database, cwd, linkBase });
  const config: Config = {
    host: server.host,
    port: server.port,
    logLevel: server.logLevel,
    database,
    signingAlgorithm: tokens.signingAlgorithm,
    signingSecrets: tokens.signingSecrets,
    signingKeys: tokens.signingKeys,
    oidcSigningKeys: oidc.oidcSigningKeys,
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(tokens.tokenIssuer === undefined ? {} : { tokenIssuer: tokens.tokenIssuer }),
    ...(tokens.tokenAudience === undefined ? {} : { tokenAudience: tokens.tokenAudience }),
    introspectionClients: oidc.introspectionClients,
    ...readCoreSettings(env),
    clockLeewaySeconds: tokens.clockLeewaySeconds,
    argon2: passwords.argon2,
    passwordHashQueueLimit: passwords.passwordHashQueueLimit,
    rateLimit: readRateLimitSettings(env),
    trustProxy: server.trustProxy,
    corsOrigins: server.corsOrigins,
    redis,
    shutdownTimeoutMs: server.shutdownTimeoutMs,
    connections: server.connections,
    auditRetentionDays: operations.auditRetentionDays,
    userCache: tokens.userCache,
    metrics: operations.metrics,
    sessions: readSessionSettings(env),
    ...readUserSettings(env),
    mail: mail.mail,
    accountRecovery: readRecoverySettings(env, linkBase),
    passwordListCheck: passwords.passwordListCheck,
    securityNotifications: mail.securityNotifications,
    mfa: readFactorSettings(env, { database, linkBase, notices }),
    webhooks: readWebhookSettings(env),
    upstream: parseUpstreamConfig(env, parseBoolean),
    pushedAuthorizationRequests: readPushedRequestSettings(env),
    device: readDeviceSettings(env),
    dpop: readDpopSettings(env),
    settingsGiven: settingsGiven(env),
    adminConsole: readAdminConsoleSettings(env),
    defaultLocale: readDefaultLocale(env),
    branding: readBrandSettings(env),
    passwordlessMail: readPasswordlessSettings(env, envValue(env, "MAIL_URL")),
  };
  // The rules between sections.
  if (config.upstream?.keepTokens && config.mfa.encryptionKeys.length === 0)
    throw new ConfigError("UPSTREAM_KEEP_TOKENS", "needs MFA_ENCRYPTION_KEY, which seals the kept tokens");
  if (dynamicRegistration) config.dynamicRegistration = dynamicRegistration;
  checkFirstAdminPassword(config.firstAdmin, config.passwordListCheck);
  return { config, notices };
}
