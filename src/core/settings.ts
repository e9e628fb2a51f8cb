// The token endpoint's settings: whether its errors also speak RFC 6749 for
// OAuth client libraries. Declared here, beside the endpoint; config.ts
// composes them.
import { type Env, flag, section } from "../settings/declare.ts";

const OAUTH_ERROR_FIELDS = flag({
  name: "OAUTH_ERROR_FIELDS",
  fallback: "off",
  meaning:
    "`on`: the errors of `/auth/token` and `/auth/revoke` also carry RFC 6749's `error` and `error_description` " +
    "beside `detail`, for OAuth client libraries (see " +
    "[OAuth client libraries](../your-app/first-party-apps.md#oauth-client-libraries)). Off, every error body is " +
    'the spec\'s `{"detail": ...}` alone.',
});

export const CORE_SETTINGS = section("The token endpoint", "src/core/settings.ts", [OAUTH_ERROR_FIELDS]);

export function readCoreSettings(env: Env): { oauthErrorFields: boolean } {
  return { oauthErrorFields: OAUTH_ERROR_FIELDS.read(env) };
}
