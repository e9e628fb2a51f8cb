// The one rule for comparing e-mail addresses: trimmed and lower-cased, the
// same way at sign-up, login and lookup, so "Ada@Example.com " and
// "ada@example.com" are one account. Stores apply it in every verb.

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
