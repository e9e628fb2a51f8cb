// The settings of OAuth clients and OpenID Connect: the RSA keys that sign ID
// tokens (generated on SQLite, where PUBLIC_URL or else the listen address
// names the issuer; without them OpenID Connect is off), the resource servers that may introspect every
// token, and dynamic client registration (RFC 7591) with what a registrant
// may ask for (oidc/registration-policy.ts). Declared here, beside the
// clients; config.ts composes them.
import { ConfigError } from "../errors.ts";
import { type Env, flag, section, setting, text } from "../settings/declare.ts";
import { type KeyFileSetting, MIN_SECRET_BYTES, resolvePrivateKeys } from "../settings/secret-files.ts";
import type { DatabaseLocation } from "../store/settings.ts";
import { GRANT_TYPES, type GrantType, isScopeToken } from "./clients.ts";
import { DEFAULT_DYNAMIC_GRANT_TYPES, DEFAULT_DYNAMIC_SCOPES } from "./registration-policy.ts";

export interface IntrospectionClient {
  id: string;
  secret: string;
}

export interface OidcSettings {
  oidcSigningKeys: string[];
  introspectionClients: IntrospectionClient[];
  dynamicRegistration?: { initialAccessToken: string; grantTypes: readonly GrantType[]; scopes: readonly string[] };
}

/**
 * The RSA keys that sign ID tokens (RS256, which OpenID Connect Discovery requires of every provider),
 * whatever SIGNING_ALGORITHM signs access tokens with.
 */
const OIDC_SIGNING_KEY_FILE = text({
  name: "OIDC_SIGNING_KEY_FILE",
  default: "generated (SQLite)",
  meaning:
    "RSA private key file(s) (PEM, at least 2048 bits) that sign ID tokens (RS256), separated by commas for " +
    "rotation (the first signs, all are published in the JWK Set). Unset with an SQLite file: generated in " +
    "`oidc-signing-key-rs256.pem` beside the database, owner-only (without `PUBLIC_URL` the issuer is the listen " +
    "address, and a start-up line says production needs `PUBLIC_URL`); with `sqlite::memory:` a per-process " +
    "key; unset with PostgreSQL, OpenID " +
    "Connect is off (no authorization endpoint, no discovery) and a notice says so. `openssl genpkey " +
    "-algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out oidc.pem`.",
});

/**
 * `id:secret` pairs separated by commas. The secret is a credential like SIGNING_SECRET, so it has
 * the same minimum length; the error never echoes it.
 */
const INTROSPECTION_CLIENTS = setting({
  name: "INTROSPECTION_CLIENTS",
  default: "unset",
  meaning:
    "Comma-separated `client-id:secret` pairs (secrets of at least 32 bytes): resource servers that may call " +
    "`POST /auth/introspect` with HTTP Basic and see every token. Admins may call it with their token either " +
    "way; registered clients marked `resource_server` see every token too, other registered clients only " +
    "their own.",
  parse(raw, name): IntrospectionClient[] {
    const clients = raw.split(",").map((entry, i) => {
      const colon = entry.indexOf(":");
      const id = entry.slice(0, colon).trim();
      const secret = entry.slice(colon + 1).trim();
      if (colon < 0 || !/^[\w.-]{1,64}$/.test(id))
        throw new ConfigError(name, `entry ${i + 1} must be "client-id:secret" with a plain client id`);
      if (Buffer.byteLength(secret, "utf8") < MIN_SECRET_BYTES)
        throw new ConfigError(name, `the secret of "${id}" must be at least ${MIN_SECRET_BYTES} bytes`);
      return { id, secret };
    });
    if (new Set(clients.map((client) => client.id)).size !== clients.length)
      throw new ConfigError(name, "a client id appears twice");
    return clients;
  },
});

const DYNAMIC_CLIENT_REGISTRATION = flag({
  name: "DYNAMIC_CLIENT_REGISTRATION",
  fallback: "off",
  meaning:
    "`on`: RFC 7591 dynamic client registration at `POST /auth/register`, behind `REGISTRATION_ACCESS_TOKEN` " +
    "(see [OAuth clients](../your-app/clients.md)).",
});

const REGISTRATION_ACCESS_TOKEN = text({
  name: "REGISTRATION_ACCESS_TOKEN",
  default: "unset",
  meaning:
    "The initial access token registrants send as a bearer token; at least 32 bytes; required when " +
    "`DYNAMIC_CLIENT_REGISTRATION=on`, ignored otherwise. A secret: never echoed or logged.",
});

/** The entries of a list setting: separated by commas or spaces, empty ones dropped, each once. */
const listEntries = (raw: string) => [...new Set(raw.split(/[\s,]+/).filter((entry) => entry !== ""))];

/** Grant types a client can have; refresh_token only beside authorization_code. */
const DYNAMIC_CLIENT_GRANT_TYPES = setting({
  name: "DYNAMIC_CLIENT_GRANT_TYPES",
  default: `\`${DEFAULT_DYNAMIC_GRANT_TYPES.join(",")}\``,
  meaning:
    "The grant types a dynamic registration may ask for (comma- or space-separated, among " +
    `${GRANT_TYPES.map((grant) => `\`${grant}\``).join(", ")}; \`refresh_token\` only with ` +
    "`authorization_code`); others are refused (400 `invalid_client_metadata`). Checked at start even while " +
    "registration is off.",
  parse(raw, name): readonly GrantType[] {
    const grantTypes = listEntries(raw);
    const unknown = grantTypes.find((grant) => !(GRANT_TYPES as readonly string[]).includes(grant));
    if (unknown !== undefined)
      throw new ConfigError(name, `must list grant types among ${GRANT_TYPES.join(", ")}; got "${unknown}"`);
    if (grantTypes.includes("refresh_token") && !grantTypes.includes("authorization_code"))
      throw new ConfigError(name, "refresh_token only comes with authorization_code");
    return grantTypes as GrantType[];
  },
});

