// The admin console's settings (issue 35): whether the service serves its
// console at /admin (and registers the console's OpenID Connect client), and
// whether the console refuses an admin without a second factor. Declared
// here, beside the console; config.ts composes them.
import { type Env, flag, section } from "../settings/declare.ts";

export interface AdminConsoleSettings {
  /** ADMIN_CONSOLE: the console at /admin and its client; on by default. */
  enabled: boolean;
  /** ADMIN_CONSOLE_REQUIRE_MFA: no console token without a second factor (oidc/second-factor-rule.ts). */
  requireMfa: boolean;
}

const ADMIN_CONSOLE = flag({
  name: "ADMIN_CONSOLE",
  fallback: "on",
  meaning:
    "`on`: the admin console at `/admin`, a first-party public OpenID Connect client of this service (registered " +
    "at start, client_id `" +
    "00000000-0000-7000-8000-000000000035`) that admins sign in to through the sign-in page. Needs OpenID " +
    "Connect (always on SQLite; `OIDC_SIGNING_KEY_FILE` on PostgreSQL). `off`: no console and no registration " +
    "(a client registered before stays until deleted). See [Admin console](../operating/admin-console.md).",
});

const ADMIN_CONSOLE_REQUIRE_MFA = flag({
  name: "ADMIN_CONSOLE_REQUIRE_MFA",
  fallback: "off",
  meaning:
    "`on`: the console's client gets tokens only for a sign-in with a second factor (authenticator app, recovery " +
    "code or passkey) by a user who has one: its authorization request sends a session without one to sign in " +
    "again, and the token endpoint refuses its code and refresh grants otherwise (`invalid_grant`, saying to add " +
    "one on the security page, `/account/security`). The admin API is unchanged for every other token.",
});

export const ADMIN_CONSOLE_SETTINGS = section("Admin console", "src/admin/settings.ts", [
  ADMIN_CONSOLE,
  ADMIN_CONSOLE_REQUIRE_MFA,
]);

export function readAdminConsoleSettings(env: Env): AdminConsoleSettings {
  return { enabled: ADMIN_CONSOLE.read(env), requireMfa: ADMIN_CONSOLE_REQUIRE_MFA.read(env) };
}
