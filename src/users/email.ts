// The one rule for comparing e-mail addresses: trimmed and lower-cased, the
// same way at sign-up, login and lookup, so "Ada@Example.com " and
// "ada@example.com" are one account. Stores apply it in every verb; routes
// that take an e-mail in a JSON body apply it before validation, so the
// format check sees the address that will be stored.

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function normalizeEmailInBody(request: { body: unknown }): Promise<void> {
  const body = request.body as { email?: unknown } | null;
  if (body && typeof body === "object" && typeof body.email === "string") body.email = normalizeEmail(body.email);
}
