// The users' settings: whether anyone may sign up, and the first admin made
// at start-up (whose password follows the rules of every new password).
// Declared here, beside the users; config.ts composes them.
import { createPasswordPolicy } from "../auth/password-policy.ts";
import { ConfigError } from "../errors.ts";
import { type Env, flag, section, text } from "../settings/declare.ts";

export interface UserSettings {
  /** Anyone may POST /users; when false only admins create users. */
  signupOpen: boolean;
  /** Created (or promoted) at start-up when no active admin exists. */
  firstAdmin?: { email: string; password: string };
}

const SIGNUP_OPEN = flag({
  name: "SIGNUP_OPEN",
  fallback: "true",
  meaning:
    "`false` closes sign-up: then only admins create users (`POST /users` with their token, or the CLI), and " +
    "an upstream sign-in that matches no account is refused.",
});

const FIRST_ADMIN_EMAIL = text({
  name: "FIRST_ADMIN_EMAIL",
  default: "unset",
  meaning:
    "With `FIRST_ADMIN_PASSWORD`: both or neither. At start-up, while no active admin exists, creates this " +
    "admin; if the e-mail already belongs to an account, that account is promoted and its password replaced " +
    "by this one (so whoever registered the address first does not become admin). Once an admin exists they " +
    "do nothing, so they can stay set.",
});

const FIRST_ADMIN_PASSWORD = text({
  name: "FIRST_ADMIN_PASSWORD",
  default: "unset",
  meaning:
    "The first admin's password, taken exactly as given (spaces too) and never echoed: 8 to 256 characters, " +
    "refused as every new password is (on the list of common and breached ones, or containing the e-mail).",
});

export const USER_SETTINGS = section("Users", "src/users/settings.ts", [
  SIGNUP_OPEN,
  FIRST_ADMIN_EMAIL,
  FIRST_ADMIN_PASSWORD,
]);

export function readUserSettings(env: Env): UserSettings {
  return {
    signupOpen: SIGNUP_OPEN.read(env),
    // The password is taken exactly as given: not trimmed, an empty value only counts as unset.
    firstAdmin: parseFirstAdmin(FIRST_ADMIN_EMAIL.raw(env), env[FIRST_ADMIN_PASSWORD.name]),
  };
}

/** The bootstrap admin's password follows the same rules as every other new password. */
export function checkFirstAdminPassword(firstAdmin: UserSettings["firstAdmin"], listCheck: boolean): void {
  if (!firstAdmin) return;
  const problem = createPasswordPolicy({ listCheck }).problem(firstAdmin.password, firstAdmin.email);
  if (problem) throw new ConfigError(FIRST_ADMIN_PASSWORD.name, problem);
}

/** Both or neither; the password is taken exactly as given and never echoed. */
function parseFirstAdmin(email: string | undefined, password: string | undefined): UserSettings["firstAdmin"] {
  if (email === undefined && (password === undefined || password === "")) return undefined;
  if (email === undefined) throw new ConfigError("FIRST_ADMIN_EMAIL", "is required when FIRST_ADMIN_PASSWORD is set");
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) {
    throw new ConfigError("FIRST_ADMIN_EMAIL", "must be an e-mail address");
  }
  if (password === undefined || password === "") {
    throw new ConfigError("FIRST_ADMIN_PASSWORD", "is required when FIRST_ADMIN_EMAIL is set");
  }
  const length = [...password].length;
  if (length < 8 || length > 256)
    throw new ConfigError("FIRST_ADMIN_PASSWORD", `must be 8 to 256 characters, got ${length}`);
  return { email, password };
}
