// Every message catalogue, one file per area and language
// (catalogues/<area>/<locale>.json), imported here so that the bundle carries
// them. A new area adds its six files and one line to AREAS. The catalogue
// test (test/i18n-catalogues.test.ts) fails when any language lacks a key
// another has, or takes other values in a message.
//
// Each catalogue is parsed on its first use, not at start: in the bundle a
// catalogue file is its text (scripts/build.ts), so a process whose pages and
// mails speak one language never builds the other five's objects. Run from
// the sources (tests, `node src/server.ts`), Node hands the parsed objects.
import brandingDe from "./catalogues/branding/de.json" with { type: "json" };
import brandingEn from "./catalogues/branding/en.json" with { type: "json" };
import brandingEs from "./catalogues/branding/es.json" with { type: "json" };
import brandingFr from "./catalogues/branding/fr.json" with { type: "json" };
import brandingJa from "./catalogues/branding/ja.json" with { type: "json" };
import brandingPt from "./catalogues/branding/pt-BR.json" with { type: "json" };
import commonDe from "./catalogues/common/de.json" with { type: "json" };
import commonEn from "./catalogues/common/en.json" with { type: "json" };
import commonEs from "./catalogues/common/es.json" with { type: "json" };
import commonFr from "./catalogues/common/fr.json" with { type: "json" };
import commonJa from "./catalogues/common/ja.json" with { type: "json" };
import commonPt from "./catalogues/common/pt-BR.json" with { type: "json" };
import mailDe from "./catalogues/mail/de.json" with { type: "json" };
import mailEn from "./catalogues/mail/en.json" with { type: "json" };
import mailEs from "./catalogues/mail/es.json" with { type: "json" };
import mailFr from "./catalogues/mail/fr.json" with { type: "json" };
import mailJa from "./catalogues/mail/ja.json" with { type: "json" };
import mailPt from "./catalogues/mail/pt-BR.json" with { type: "json" };
import pagesDe from "./catalogues/pages/de.json" with { type: "json" };
import pagesEn from "./catalogues/pages/en.json" with { type: "json" };
import pagesEs from "./catalogues/pages/es.json" with { type: "json" };
import pagesFr from "./catalogues/pages/fr.json" with { type: "json" };
import pagesJa from "./catalogues/pages/ja.json" with { type: "json" };
import pagesPt from "./catalogues/pages/pt-BR.json" with { type: "json" };
import passwordlessDe from "./catalogues/passwordless/de.json" with { type: "json" };
import passwordlessEn from "./catalogues/passwordless/en.json" with { type: "json" };
import passwordlessEs from "./catalogues/passwordless/es.json" with { type: "json" };
import passwordlessFr from "./catalogues/passwordless/fr.json" with { type: "json" };
import passwordlessJa from "./catalogues/passwordless/ja.json" with { type: "json" };
import passwordlessPt from "./catalogues/passwordless/pt-BR.json" with { type: "json" };
import type { Locale } from "./locales.ts";

export type Catalogue = Readonly<Record<string, string>>;
export type AreaCatalogues = Readonly<Record<Locale, Catalogue>>;

/** A catalogue as imported: its object from the sources, its JSON text from the bundle. */
type Imported = Catalogue | string;

/** An area's catalogues behind getters that parse each one on first read and keep it. */
function parsedOnFirstUse(imported: Readonly<Record<Locale, Imported>>): AreaCatalogues {
  const area = {} as Record<Locale, Catalogue>;
  for (const [locale, source] of Object.entries(imported) as [Locale, Imported][]) {
    let parsed: Catalogue | undefined;
    Object.defineProperty(area, locale, {
      enumerable: true,
      get: () => {
        parsed ??= typeof source === "string" ? (JSON.parse(source) as Catalogue) : source;
        return parsed;
      },
    });
  }
  return area;
}

/** Each area's catalogues. Keys are prefixed with their area's name (`signIn.title` lives in `signIn`... by convention). */
export const AREAS: Readonly<Record<string, AreaCatalogues>> = {
  branding: parsedOnFirstUse({
    en: brandingEn,
    de: brandingDe,
    fr: brandingFr,
    es: brandingEs,
    "pt-BR": brandingPt,
    ja: brandingJa,
  }),
  common: parsedOnFirstUse({ en: commonEn, de: commonDe, fr: commonFr, es: commonEs, "pt-BR": commonPt, ja: commonJa }),
  mail: parsedOnFirstUse({ en: mailEn, de: mailDe, fr: mailFr, es: mailEs, "pt-BR": mailPt, ja: mailJa }),
  pages: parsedOnFirstUse({ en: pagesEn, de: pagesDe, fr: pagesFr, es: pagesEs, "pt-BR": pagesPt, ja: pagesJa }),
  passwordless: parsedOnFirstUse({
    en: passwordlessEn,
    de: passwordlessDe,
    fr: passwordlessFr,
    es: passwordlessEs,
    "pt-BR": passwordlessPt,
    ja: passwordlessJa,
  }),
};
