// The upstream providers' settings (issue 25), declared here beside upstream
// sign-in and composed by config.ts. One list names the providers, and each has
// its settings under its upper-cased name, which is easy to write in an env
// file: UPSTREAM_PROVIDERS=google,github then UPSTREAM_GOOGLE_CLIENT_ID,
// UPSTREAM_GOOGLE_CLIENT_SECRET, ... A name that is a preset (google,
// microsoft, gitlab, github) needs only its client id and secret (and
// microsoft its tenant); any other name is a generic OpenID Connect provider
// with its ISSUER. All optional: no list, no upstream sign-in.
import { ConfigError } from "../errors.ts";
import { type Env, envValue, integer, type SettingDoc, section } from "../settings/declare.ts";

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

const OIDC_SCOPES = "openid email profile";
const GITHUB_SCOPES = "read:user user:email";
const GITHUB_WEB_URL = "https://github.com";
const GITHUB_API_URL = "https://api.github.com";

const UPSTREAM_PROVIDERS: SettingDoc = {
  name: "UPSTREAM_PROVIDERS",
  default: "unset",
  meaning:
    "Comma-separated provider names (lower case): presets " +
    `${Object.keys(PRESETS)
      .map((name) => `\`${name}\``)
      .join(", ")}, or any name for a generic OpenID Connect provider. See ` +
    "[Sign in with Google, Microsoft, GitHub...](../accounts/upstream-sign-in.md).",
};

/** A setting each provider has under its own prefix, UPSTREAM_<NAME>_ (the name upper-cased, - as _). */
interface ProviderSetting extends SettingDoc {
  suffix: string;
}

const perProvider = (suffix: string, doc: Omit<SettingDoc, "name">, name = `UPSTREAM_<NAME>_${suffix}`) => ({
  name,
  suffix,
  ...doc,
});

const CLIENT_ID = perProvider("CLIENT_ID", {
  default: "required per provider",
  meaning: "The client registered at the provider.",
});
const CLIENT_SECRET = perProvider("CLIENT_SECRET", {
  default: "required per provider",
  meaning: "The client's secret at the provider. Never echoed or logged.",
});
const ISSUER = perProvider("ISSUER", {
  default: "the preset's",
  meaning:
    "The provider's issuer URL (discovery at `/.well-known/openid-configuration`); required for a generic " +
    "provider. https, or http on a loopback host.",
});
const TENANT = perProvider(
  "TENANT",
  { default: "required for `microsoft`", meaning: "The Entra ID directory's tenant id or domain." },
  "UPSTREAM_MICROSOFT_TENANT",
);
const SCOPES = perProvider("SCOPES", {
  default: `\`${OIDC_SCOPES}\` (GitHub: \`${GITHUB_SCOPES}\`)`,
  meaning: "The scopes asked for.",
});
const ALLOWED_DOMAINS = perProvider("ALLOWED_DOMAINS", {
  default: "unset (any)",
  meaning: "Comma-separated e-mail domains: only verified addresses of these may sign in with the provider.",
});
const LABEL = perProvider("LABEL", {
  default: "the preset's name, else the name",
  meaning: 'The button\'s words: "Sign in with LABEL"; at most 60 characters.',
});
const WEB_URL = perProvider(
  "WEB_URL",
  { default: `\`${GITHUB_WEB_URL}\``, meaning: "GitHub's web origin (GitHub Enterprise)." },
  "UPSTREAM_GITHUB_WEB_URL",
);
const API_URL = perProvider(
  "API_URL",
  { default: `\`${GITHUB_API_URL}\``, meaning: "GitHub's API base (GitHub Enterprise)." },
  "UPSTREAM_GITHUB_API_URL",
);

const UPSTREAM_AUTO_LINK: SettingDoc = {
  name: "UPSTREAM_AUTO_LINK",
  default: "`false`",
  meaning:
    "`true`: an upstream sign-in whose provider asserts a verified address an account already has is linked " +
    "to it without the account's password, when the account's own address is verified (never into an " +
    "account whose address nobody proved).",
};

const UPSTREAM_KEEP_TOKENS: SettingDoc = {
  name: "UPSTREAM_KEEP_TOKENS",
  default: "`false`",
  meaning:
    "`true`: keep the provider's tokens with the identity, sealed with `MFA_ENCRYPTION_KEY` (which it then needs).",
};

const DEFAULT_TIMEOUT_MS = 5000;
const UPSTREAM_TIMEOUT_MS = integer({
  name: "UPSTREAM_TIMEOUT_MS",
  fallback: DEFAULT_TIMEOUT_MS,
  min: 100,
  max: 60_000,
  meaning: "Bound on every call to a provider; past it the sign-in ends on an error page.",
});

