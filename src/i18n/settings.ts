// The languages' setting (issue 37): the language of a page or mail when
// nothing else tells it (no `ui_locales`, no saved choice, no language cookie,
// no Accept-Language we speak). Declared here; config.ts composes it.
import { ConfigError } from "../errors.ts";
import { type Env, section, setting } from "../settings/declare.ts";
import { LOCALES, type Locale, matchLocale } from "./locales.ts";

const DEFAULT_LOCALE = setting<Locale>({
  name: "DEFAULT_LOCALE",
  default: "`en`",
  fallback: "en",
  meaning:
    `The language of the hosted pages and mails when nothing else chooses one: one of ${LOCALES.map((l) => `\`${l}\``).join(", ")} ` +
    "(a tag such as `de-AT` reads as its language). A page follows OpenID Connect's `ui_locales`, then the " +
    "account's saved `locale`, then the language picked on `/language`, then the browser's `Accept-Language`. " +
    "The API's error `detail` stays English. See [Languages and branding](../operating/languages-and-branding.md).",
  parse(raw, name) {
    const locale = matchLocale(raw);
    if (!locale) throw new ConfigError(name, `must be one of ${LOCALES.join(", ")}, got "${raw}"`);
    return locale;
  },
});

export const LANGUAGE_SETTINGS = section("Languages", "src/i18n/settings.ts", [DEFAULT_LOCALE]);

export function readDefaultLocale(env: Env): Locale {
  return DEFAULT_LOCALE.read(env);
}
