// Sign-in by mail without a password (issue 37): which of the mail's two ways
// in are offered. Declared here; config.ts composes it.
import { ConfigError } from "../errors.ts";
import { type Env, section, setting } from "../settings/declare.ts";

export type PasswordlessMail = "link" | "code" | "both" | "off";
const VALUES: readonly PasswordlessMail[] = ["link", "code", "both", "off"];

const PASSWORDLESS_MAIL = setting<PasswordlessMail>({
  name: "PASSWORDLESS_MAIL",
  default: "`both` when `MAIL_URL` names an SMTP server, else `off`",
  meaning:
    "Sign-in by mail without a password: `link` (a one-use link), `code` (a 6-digit code), `both` (one mail " +
    "with both), or `off`. Any value but `off` needs `MAIL_URL`. See " +
    "[Sign-in by mail](../accounts/mail-sign-in.md).",
  parse(raw, name) {
    const value = raw.toLowerCase() as PasswordlessMail;
    if (!VALUES.includes(value)) throw new ConfigError(name, `must be one of ${VALUES.join(", ")}, got "${raw}"`);
    return value;
  },
});

export const PASSWORDLESS_SETTINGS = section("Sign-in by mail", "src/passwordless/settings.ts", [PASSWORDLESS_MAIL]);

/** The mode; a value other than `off` without MAIL_URL stops start-up naming the setting. */
export function readPasswordlessSettings(env: Env, mailUrl: string | undefined): PasswordlessMail {
  const given = PASSWORDLESS_MAIL.optional(env);
  if (given === undefined) return mailUrl !== undefined && /^smtps?:/i.test(mailUrl) ? "both" : "off";
  if (given !== "off" && mailUrl === undefined)
    throw new ConfigError("PASSWORDLESS_MAIL", `is "${given}" but MAIL_URL is not set: the mails would go nowhere`);
  return given;
}
