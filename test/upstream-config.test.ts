// The upstream providers' settings (issue 25): absent by default; presets
// needing only a client id and secret (Microsoft its tenant); a generic
// provider by its issuer; GitHub's endpoints settable; each bad value stops
// the service with one line naming the setting.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError } from "../src/errors.ts";
import { parseUpstreamConfig } from "../src/upstream/settings.ts";

const bool = (_name: string, raw: string) => raw === "true";
const SECRET = { CLIENT_ID: "id", CLIENT_SECRET: "secret" };
const of = (name: string, values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([key, value]) => [`UPSTREAM_${name}_${key}`, value]));

describe("UPSTREAM_* settings", () => {
  test("none by default", () => {
    assert.deepEqual(parseUpstreamConfig({}, bool), {
      providers: [],
      autoLink: false,
      keepTokens: false,
      timeoutMs: 5000,
    });
  });

  test("presets, a generic provider and GitHub", () => {
    const config = parseUpstreamConfig(
      {
        UPSTREAM_PROVIDERS: "google, microsoft,github,corp",
        ...of("GOOGLE", { ...SECRET, ALLOWED_DOMAINS: "Example.com, example.org" }),
        ...of("MICROSOFT", { ...SECRET, TENANT: "00000000-0000-0000-0000-000000000001" }),
        ...of("GITHUB", { ...SECRET, WEB_URL: "http://127.0.0.1:9000", API_URL: "http://127.0.0.1:9000/api/" }),
        ...of("CORP", { ...SECRET, ISSUER: "https://id.corp.example/realms/main/", LABEL: "Corp SSO" }),
        UPSTREAM_AUTO_LINK: "true",
        UPSTREAM_TIMEOUT_MS: "3000",
      },
      bool,
    );
    const common = { clientId: "id", clientSecret: "secret" };
    assert.deepEqual(config, {
      providers: [
        {
          kind: "oidc",
          name: "google",
          label: "Google",
          ...common,
          allowedDomains: ["example.com", "example.org"],
          issuer: "https://accounts.google.com",
          scopes: "openid email profile",
        },
        {
          kind: "oidc",
          name: "microsoft",
          label: "Microsoft",
          ...common,
          allowedDomains: [],
          issuer: "https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001/v2.0",
          scopes: "openid email profile",
        },
        {
          kind: "github",
          name: "github",
          label: "GitHub",
          ...common,
          allowedDomains: [],
          scopes: "read:user user:email",
          webUrl: "http://127.0.0.1:9000",
          apiUrl: "http://127.0.0.1:9000/api",
        },
        {
          kind: "oidc",
          name: "corp",
          label: "Corp SSO",
          ...common,
          allowedDomains: [],
          issuer: "https://id.corp.example/realms/main",
          scopes: "openid email profile",
        },
      ],
      autoLink: true,
      keepTokens: false,
      timeoutMs: 3000,
    });
  });

  for (const [env, setting] of [
    [{ UPSTREAM_PROVIDERS: "google", UPSTREAM_GOOGLE_CLIENT_ID: "id" }, "UPSTREAM_GOOGLE_CLIENT_SECRET"],
    [{ UPSTREAM_PROVIDERS: "corp", ...of("CORP", SECRET) }, "UPSTREAM_CORP_ISSUER"],
    [
      { UPSTREAM_PROVIDERS: "corp", ...of("CORP", { ...SECRET, ISSUER: "http://id.corp.example" }) },
      "UPSTREAM_CORP_ISSUER",
    ],
    [{ UPSTREAM_PROVIDERS: "microsoft", ...of("MICROSOFT", SECRET) }, "UPSTREAM_MICROSOFT_TENANT"],
    [
      { UPSTREAM_PROVIDERS: "microsoft", ...of("MICROSOFT", { ...SECRET, TENANT: "common" }) },
      "UPSTREAM_MICROSOFT_TENANT",
    ],
    [{ UPSTREAM_PROVIDERS: "google,google" }, "UPSTREAM_PROVIDERS"],
    [{ UPSTREAM_PROVIDERS: "Bad Name" }, "UPSTREAM_PROVIDERS"],
    [
      { UPSTREAM_PROVIDERS: "google", ...of("GOOGLE", { ...SECRET, ALLOWED_DOMAINS: "not a domain" }) },
      "UPSTREAM_GOOGLE_ALLOWED_DOMAINS",
    ],
    [{ UPSTREAM_TIMEOUT_MS: "10" }, "UPSTREAM_TIMEOUT_MS"],
  ] as const) {
    test(`a bad value names ${setting}`, () => {
      assert.throws(
        () => parseUpstreamConfig(env as Record<string, string>, bool),
        (error: unknown) => error instanceof ConfigError && error.setting === setting,
      );
    });
  }
});
