// The language a request asks for, when it asks for one, for the mail it
// causes (issue 37): the same sources as a page's (i18n/request-locale.ts:
// `ui_locales`, the language cookie, Accept-Language) without the fallback,
// since a mail's reader's saved locale comes first and DEFAULT_LOCALE last
// (mail/messages.ts decides, when the message is queued).
import type { FastifyRequest } from "fastify";
import { firstOfList, fromAcceptLanguage, type Locale, matchLocale } from "../i18n/locales.ts";
import { LANGUAGE_COOKIE } from "../i18n/request-locale.ts";
import { cookieValue } from "../platform/cookies.ts";

export function askedLocale(request: FastifyRequest): Locale | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  return (
    firstOfList(typeof query?.ui_locales === "string" ? query.ui_locales : undefined) ??
    matchLocale(cookieValue(request.headers.cookie, LANGUAGE_COOKIE)) ??
    fromAcceptLanguage(request.headers["accept-language"])
  );
}