export const UPSTREAM_SETTINGS = section(
  "Upstream sign-in",
  "src/upstream/settings.ts",
  [
    UPSTREAM_PROVIDERS,
    CLIENT_ID,
    CLIENT_SECRET,
    ISSUER,
    TENANT,
    SCOPES,
    ALLOWED_DOMAINS,
    LABEL,
    WEB_URL,
    API_URL,
    UPSTREAM_AUTO_LINK,
    UPSTREAM_KEEP_TOKENS,
    UPSTREAM_TIMEOUT_MS,
  ],
  "`<NAME>` is a name listed in `UPSTREAM_PROVIDERS`, upper-cased, with `-` as `_`: " +
    "`UPSTREAM_PROVIDERS=google,github` reads `UPSTREAM_GOOGLE_CLIENT_ID`, `UPSTREAM_GITHUB_CLIENT_ID`, ...",
);

function requiredValue(env: Env, name: string, why: string): string {
  const raw = envValue(env, name);
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
  const named = (setting: ProviderSetting) => `${prefix}${setting.suffix}`;
  const preset = PRESETS[name];
  const common = {
    name,
    label: envValue(env, named(LABEL)) ?? preset?.label ?? name,
    clientId: requiredValue(env, named(CLIENT_ID), `for the upstream provider ${name}`),
    clientSecret: requiredValue(env, named(CLIENT_SECRET), `for the upstream provider ${name}`),
    allowedDomains: domains(named(ALLOWED_DOMAINS), envValue(env, named(ALLOWED_DOMAINS))),
  };
  if (common.label.length > 60) throw new ConfigError(named(LABEL), "must be at most 60 characters");
  if (name === "github") {
    return {
      kind: "github",
      ...common,
      scopes: envValue(env, named(SCOPES)) ?? GITHUB_SCOPES,
      webUrl: providerUrl(named(WEB_URL), envValue(env, named(WEB_URL)) ?? GITHUB_WEB_URL),
      apiUrl: providerUrl(named(API_URL), envValue(env, named(API_URL)) ?? GITHUB_API_URL),
    };
  }
  let issuer = envValue(env, named(ISSUER)) ?? preset?.issuer;
  if (issuer === undefined && name === "microsoft") {
    // Entra ID's multi-tenant issuers ("common", "organizations") are templates no ID token matches.
    const tenant = requiredValue(env, named(TENANT), "for Microsoft Entra ID (the directory's tenant id)");
    if (!/^[0-9a-f-]{36}$|^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(tenant) || ["common", "organizations"].includes(tenant))
      throw new ConfigError(named(TENANT), `must be a tenant id or domain, got "${tenant}"`);
    issuer = `https://login.microsoftonline.com/${tenant}/v2.0`;
  }
  if (issuer === undefined) throw new ConfigError(named(ISSUER), `is required for the upstream provider ${name}`);
  return {
    kind: "oidc",
    ...common,
    issuer: providerUrl(named(ISSUER), issuer),
    scopes: envValue(env, named(SCOPES)) ?? OIDC_SCOPES,
  };
}

export function parseUpstreamConfig(env: Env, parseBoolean: (name: string, raw: string) => boolean): UpstreamConfig {
  const names = (envValue(env, UPSTREAM_PROVIDERS.name) ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  for (const name of names)
    if (!/^[a-z][a-z0-9-]{0,31}$/.test(name))
      throw new ConfigError("UPSTREAM_PROVIDERS", `must be a comma-separated list of short names, got "${name}"`);
  if (new Set(names).size !== names.length) throw new ConfigError("UPSTREAM_PROVIDERS", "names a provider twice");
  // Read here rather than by UPSTREAM_TIMEOUT_MS.read: at most six digits, as it always was.
  const { min, max } = UPSTREAM_TIMEOUT_MS;
  const timeout = envValue(env, UPSTREAM_TIMEOUT_MS.name) ?? String(DEFAULT_TIMEOUT_MS);
  const timeoutMs = /^\d{1,6}$/.test(timeout) ? Number(timeout) : Number.NaN;
  if (!(timeoutMs >= min && timeoutMs <= max))
    throw new ConfigError(UPSTREAM_TIMEOUT_MS.name, `must be a whole number from ${min} to ${max}, got "${timeout}"`);
  return {
    providers: names.map((name) => parseProvider(env, name)),
    autoLink: parseBoolean(UPSTREAM_AUTO_LINK.name, envValue(env, UPSTREAM_AUTO_LINK.name) ?? "false"),
    keepTokens: parseBoolean(UPSTREAM_KEEP_TOKENS.name, envValue(env, UPSTREAM_KEEP_TOKENS.name) ?? "false"),
    timeoutMs,
  };
}
