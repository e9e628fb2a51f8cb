// GET /admin/settings: the configuration as the service read it at start-up,
// section by section from the same declarations as the configuration
// reference (config.ts's SETTINGS_SECTIONS): each setting's name, value,
// default and whether it was set, and which features are on. A secret (or a
// value that may carry one, such as a database URL with its password) is
// shown as "set" or "unset" only: never its value, a hash, a prefix or a
// length, which would help whoever reads the answer to guess or confirm it.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import { type Config, SETTINGS_SECTIONS } from "../config.ts";
import { NOT_ENOUGH_PRIVILEGES } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { SettingDoc } from "../settings/declare.ts";

export interface SettingsRouteOptions {
  config: Config;
  /** Whether OpenID Connect is on (it has ID-token keys). */
  oidc: boolean;
}

/**
 * The settings whose value is, or may carry, a secret: those named for one (…_SECRET, …_PASSWORD,
 * …_ACCESS_TOKEN, …_ENCRYPTION_KEY; not PASSWORD_LIST_CHECK or WEBHOOK_SECRET_GRACE_SECONDS, which only
 * speak of one); the introspection clients' `id:secret` pairs; URLs that may hold credentials (database,
 * Redis, SMTP). test/admin-settings.test.ts pins the list.
 */
const SECRET =
  /(^|_)(SECRET|PASSWORD|ACCESS_TOKEN|ENCRYPTION_KEY)$|^INTROSPECTION_CLIENTS$|^(DATABASE|REDIS|MAIL)_URL$/;

export const isSecretSetting = (name: string) => SECRET.test(name);

const SettingOut = Type.Object({
  name: Type.String({ examples: ["PORT"] }),
  set: Type.Boolean({ description: "Whether the environment gave it a value." }),
  secret: Type.Boolean({ description: "A secret's value is never shown: `value` is `set` or `unset`." }),
  value: Type.Union([Type.String(), Type.Null()], {
    description:
      "The value as given; unset, the default when it is a plain value, else null. For a secret: `set` or `unset`.",
  }),
  default: Type.String({ description: "The default as the configuration reference words it (Markdown)." }),
});

export const SettingsOut = Type.Object(
  {
    sections: Type.Array(
      Type.Object({
        title: Type.String(),
        module: Type.String(),
        settings: Type.Array(SettingOut),
      }),
    ),
    features: Type.Object({
      database: Type.Union([Type.Literal("sqlite"), Type.Literal("postgres")]),
      redis: Type.Boolean({ description: "Rate-limit counters and DPoP replay cache in Redis." }),
      oidc: Type.Boolean({ description: "The OpenID Connect provider is on (it has ID-token keys)." }),
      upstream_providers: Type.Array(Type.String(), { description: "Upstream sign-in providers, by name." }),
      webhooks: Type.Boolean({ description: "Always true: admins may register webhook endpoints." }),
      mfa_encryption_key: Type.Boolean({ description: "Authenticator apps can be set up (the key is set)." }),
      mail_transport: Type.Union([Type.Literal("smtp"), Type.Literal("file")]),
      dynamic_client_registration: Type.Boolean(),
      metrics: Type.Boolean({ description: "Prometheus metrics are served on their own port." }),
      signing_algorithm: Type.String({ examples: ["HS256"] }),
    }),
  },
  { $id: "AdminSettings", description: "The effective configuration. Never a secret's value." },
);

/** A default written as one plain value in backticks (`8000`), else undefined (words, or none). */
function plainDefault(text: string): string | undefined {
  return /^`[^`]*`$/.test(text) ? text.slice(1, -1) : undefined;
}

function settingOut(doc: SettingDoc, name: string, given: Readonly<Record<string, string>>) {
  const raw = given[name];
  const secret = isSecretSetting(name);
  const set = raw !== undefined;
  const value = secret ? (set ? "set" : "unset") : (raw ?? plainDefault(doc.default) ?? null);
  return { name, set, secret, value, default: doc.default };
}

/** A setting named after a value (UPSTREAM_<NAME>_LABEL) is listed once per name it was given under. */
function settingsOf(doc: SettingDoc, given: Readonly<Record<string, string>>) {
  if (!doc.name.includes("<NAME>")) return [settingOut(doc, doc.name, given)];
  const pattern = new RegExp(`^${doc.name.replaceAll("<NAME>", "[A-Z0-9_]+")}$`);
  const names = Object.keys(given)
    .filter((name) => pattern.test(name))
    .sort();
  return names.length === 0 ? [settingOut(doc, doc.name, given)] : names.map((name) => settingOut(doc, name, given));
}

export function settingsView(config: Config, oidc: boolean) {
  const given = config.settingsGiven ?? {};
  return {
    sections: SETTINGS_SECTIONS.map(({ title, module, settings }) => ({
      title,
      module,
      settings: settings.flatMap((doc) => settingsOf(doc, given)),
    })),
    features: {
      database: config.database.kind,
      redis: config.redis !== undefined,
      oidc,
      upstream_providers: (config.upstream?.providers ?? []).map((provider) => provider.name),
      webhooks: true,
      mfa_encryption_key: config.mfa.encryptionKeys.length > 0,
      mail_transport: config.mail.transport.kind,
      dynamic_client_registration: config.dynamicRegistration !== undefined,
      metrics: config.metrics !== undefined,
      signing_algorithm: config.signingAlgorithm,
    },
  };
}

export const settingsRoutes: FastifyPluginAsyncTypebox<SettingsRouteOptions & { guards: Guards }> = async (
  app,
  { config, oidc, guards },
) => {
  // The configuration does not change while the process runs: built once.
  const view = settingsView(config, oidc);
  app.get(
    "/admin/settings",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "getAdminSettings",
        tags: ["admin"],
        summary: "The effective configuration (admins)",
        description:
          "Every setting by section, as the service read it at start-up: its value, default and whether it was " +
          "set; secrets (and URLs that may carry credentials) only as `set` or `unset`. Then which features are on.",
        security: BEARER_SECURITY,
        response: {
          200: SettingsOut,
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
        },
      },
    },
    async function getAdminSettings() {
      return view;
    },
  );
};
