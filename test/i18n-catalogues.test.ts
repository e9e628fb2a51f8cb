// The catalogues (issue 37): every language has every key English has and no
// other, each message parses, and takes the same values in every language (a
// translation that drops `{minutes}` would show a sentence with a hole).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AREAS } from "../src/i18n/catalogues.ts";
import { formatParts, parseMessage, valueNames } from "../src/i18n/format.ts";
import { chooseLocale, fromAcceptLanguage, LOCALES, matchLocale } from "../src/i18n/locales.ts";
import { translator } from "../src/i18n/translate.ts";

describe("message catalogues", () => {
  for (const [area, catalogues] of Object.entries(AREAS)) {
    const english = catalogues.en;
    for (const locale of LOCALES) {
      test(`${area}: ${locale} has exactly English's keys, each parsing with the same values`, () => {
        const own = catalogues[locale];
        assert.deepEqual(Object.keys(own).sort(), Object.keys(english).sort());
        for (const [key, message] of Object.entries(own)) {
          const names = [...valueNames(parseMessage(message))].sort();
          const englishNames = [...valueNames(parseMessage(english[key]!))].sort();
          assert.deepEqual(names, englishNames, `${locale} ${key}`);
        }
      });
    }
  }

  test("no key is in two areas (one would hide the other)", () => {
    const seen = new Map<string, string>();
    for (const [area, catalogues] of Object.entries(AREAS)) {
      for (const key of Object.keys(catalogues.en)) {
        assert.equal(seen.get(key), undefined, `${key} is in ${seen.get(key)} and ${area}`);
        seen.set(key, area);
      }
    }
  });
});

describe("message format", () => {
  test("values and plurals by the language's rules", () => {
    const parts = parseMessage("{name} has {count, plural, =0 {no codes} one {# code} other {# codes}} left");
    assert.equal(formatParts(parts, "en", { name: "Ann", count: 0 }), "Ann has no codes left");
    assert.equal(formatParts(parts, "en", { name: "Ann", count: 1 }), "Ann has 1 code left");
    assert.equal(formatParts(parts, "en", { name: "Ann", count: 1200 }), "Ann has 1,200 codes left");
    assert.equal(formatParts(parts, "de", { name: "Ann", count: 1200 }), "Ann has 1.200 codes left");
    assert.equal(
      formatParts(parseMessage("a <b> {x}"), "en", { x: "<i>" }, (t) => t.replace(/</g, "&lt;")),
      "a &lt;b> &lt;i>",
    );
  });

  test("a message the format cannot read is refused", () => {
    assert.throws(() => parseMessage("{count, select, a {x}}"));
    assert.throws(() => parseMessage("{count, plural, one {x}}"));
    assert.throws(() => parseMessage("open {"));
  });

  test("a key English lacks throws; the direction comes from the catalogue", () => {
    assert.throws(() => translator("de").text("no.such.key"));
    assert.equal(translator("ja").dir, "ltr");
    assert.equal(translator("de").text("meta.languageName"), "Deutsch");
  });
});

describe("choosing the language", () => {
  test("tags match exactly or by language", () => {
    assert.equal(matchLocale("de-AT"), "de");
    assert.equal(matchLocale("PT"), "pt-BR");
    assert.equal(matchLocale("pt_PT"), "pt-BR");
    assert.equal(matchLocale("zh"), undefined);
    assert.equal(matchLocale(""), undefined);
  });

  test("Accept-Language by q-value, unknown languages skipped", () => {
    assert.equal(fromAcceptLanguage("zh-CN, fr;q=0.4, de;q=0.8"), "de");
    assert.equal(fromAcceptLanguage("zh-CN, x;q=0.9"), undefined);
    assert.equal(fromAcceptLanguage("de;q=0, fr;q=0.1"), "fr");
  });

  test("ui_locales, then the saved locale, then the chosen one, then Accept-Language, then the default", () => {
    const all = { uiLocales: "zh ja", saved: "fr", chosen: "es", acceptLanguage: "de", fallback: "en" } as const;
    assert.equal(chooseLocale(all), "ja");
    assert.equal(chooseLocale({ ...all, uiLocales: "zh" }), "fr");
    assert.equal(chooseLocale({ ...all, uiLocales: undefined, saved: null }), "es");
    assert.equal(chooseLocale({ ...all, uiLocales: undefined, saved: null, chosen: undefined }), "de");
    assert.equal(chooseLocale({ fallback: "pt-BR", acceptLanguage: "zh" }), "pt-BR");
  });
});
