// Every message catalogue, one file per area and language
// (catalogues/<area>/<locale>.json), imported here so that the bundle carries
// them. A new area adds its six files and one line to AREAS. The catalogue
// test (test/i18n-catalogues.test.ts) fails when any language lacks a key
// another has, or takes other values in a message.
import commonDe from "./catalogues/common/de.json" with { type: "json" };
import commonEn from "./catalogues/common/en.json" with { type: "json" };
import commonEs from "./catalogues/common/es.json" with { type: "json" };
import commonFr from "./catalogues/common/fr.json" with { type: "json" };
import commonJa from "./catalogues/common/ja.json" with { type: "json" };
import commonPt from "./catalogues/common/pt-BR.json" with { type: "json" };
import passwordlessDe from "./catalogues/passwordless/de.json" with { type: "json" };
import passwordlessEn from "./catalogues/passwordless/en.json" with { type: "json" };
import passwordlessEs from "./catalogues/passwordless/es.json" with { type: "json" };
import passwordlessFr from "./catalogues/passwordless/fr.json" with { type: "json" };
import passwordlessJa from "./catalogues/passwordless/ja.json" with { type: "json" };
import passwordlessPt from "./catalogues/passwordless/pt-BR.json" with { type: "json" };
import type { Locale } from "./locales.ts";

export type Catalogue = Readonly<Record<string, string>>;
export type AreaCatalogues = Readonly<Record<Locale, Catalogue>>;

/** Each area's catalogues. Keys are prefixed with their area's name (`signIn.title` lives in `signIn`... by convention). */
export const AREAS: Readonly<Record<string, AreaCatalogues>> = {
  common: { en: commonEn, de: commonDe, fr: commonFr, es: commonEs, "pt-BR": commonPt, ja: commonJa },
  passwordless: {
    en: passwordlessEn,
    de: passwordlessDe,
    fr: passwordlessFr,
    es: passwordlessEs,
    "pt-BR": passwordlessPt,
    ja: passwordlessJa,
  },
};
