// What a page or a mail says, in its reader's language: a translator per
// locale over every area's catalogue (catalogues.ts), made once and kept.
// `text` is for mails' plain text and headers, `html` for pages and HTML
// mails (the message and its values escaped), `messages` hands a script the
// raw messages it shows (the page embeds them as JSON; see the pages).
// English is the reference: a key another language lacks reads in English
// (the catalogue test keeps that from shipping); a key English lacks is a bug
// and throws, so a test that renders the page finds it.
import { escapeHtml } from "../platform/html.ts";
import { AREAS, type Catalogue } from "./catalogues.ts";
import { formatParts, type MessageValues, parseMessage } from "./format.ts";
import type { Locale } from "./locales.ts";

export interface Translator {
  readonly locale: Locale;
  /** The writing direction, from the catalogue (`meta.dir`): the pages' `dir` attribute. */
  readonly dir: "ltr" | "rtl";
  /** The message as plain text. */
  text(key: string, values?: MessageValues): string;
  /** The message HTML-escaped, values included. */
  html(key: string, values?: MessageValues): string;
  /** The raw messages whose keys start with `prefix`, for a script to show (it formats `{name}` itself). */
  messages(prefix: string): Record<string, string>;
  /** Whether the catalogue has this key (in this language or in English). */
  has(key: string): boolean;
}

function merged(locale: Locale): Map<string, string> {
  const all = new Map<string, string>();
  for (const area of Object.values(AREAS)) {
    const catalogue: Catalogue = area[locale];
    for (const [key, message] of Object.entries(catalogue)) all.set(key, message);
  }
  return all;
}

function makeTranslator(locale: Locale, english: Map<string, string>): Translator {
  const own = merged(locale);
  const parsed = new Map<string, ReturnType<typeof parseMessage>>();
  const partsOf = (key: string) => {
    let parts = parsed.get(key);
    if (parts === undefined) {
      const message = own.get(key) ?? english.get(key);
      if (message === undefined) throw new Error(`No message "${key}" in the catalogues`);
      parts = parseMessage(message);
      parsed.set(key, parts);
    }
    return parts;
  };
  const dir = own.get("meta.dir") === "rtl" ? "rtl" : "ltr";
  return {
    locale,
    dir,
    text: (key, values) => formatParts(partsOf(key), locale, values),
    html: (key, values) => formatParts(partsOf(key), locale, values, escapeHtml),
    messages(prefix) {
      const out: Record<string, string> = {};
      for (const [key, message] of english) if (key.startsWith(prefix)) out[key] = own.get(key) ?? message;
      return out;
    },
    has: (key) => own.has(key) || english.has(key),
  };
}

// Each language's translator is made on its first use, so a language nobody reads is never parsed.
const translators = new Map<Locale, Translator>();
let english: Map<string, string> | undefined;

export function translator(locale: Locale): Translator {
  let made = translators.get(locale);
  if (made === undefined) {
    english ??= merged("en");
    made = makeTranslator(locale, english);
    translators.set(locale, made);
  }
  return made;
}
