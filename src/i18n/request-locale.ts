// The language of the page a request asks for (issue 37), by locales.ts's
// order: the request's `ui_locales` (an OpenID Connect authorization request,
// or the sign-in page it leads to), the account's saved locale when the caller
// knows the reader, the language cookie the language page sets, then
// Accept-Language, then DEFAULT_LOCALE.
import type { FastifyRequest } from "fastify";
import { chooseLocale, type Locale } from "./locales.ts";

/** The cookie the language page (/language) sets: a supported tag, nothing else; not HttpOnly-worthy (no secret). */
export const LANGUAGE_COOKIE = "lang";

/** The value of one cookie of a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header || header.length > 8192) return undefined;
  for (const pair of header.split(";")) {
    const at = pair.indexOf("=");
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

export function requestLocale(
  request: FastifyRequest,
  fallback: Locale,
  options: { saved?: string | null | undefined; uiLocales?: string | null | undefined } = {},
): Locale {
  const query = request.query as Record<string, unknown> | undefined;
  const fromQuery = typeof query?.ui_locales === "string" ? query.ui_locales : undefined;
  return chooseLocale({
    uiLocales: options.uiLocales ?? fromQuery,
    saved: options.saved,
    chosen: cookieValue(request.headers.cookie, LANGUAGE_COOKIE),
    acceptLanguage: request.headers["accept-language"],
    fallback,
  });
}