/** Scope tokens (RFC 6749 section 3.3), separated by spaces or commas. */
const DYNAMIC_CLIENT_SCOPES = setting({
  name: "DYNAMIC_CLIENT_SCOPES",
  default: `\`${DEFAULT_DYNAMIC_SCOPES.join(" ")}\``,
  meaning:
    "The scopes a dynamic registration may ask for (space- or comma-separated scope tokens); others are " +
    "refused (400 `invalid_client_metadata`). Checked at start even while registration is off.",
  parse(raw, name): readonly string[] {
    const scopes = listEntries(raw);
    const bad = scopes.find((scope) => !isScopeToken(scope));
    if (bad !== undefined) throw new ConfigError(name, `must list scope tokens; "${bad.slice(0, 64)}" is not one`);
    return scopes;
  },
});

export const OIDC_SETTINGS = section("OAuth clients and OpenID Connect", "src/oidc/settings.ts", [
  OIDC_SIGNING_KEY_FILE,
  INTROSPECTION_CLIENTS,
  DYNAMIC_CLIENT_REGISTRATION,
  REGISTRATION_ACCESS_TOKEN,
  DYNAMIC_CLIENT_GRANT_TYPES,
  DYNAMIC_CLIENT_SCOPES,
]);

const OIDC_SIGNING_KEY: KeyFileSetting = {
  name: OIDC_SIGNING_KEY_FILE.name,
  fileName: () => "oidc-signing-key-rs256.pem",
};

export function readOidcSettings(
  env: Env,
  where: { database: DatabaseLocation; cwd: string; publicUrl: string | undefined; notices: string[] },
): OidcSettings {
  const settings: OidcSettings = {
    oidcSigningKeys: resolveOidcSigningKeys(env, where),
    introspectionClients: INTROSPECTION_CLIENTS.optional(env) ?? [],
  };
  const registration = readDynamicRegistration(env);
  if (registration) settings.dynamicRegistration = registration;
  return settings;
}

/**
 * OIDC_SIGNING_KEY_FILE, or a generated key on SQLite. Without PUBLIC_URL the issuer is the listen
 * address (issue 35: the admin console signs in through OpenID Connect right after `npm start`), and
 * one notice says that relying parties elsewhere need PUBLIC_URL. With PostgreSQL and no file, OpenID Connect is off (one notice): every
 * instance must sign ID tokens with one key, and a key kept in the database would be readable by
 * anyone who can read a backup of it.
 */
function resolveOidcSigningKeys(
  env: Env,
  {
    database,
    cwd,
    publicUrl,
    notices,
  }: { database: DatabaseLocation; cwd: string; publicUrl?: string; notices: string[] },
): string[] {
  const raw = OIDC_SIGNING_KEY_FILE.raw(env);
  const keys = resolvePrivateKeys(OIDC_SIGNING_KEY, "RS256", raw, database, cwd, notices);
  if (keys !== undefined) {
    if (publicUrl === undefined) notices.push(OIDC_WITHOUT_PUBLIC_URL);
    return keys;
  }
  notices.push(
    "OIDC_SIGNING_KEY_FILE is unset: OpenID Connect (authorization endpoint, ID tokens) is off until it names an " +
      "RSA key shared by every instance",
  );
  return [];
}

/** The start-up warning of an OpenID Provider whose issuer is only the listen address. */
export const OIDC_WITHOUT_PUBLIC_URL =
  "PUBLIC_URL is unset: OpenID Connect names the listen address as its issuer, which only this machine reaches; " +
  "production needs PUBLIC_URL (the address users and apps reach)";

/**
 * Dynamic client registration is off unless DYNAMIC_CLIENT_REGISTRATION is on, and then needs its
 * initial access token: a credential like SIGNING_SECRET, with its minimum length, never echoed. What
 * a registrant may ask for is checked whether or not registration is on, so that a bad value is found
 * before the day it is turned on.
 */
function readDynamicRegistration(env: Env): OidcSettings["dynamicRegistration"] {
  const on = DYNAMIC_CLIENT_REGISTRATION.read(env);
  const grantTypes = DYNAMIC_CLIENT_GRANT_TYPES.optional(env) ?? DEFAULT_DYNAMIC_GRANT_TYPES;
  const scopes = DYNAMIC_CLIENT_SCOPES.optional(env) ?? DEFAULT_DYNAMIC_SCOPES;
  const token = REGISTRATION_ACCESS_TOKEN.raw(env);
  if (!on) return undefined;
  if (token === undefined)
    throw new ConfigError(REGISTRATION_ACCESS_TOKEN.name, "is required when DYNAMIC_CLIENT_REGISTRATION is on");
  if (Buffer.byteLength(token, "utf8") < MIN_SECRET_BYTES)
    throw new ConfigError(REGISTRATION_ACCESS_TOKEN.name, `must be at least ${MIN_SECRET_BYTES} bytes`);
  return { initialAccessToken: token, grantTypes, scopes };
}
