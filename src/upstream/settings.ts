// The upstream providers' settings (issue 25), read by config.ts from the
// environment once at start-up. One list names the providers, and each has
// its settings under its upper-cased name, which is easy to write in an env
// file: UPSTREAM_PROVIDERS=google,github then UPSTREAM_GOOGLE_CLIENT_ID,
// UPSTREAM_GOOGLE_CLIENT_SECRET, ... A name that is a preset (google,
// microsoft, gitlab, github) needs only its client id and secret (and
// microsoft its tenant); any other name is a generic OpenID Connect provider
// with its ISSUER. All optional: no list, no upstream sign-in.
import { ConfigError } from "../errors.ts";

export type Env = Readonly<Record<string, string | undefined>>;

export interface UpstreamOidcProvider {
  kind: "oidc";
  name: string;
  /** The button's words: "Sign in with {label}". */
  label: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string;
  /** Lower-case e-mail domains allowed to sign in; empty: any. */
  allowedDomains: string[];
}

export interface UpstreamGithubProvider extends Omit<UpstreamOidcProvider, "kind" | "issuer"> {
  kind: "github";
  /** GitHub's web origin (authorize, access_token) and API base, settable for GitHub Enterprise and tests. */
  webUrl: string;
  apiUrl: string;
}

export type UpstreamProvider = UpstreamOidcProvider | UpstreamGithubProvider;

export interface UpstreamConfig {
  providers: UpstreamProvider[];
  /**
   * UPSTREAM_AUTO_LINK: an upstream sign-in whose provider asserts a verified address that an account
   * already has is linked to that account without its password. Off: the password is asked first.
   */
  autoLink: boolean;
  /** UPSTREAM_KEEP_TOKENS: keep the provider's tokens, sealed with MFA_ENCRYPTION_KEY. Off by default. */
  keepTokens: boolean;
  /** UPSTREAM_TIMEOUT_MS: every call to a provider gives up after this long. */
  timeoutMs: number;
}

const PRESETS: Record<string, { label: string; issuer?: string }> = {
  google: { label: "Google", issuer: "https://accounts.google.com" },
  gitlab: { label: "GitLab", issuer: "https://gitlab.com" },
  microsoft: { label: "Microsoft" },
  github: { label: "GitHub" },
};

function value(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === "" ? undefined : raw;
}

function requiredValue(env: Env, name: string, why: string): string {
  const raw = value(env, name);
  if (raw === undefined) throw new ConfigError(name, `is required ${why}`);
  return raw;
}

/** https, or http on a loopback host (a provider on the same machine, for development and tests). */
function providerUrl(name: string, raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {}
  const loopback = url !== undefined && ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (!url || !(url.protocol === "https:" || (url.protocol === "http:" && loopback)) || url.search || url.hash)
    throw new ConfigError(name, `must be an https:// URL (http:// only on a loopback host), got "${raw}"`);
  return url.href.replace(/\/+$/, "");
}

function domains(name: string, raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const list = raw
    .split(",")
    .map((domain) => domain.trim().toLowerCase())
    .filter(Boolean);
  for (const domain of list)
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(domain))
      throw new ConfigError(name, `must be a comma-separated list of domains, got "${domain}"`);
  return list;
}

function parseProvider(env: Env, name: string): UpstreamProvider {
  const prefix = `UPSTREAM_${name.toUpperCase().replace(/-/g, "_")}_`;
  const preset = PRESETS[name];
  const common = {
    name,
    label: value(env, `${prefix}LABEL`) ?? preset?.label ?? name,
    clientId: requiredValue(env, `${prefix}CLIENT_ID`, `for the upstream provider ${name}`),
    clientSecret: requiredValue(env, `${prefix}CLIENT_SECRET`, `for the upstream provider ${name}`),
    allowedDomains: domains(`${prefix}ALLOWED_DOMAINS`, value(env, `${prefix}ALLOWED_DOMAINS`)),
  };
  if (common.label.length > 60) throw new ConfigError(`${prefix}LABEL`, "must be at most 60 characters");
  if (name === "github") {
    return {
      kind: "github",
      ...common,
      scopes: value(env, `${prefix}SCOPES`) ?? "read:user user:email",
      webUrl: providerUrl(`${prefix}WEB_URL`, value(env, `${prefix}WEB_URL`) ?? "https://github.com"),
      apiUrl: providerUrl(`${prefix}API_URL`, value(env, `${prefix}API_URL`) ?? "https://api.github.com"),
    };
  }
  let issuer = value(env, `${prefix}ISSUER`) ?? preset?.issuer;
  if (issuer === undefined && name === "microsoft") {
    // Entra ID's multi-tenant issuers ("common", "organizations") are templates no ID token matches.
    const tenant = requiredValue(env, `${prefix}TENANT`, "for Microsoft Entra ID (the directory's tenant id)");
    if (!/^[0-9a-f-]{36}$|^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(tenant) || ["common", "organizations"].includes(tenant))
      throw new ConfigError(`${prefix}TENANT`, `must be a tenant id or domain, got "${tenant}"`);
    issuer = `https://login.microsoftonline.com/${tenant}/v2.0`;
  }
  if (issuer === undefined) throw new ConfigError(`${prefix}ISSUER`, `is required for the upstream provider ${name}`);
  return {
    kind: "oidc",
    ...common,
    issuer: providerUrl(`${prefix}ISSUER`, issuer),
    scopes: value(env, `${prefix}SCOPES`) ?? "openid email profile",
  };
}

export function parseUpstreamConfig(env: Env, parseBoolean: (name: string, raw: string) => boolean): UpstreamConfig {
  const names = (value(env, "UPSTREAM_PROVIDERS") ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  for (const name of names)
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(name))
      throw new ConfigError("UPSTREAM_PROVIDERS", `must be a comma-separated list of short names, got "${name}"`);
  if (new Set(names).size !== names.length) throw new ConfigError("UPSTREAM_PROVIDERS", "names a provider twice");
  const timeout = value(env, "UPSTREAM_TIMEOUT_MS") ?? "5000";
  const timeoutMs = /^\d{1,6}$/.test(timeout) ? Number(timeout) : Number.NaN;
  if (!(timeoutMs >= 100 && timeoutMs <= 60_000))
    throw new ConfigError("UPSTREAM_TIMEOUT_MS", `must be a whole number from 100 to 60000, got "${timeout}"`);
  return {
    providers: names.map((name) => parseProvider(env, name)),
    autoLink: parseBoolean("UPSTREAM_AUTO_LINK", value(env, "UPSTREAM_AUTO_LINK") ?? "false"),
    keepTokens: parseBoolean("UPSTREAM_KEEP_TOKENS", value(env, "UPSTREAM_KEEP_TOKENS") ?? "false"),
    timeoutMs,
  };
}
