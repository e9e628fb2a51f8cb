// The language of the page a request asks for (issue 37), by locales.ts's
// order: the request's `ui_locales` (an OpenID Connect authorization request,
// or the sign-in page it leads to), the account's saved locale when the caller
// knows the reader, the language cookie the language page sets, then
// Accept-Language, then DEFAULT_LOCALE.
import type { FastifyRequest } from "fastify";
import { cookieValue } from "../platform/cookies.ts";
import { chooseLocale, type Locale } from "./locales.ts";

/** The cookie the language page (/language) sets: a supported tag, nothing else; not HttpOnly-worthy (no secret). */
export const LANGUAGE_COOKIE = "lang";

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
