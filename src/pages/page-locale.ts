// The language of a hosted page (issue 37): the request's, by i18n/request-locale.ts's order
// (ui_locales, the language cookie, Accept-Language), else DEFAULT_LOCALE. The fallback is set once
// on the root instance when the pages install (installPages), so every route that renders a page,
// in any plugin, reads it from its request. Pages that never change per request are rendered once
// per language and kept (`perLocale`).
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { MessageValues } from "../i18n/format.ts";
import type { Locale } from "../i18n/locales.ts";
import { requestLocale } from "../i18n/request-locale.ts";
import { type Translator, translator } from "../i18n/translate.ts";
import { escapeHtml } from "../platform/html.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** DEFAULT_LOCALE, or "en": the pages' language when the request tells none. */
    pagesDefaultLocale: Locale;
  }
}

export function setPagesDefaultLocale(app: FastifyInstance, fallback: Locale | undefined): void {
  app.decorate("pagesDefaultLocale", fallback ?? "en");
}

/** The translator of the page this request asks for; `uiLocales` when the page serves an authorization request. */
export function pageTranslator(request: FastifyRequest, uiLocales?: string | null): Translator {
  const fallback = request.server.pagesDefaultLocale ?? "en";
  return translator(requestLocale(request, fallback, uiLocales ? { uiLocales } : {}));
}

/** Every page perLocale kept: the same for every reader of its language (branding keeps their bytes). */
const perLocalePages = new Set<string>();

/** Whether this page is one perLocale kept (the very string; a lookup, the string's hash is cached). */
export function isPerLocalePage(page: string): boolean {
  return perLocalePages.has(page);
}

/** A page rendered once per language, when first asked for, and kept. */
export function perLocale(render: (t: Translator) => string): (t: Translator) => string {
  const rendered = new Map<Locale, string>();
  return (t) => {
    let page = rendered.get(t.locale);
    if (page === undefined) {
      page = render(t);
      rendered.set(t.locale, page);
      perLocalePages.add(page);
    }
    return page;
  };
}

/** The messages a page's script shows, as a JSON data block (not executed; the policy allows no inline script). */
export function messagesBlock(t: Translator, prefixes: readonly string[]): string {
  const messages: Record<string, string> = {};
  for (const prefix of prefixes) Object.assign(messages, t.messages(prefix));
  const json = JSON.stringify(messages).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026");
  return `<script type="application/json" id="messages">${json}</script>`;
}

/**
 * A message whose values are HTML already (a name in <strong>, say): the message is escaped, then each
 * value put in its place, so that the sentence stays one message in every language.
 */
export function richHtml(t: Translator, key: string, html: Readonly<Record<string, string>>): string {
  const marks: Record<string, string> = {};
  for (const name of Object.keys(html)) marks[name] = `\uE000${name}\uE000`;
  return t.html(key, marks).replace(/\uE000([^\uE000]+)\uE000/g, (_mark, name: string) => html[name] ?? "");
}

/** What a page says went wrong: a catalogue key and its values (never an English sentence from a route). */
export interface PageProblem {
  readonly key: string;
  readonly values?: MessageValues;
}

/** The scopes' words on the consent and device pages; a scope without words shows as it is named. */
export function scopeWords(t: Translator, scope: string): string {
  const key = `pages.scope.${scope}`;
  return /^[a-z_]+$/.test(scope) && t.has(key) ? t.html(key) : escapeHtml(scope);
}
