// What makes a new password acceptable (NIST SP 800-63B section 3.1.1.2):
// length (the lengths are here, checked by the schemas), not on a list of common and breached
// passwords, and not the account's own e-mail or its name part. No
// composition rules. The list is the "passwords-common" dictionary of
// @zxcvbn-ts/language-common (about 49,000 entries gathered from breach
// corpora), shipped inside the package, so no network is needed at run time.
// It holds lower-case entries, so the comparison ignores case: "Password123"
// is as guessable as "password123". PASSWORD_LIST_CHECK=off turns the list
// (only) off. Every place that sets a password calls this: sign-up, change,
// reset, admin creation and the CLI.
//
// The list is loaded when first needed, or by loadCommonPasswords() (the
// process calls it a moment after it starts answering): unpacking it takes
// about 20 ms, which start-up no longer waits for.
import { createRequire } from "node:module";
import { HttpError } from "../errors.ts";

/** OWASP ASVS: at least 8 characters; long passphrases allowed, never truncated. */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;
/** What a person reads when a new password is outside those lengths (the validator's words are for code). */
export const PASSWORD_TOO_SHORT = `This password is too short: use at least ${PASSWORD_MIN_LENGTH} characters`;
export const PASSWORD_TOO_LONG = `This password is too long: use at most ${PASSWORD_MAX_LENGTH} characters`;

export const COMMON_PASSWORD = "This password is on a list of common or breached passwords; choose another one";
export const PASSWORD_CONTAINS_EMAIL = "The password must not contain your e-mail address or its name part";

export interface PasswordPolicy {
  /** The reason the password is refused, or undefined when it is acceptable. */
  problem(password: string, email: string): string | undefined;
  /** Throws 422 with the reason. */
  check(password: string, email: string): void;
}

let commonPasswords: Set<string> | undefined;

/** The list, unpacked on first use (synchronously: the package's CommonJS build). */
export function loadCommonPasswords(): Set<string> {
  if (commonPasswords === undefined) {
    const { dictionary } = createRequire(import.meta.url)("@zxcvbn-ts/language-common") as {
      dictionary: Record<string, string[]>;
    };
    commonPasswords = new Set(dictionary["passwords-common"]);
  }
  return commonPasswords;
}

export function createPasswordPolicy(options: { listCheck: boolean }): PasswordPolicy {
  const problem = (password: string, email: string): string | undefined => {
    const lower = password.toLowerCase();
    const address = email.trim().toLowerCase();
    const local = address.split("@")[0] ?? "";
    // A name part of three characters or fewer ("al") would refuse too many honest passphrases.
    if (lower.includes(address) || (local.length > 3 && lower.includes(local))) return PASSWORD_CONTAINS_EMAIL;
    if (options.listCheck && loadCommonPasswords().has(lower)) return COMMON_PASSWORD;
    return undefined;
  };
  return {
    problem,
    check(password, email) {
      const reason = problem(password, email);
      if (reason) throw new HttpError(422, reason);
    },
  };
}
