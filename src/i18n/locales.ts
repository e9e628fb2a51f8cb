// The languages the hosted pages and mails speak (issue 37), and how one is
// chosen for a reader: an OpenID Connect request's `ui_locales`, then the
// account's saved `locale`, then the language the person picked on this
// browser (the language page's cookie), then `Accept-Language`, then
// DEFAULT_LOCALE. A tag matches by its language when its region is not one we
// have: `de-AT` reads German, `pt` and `pt-PT` read Brazilian Portuguese.
export const LOCALES = ["en", "de", "fr", "es", "pt-BR", "ja"] as const;
export type Locale = (typeof LOCALES)[number];

/** Each language's own name, for the language page and the security page's choice. */
export const LOCALE_NAMES: Readonly<Record<Locale, string>> = {
  en: "English",
  de: "Deutsch",
  fr: "Français",
  es: "Español",
  "pt-BR": "Português (Brasil)",
  ja: "日本語",
};

const byLowerTag = new Map<string, Locale>(LOCALES.map((locale) => [locale.toLowerCase(), locale]));
const byLanguage = new Map<string, Locale>(LOCALES.map((locale) => [locale.split("-")[0]!.toLowerCase(), locale]));

/** The supported locale a BCP 47 tag names, exactly or by its language; undefined when none. */
export function matchLocale(tag: string | null | undefined): Locale | undefined {
  if (!tag) return undefined;
  const lower = tag.trim().toLowerCase().replace(/_/g, "-");
  if (lower.length === 0 || lower.length > 35) return undefined;
  return byLowerTag.get(lower) ?? byLanguage.get(lower.split("-")[0]!);
}

export function isLocale(value: unknown): value is Locale {
  return typeof value === "string" && (LOCALES as readonly string[]).includes(value);
}

/** The first supported tag of a space-separated list (OpenID Connect's `ui_locales`), in its order. */
export function firstOfList(list: string | null | undefined): Locale | undefined {
  if (!list) return undefined;
  for (const tag of list.split(" ").slice(0, 20)) {
    const locale = matchLocale(tag);
    if (locale) return locale;
  }
  return undefined;
}

/** The best supported language of an Accept-Language header, by its q-values (RFC 9110 section 12.5.4). */
export function fromAcceptLanguage(header: string | null | undefined): Locale | undefined {
  if (!header || header.length > 1000) return undefined;
  let best: Locale | undefined;
  let bestQ = 0;
  for (const part of header.split(",").slice(0, 30)) {
    const [tag = "", ...params] = part.split(";");
    let q = 1;
    for (const param of params) {
      const [name, value] = param.trim().split("=");
      if (name?.toLowerCase() === "q") q = Number(value);
    }
    if (!Number.isFinite(q) || q <= bestQ) continue;
    const locale = matchLocale(tag);
    if (locale) {
      best = locale;
      bestQ = q;
    }
  }
  return best;
}

export interface LocaleSources {
  /** OpenID Connect's `ui_locales` (space-separated), when the page serves an authorization request. */
  uiLocales?: string | null | undefined;
  /** The account's saved `locale`, when the reader is known. */
  saved?: string | null | undefined;
  /** The language chosen on the language page, kept in a cookie in this browser. */
  chosen?: string | null | undefined;
  acceptLanguage?: string | null | undefined;
  /** DEFAULT_LOCALE. */
  fallback: Locale;
}

export function chooseLocale(sources: LocaleSources): Locale {
  return (
    firstOfList(sources.uiLocales) ??
    matchLocale(sources.saved) ??
    matchLocale(sources.chosen) ??
    fromAcceptLanguage(sources.acceptLanguage) ??
    sources.fallback
  );
}
