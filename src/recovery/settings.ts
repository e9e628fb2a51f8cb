// The account recovery settings: how long the mailed links work, whether an
// address must be verified, and where the links point. Declared here, beside
// password reset and address verification; config.ts composes them.
import { RESET_PAGE_PATH, UPSTREAM_LINK_PAGE_PATH, VERIFY_PAGE_PATH } from "../mail/messages.ts";
import { REVIEW_PAGE_PATH } from "../mail/notices.ts";
import { type Env, flag, integer, parseBaseUrl, section, setting } from "../settings/declare.ts";

export interface AccountRecoveryConfig {
  passwordResetTtlSeconds: number;
  emailVerificationTtlSeconds: number;
  /** When true, an account whose address is not verified cannot log in, and e-mail changes wait for confirmation. */
  verificationRequired: boolean;
  /** Where the links in mails point: the service's own pages by default, or a team's own app. */
  linkBaseUrl: string;
}

const PASSWORD_RESET_TTL_SECONDS = integer({
  name: "PASSWORD_RESET_TTL_SECONDS",
  fallback: 1800,
  default: "`1800` (30 minutes)",
  min: 60,
  max: 86_400,
  meaning: "How long a reset link works.",
});

const EMAIL_VERIFICATION_TTL_SECONDS = integer({
  name: "EMAIL_VERIFICATION_TTL_SECONDS",
  fallback: 86_400,
  default: "`86400` (24 hours)",
  min: 60,
  max: 30 * 86_400,
  meaning: "How long a verification link works.",
});

const EMAIL_VERIFICATION_REQUIRED = flag({
  name: "EMAIL_VERIFICATION_REQUIRED",
  fallback: "false",
  meaning:
    "`true`: an unverified account cannot log in (403 for the right password), and a user's e-mail change " +
    "waits for the new address to confirm.",
});

const ACCOUNT_LINK_BASE_URL = setting({
  name: "ACCOUNT_LINK_BASE_URL",
  default: "`PUBLIC_URL` (else the listen address)",
  meaning:
    `Where mailed links point: \`${RESET_PAGE_PATH}\`, \`${VERIFY_PAGE_PATH}\`, \`${UPSTREAM_LINK_PAGE_PATH}\` ` +
    `(linking an upstream sign-in) and \`${REVIEW_PAGE_PATH}\` (in security notifications) are appended. ` +
    "Point it at your own app to handle them there.",
  parse: parseBaseUrl,
});

export const RECOVERY_SETTINGS = section("Account recovery", "src/recovery/settings.ts", [
  PASSWORD_RESET_TTL_SECONDS,
  EMAIL_VERIFICATION_TTL_SECONDS,
  EMAIL_VERIFICATION_REQUIRED,
  ACCOUNT_LINK_BASE_URL,
]);

export function readRecoverySettings(env: Env, linkBase: string): AccountRecoveryConfig {
  return {
    passwordResetTtlSeconds: PASSWORD_RESET_TTL_SECONDS.read(env),
    emailVerificationTtlSeconds: EMAIL_VERIFICATION_TTL_SECONDS.read(env),
    verificationRequired: EMAIL_VERIFICATION_REQUIRED.read(env),
    linkBaseUrl: ACCOUNT_LINK_BASE_URL.read(env, linkBase),
  };
}
