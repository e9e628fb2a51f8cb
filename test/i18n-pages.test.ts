// Every server-rendered page in the six languages (issue 37), over inject():
// each page's status, content type, policy and `<html lang dir>`, and no
// English left (for every English message of the page's keys that its
// translation changes, the English words are nowhere in the HTML, the
// scripts' embedded messages included); the order a language is chosen in
// (ui_locales, then the language cookie, then Accept-Language, then
// DEFAULT_LOCALE); and the language page's form (the cookie, a safe
// `continue` only).
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { AREAS } from "../src/i18n/catalogues.ts";
import { LOCALE_NAMES, LOCALES, type Locale } from "../src/i18n/locales.ts";
import { PAGES_CONTENT_SECURITY_POLICY } from "../src/pages/account-pages.ts";
import { SECURITY_PAGE_CONTENT_SECURITY_POLICY } from "../src/pages/security-pages.ts";
import { escapeHtml } from "../src/platform/html.ts";
import { decide, enterCode, registerDeviceClients } from "./device/fixture.ts";
import { buildTestApp, type testConfig } from "./helpers.ts";
import { RP, setUp } from "./oidc/client-flow.ts";
import { pkcePair } from "./oidc/fixture.ts";

// The areas whose messages pages show: the pages', sign-in by mail's and the brand's.
const PAGE_AREAS = ["pages", "passwordless", "branding"] as const;
const pageMessages = (locale: Locale): Record<string, string> =>
  Object.assign({}, ...PAGE_AREAS.map((area) => AREAS[area]![locale]));
const ENGLISH = pageMessages("en");

/** The English message's words: its literal parts (between values), those long enough to be telling. */
function englishParts(message: string): string[] {
  return message
    .replace(/\{[^{}]*\{[^{}]*\}[^{}]*\}/g, "\uE001")
    .split(/\{[^}]*\}|\uE001/)
    .map((part) => part.trim().replace(/^[,.:;]\s*|\s*[,.:;]$/g, ""))
    .filter((part) => part.length >= 4);
}

/**
 * What a reader can read of a page: its text, the attributes a browser shows or reads out (alt,
 * placeholder, title, aria-label), and the messages its scripts show (the JSON block's values, not its
 * keys). Element names, ids and URLs are not words.
 */
function readableText(html: string): string {
  const block = /<script type="application\/json" id="messages">(.*?)<\/script>/s.exec(html);
  const messages = block ? Object.values(JSON.parse(block[1] as string) as Record<string, string>) : [];
  const shown = [...html.matchAll(/ (?:alt|placeholder|title|aria-label)="([^"]*)"/g)].map((match) => match[1]);
  const text = html
    .replace(/<script[^>]*>.*?<\/script>/gs, " ")
    .replace(/<[^>]*>/g, " ")
    .replace(/\s+/g, " ");
  return [text, ...shown, ...messages].join("\n");
}

/** Fails when an English message of these keys (one its translation changes) shows in the HTML. */
function assertNoEnglish(html: string, locale: Locale, keys: readonly string[], page: string): void {
  if (locale === "en") return;
  const words = readableText(html);
  const own = pageMessages(locale);
  for (const key of keys) {
    const english = ENGLISH[key];
    assert.ok(english !== undefined, `${key}: no English message`);
    if (own[key] === english) continue;
    // A part the translation has too ("Passkey {name}" in German, "Continue" in "Continuer") proves nothing.
    for (const part of englishParts(english).filter((part) => !own[key]!.includes(part))) {
      for (const form of new Set([part, escapeHtml(part)])) {
        assert.ok(!words.includes(form), `${page} (${locale}): English "${form}" of ${key} left in the page`);
      }
    }
  }
}

const keysOf = (...prefixes: string[]) =>
  Object.keys(ENGLISH).filter((key) => prefixes.some((prefix) => key === prefix || key.startsWith(prefix)));

function assertPage(
  answer: { statusCode: number; headers: Record<string, unknown>; body: string },
  locale: Locale,
  expected: { status?: number; policy?: string; keys: readonly string[]; page: string },
): void {
  assert.equal(answer.statusCode, expected.status ?? 200, `${expected.page} (${locale}): ${answer.body.slice(0, 300)}`);
  assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
  assert.equal(answer.headers["content-security-policy"], expected.policy ?? PAGES_CONTENT_SECURITY_POLICY);
  assert.equal(answer.headers["cache-control"], "no-store");
  assert.ok(answer.body.includes(`<html lang="${locale}" dir="ltr">`), `${expected.page} (${locale}): lang and dir`);
  const link = `>${escapeHtml(AREAS.pages![locale]["pages.footer.language"]!.replace("{name}", LOCALE_NAMES[locale]))}</a></p>\n</footer>`;
  assert.ok(answer.body.includes(link), `${expected.page} (${locale}): the footer's language link`);
  assertNoEnglish(answer.body, locale, expected.keys, expected.page);
}

const acceptLanguage = (locale: Locale) => ({ "accept-language": `${locale};q=0.9` });

describe("every hosted page in six languages", () => {
  test("the account and security pages: sign-in, security, reset, verify, language", async (t) => {
    const { app } = await buildTestApp(t);
    const pages = [
      {
        url: "/sign-in",
        keys: keysOf("pages.signIn.", "pages.signInJs.", "pages.sharedJs.", "pages.common.").concat(
          keysOf("passwordless.").filter((key) => !key.startsWith("passwordless.mail.")),
        ),
      },
      {
        url: "/account/security",
        keys: keysOf("pages.security.", "pages.securityJs.", "pages.sharedJs.", "pages.common."),
        policy: SECURITY_PAGE_CONTENT_SECURITY_POLICY,
      },
      { url: "/reset-password", keys: keysOf("pages.reset.", "pages.account.", "pages.accountJs.", "pages.sharedJs.") },
      { url: "/verify-email", keys: keysOf("pages.verify.", "pages.account.", "pages.accountJs.", "pages.sharedJs.") },
      { url: "/language", keys: keysOf("pages.language.title", "pages.language.legend", "pages.language.submit") },
    ];
    for (const locale of LOCALES) {
      for (const page of pages) {
        const answer = await app.inject({ url: page.url, headers: acceptLanguage(locale) });
        assertPage(answer, locale, {
          page: page.url,
          keys: page.keys,
          ...(page.policy ? { policy: page.policy } : {}),
        });
        // The scripts' messages in the page's language, as a JSON data block (not executed).
        if (page.url !== "/language") {
          const block = /<script type="application\/json" id="messages">(.*?)<\/script>/s.exec(answer.body);
          assert.ok(block, `${page.url}: the messages block`);
          const messages = JSON.parse(block[1] as string) as Record<string, string>;
          assert.equal(messages["pages.sharedJs.offline"], AREAS.pages![locale]["pages.sharedJs.offline"]);
        }
      }
    }
    // The language page: every language by its own name, the reader's checked.
    const german = await app.inject({ url: "/language?continue=/account/security", headers: acceptLanguage("de") });
    for (const locale of LOCALES) assert.ok(german.body.includes(`> ${escapeHtml(LOCALE_NAMES[locale])}</label>`));
    assert.ok(german.body.includes('value="de" checked>'));
    assert.ok(german.body.includes('<input type="hidden" name="continue" value="/account/security">'));
  });

  test("the OpenID Connect pages: consent (with the scopes' words), sign-out, signed-out, the error page", async (t) => {
    const s = await setUp(t);
    const pkce = pkcePair();
    const query = (extra: Record<string, string>) =>
      new URLSearchParams({
        response_type: "code",
        client_id: s.clients.partner.id,
        redirect_uri: `${RP}/callback`,
        scope: "openid profile email offline_access",
        code_challenge: pkce.challenge,
        code_challenge_method: "S256",
        state: "st",
        ...extra,
      });
    const consentPolicy = PAGES_CONTENT_SECURITY_POLICY.replace("form-action 'self'", `form-action 'self' ${RP}`);
    for (const locale of LOCALES) {
      const consent = await s.app.inject({
        url: `/oauth/authorize?${query({ prompt: "consent" })}`,
        headers: { cookie: s.cookie, ...acceptLanguage(locale) },
      });
      assertPage(consent, locale, {
        page: "consent",
        keys: keysOf("pages.consent.", "pages.scope."),
        policy: consentPolicy,
      });
      for (const scope of ["openid", "profile", "email", "offline_access"]) {
        assert.ok(consent.body.includes(`<li>${escapeHtml(AREAS.pages![locale][`pages.scope.${scope}`]!)}</li>`));
      }
      assert.ok(consent.body.includes('<strong id="client-name">Partner &#60;App&#62;</strong>'), "escaped name");
      // The language link comes back to the very request (by the parameters the page answers).
      const back = new URLSearchParams({ continue: `/oauth/authorize?${query({ prompt: "consent" })}` });
      assert.ok(consent.body.includes(`<p><a id="language-link" href="/language?${escapeHtml(back.toString())}">`));

      const error = await s.app.inject({
        url: `/oauth/authorize?${query({ client_id: "no-such-client" })}`,
        headers: acceptLanguage(locale),
      });
      assertPage(error, locale, {
        status: 400,
        page: "error",
        keys: keysOf("pages.oidcError.title", "pages.oidcError.advice", "pages.oidcError.unknownClient"),
      });

      const signOut = await s.app.inject({
        url: "/oauth/logout",
        headers: { cookie: s.cookie, ...acceptLanguage(locale) },
      });
      assertPage(signOut, locale, { page: "sign-out", keys: keysOf("pages.signOut.") });
    }
    // ui_locales of the authorization request chooses the consent page's language over the others.
    const japanese = await s.app.inject({
      url: `/oauth/authorize?${query({ prompt: "consent", ui_locales: "ja de" })}`,
      headers: { cookie: `${s.cookie}; lang=fr`, ...acceptLanguage("es") },
    });
    assert.ok(japanese.body.includes('<html lang="ja" dir="ltr">'));
    // Signed out (the last: it ends the session), in each language.
    for (const locale of LOCALES) {
      const signedOut = await s.app.inject({ url: "/oauth/logout", headers: acceptLanguage(locale) });
      assertPage(signedOut, locale, { page: "signed-out", keys: keysOf("pages.signedOut.") });
    }
  });

  test("the device pages: code entry, a wrong code, confirmation, done, a refusal", async (t) => {
    const s = await setUp(t);
    const devices = await registerDeviceClients(s.store);
    for (const locale of LOCALES) {
      // A minute per language: the wrong codes of one are not counted against the next.
      s.clock.advanceSeconds(61);
      const cookie = `${s.cookie}; lang=${locale}`;
      const entry = await s.app.inject({ url: "/device", headers: { cookie } });
      assertPage(entry, locale, {
        page: "device entry",
        keys: keysOf(
          "pages.device.entryTitle",
          "pages.device.signedInAs",
          "pages.device.enterCode",
          "pages.device.codeLabel",
          "pages.device.codeHint",
          "pages.device.continue",
          "pages.device.otherAccount",
        ),
      });
      const wrong = await enterCode(s.app, cookie, "AAAA-AAAA");
      assertPage(wrong, locale, { status: 400, page: "wrong code", keys: keysOf("pages.device.wrongCode") });

      const started = await s.app.inject({
        method: "POST",
        url: "/oauth/device_authorization",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ client_id: devices.tv.id, scope: "openid profile" }).toString(),
      });
      const userCode = started.json().user_code as string;
      const confirm = await enterCode(s.app, cookie, userCode);
      assertPage(confirm, locale, {
        page: "device confirm",
        keys: keysOf(
          "pages.device.confirmTitle",
          "pages.device.asksTo",
          "pages.device.checkCode",
          "pages.device.phishingHint",
          "pages.device.approve",
          "pages.device.deny",
          "pages.scope.openid",
          "pages.scope.profile",
        ),
      });
      const done = await decide(s.app, cookie, userCode, "approve");
      assertPage(done, locale, {
        page: "device done",
        keys: keysOf("pages.device.approvedTitle", "pages.device.approvedText"),
      });
      const expired = await s.app.inject({
        method: "POST",
        url: "/device/decision",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie },
        payload: new URLSearchParams({ user_code: userCode, form_token: "forged", decision: "approve" }).toString(),
      });
      assertPage(expired, locale, {
        status: 400,
        page: "device refusal",
        keys: keysOf("pages.device.errorTitle", "pages.device.again", "pages.device.formExpired"),
      });
    }
  });

  test("the upstream error page: a sign-in with no pending start, an unknown provider", async (t) => {
    const { app } = await buildTestApp(t, {
      upstream: {
        providers: [
          {
            kind: "oidc",
            name: "corp",
            label: "Corp",
            issuer: "http://127.0.0.1:9/",
            clientId: "c",
            clientSecret: "s",
            scopes: "openid email",
            allowedDomains: [],
          },
        ],
        autoLink: false,
        keepTokens: false,
        timeoutMs: 1000,
      },
    } as Parameters<typeof testConfig>[0]);
    for (const locale of LOCALES) {
      const stale = await app.inject({
        url: "/auth/upstream/corp/callback?code=x&state=y",
        headers: acceptLanguage(locale),
      });
      assertPage(stale, locale, {
        status: 400,
        page: "upstream error",
        keys: keysOf("pages.upstream.title", "pages.upstream.back", "pages.upstream.noPending"),
      });
      const unknown = await app.inject({ url: "/auth/upstream/nosuch/start", headers: acceptLanguage(locale) });
      assertPage(unknown, locale, {
        status: 404,
        page: "upstream unknown",
        keys: keysOf("pages.upstream.unknownProvider"),
      });
    }
  });
});

describe("which language a page speaks", () => {
  const lang = (body: string) => /<html lang="([^"]+)"/.exec(body)?.[1];

  async function app(t: TestContext, defaultLocale?: Locale): Promise<FastifyInstance> {
    return (await buildTestApp(t, defaultLocale === undefined ? {} : { defaultLocale })).app;
  }

  test("ui_locales, then the language cookie, then Accept-Language, then DEFAULT_LOCALE, then English", async (t) => {
    const french = await app(t, "fr");
    const get = async (url: string, headers: Record<string, string> = {}) =>
      lang((await french.inject({ url, headers })).body);
    assert.equal(await get("/sign-in"), "fr", "DEFAULT_LOCALE");
    assert.equal(await get("/sign-in", { "accept-language": "xx, de-AT;q=0.8" }), "de", "Accept-Language");
    assert.equal(await get("/sign-in", { "accept-language": "de", cookie: "lang=es" }), "es", "the cookie");
    assert.equal(await get("/sign-in", { cookie: "lang=klingon", "accept-language": "ja" }), "ja", "a bad cookie");
    const authorize = `/oauth/authorize?${new URLSearchParams({ client_id: "x", ui_locales: "pt-PT en" })}`;
    const signIn = `/sign-in?${new URLSearchParams({ continue: authorize })}`;
    assert.equal(
      await get(signIn, { cookie: "lang=es", "accept-language": "de" }),
      "pt-BR",
      "the continued ui_locales",
    );
    assert.equal(await get("/sign-in?ui_locales=ja", { cookie: "lang=es" }), "ja", "ui_locales");
    assert.equal(lang((await (await app(t)).inject({ url: "/reset-password" })).body), "en", "no DEFAULT_LOCALE");
  });

  test("POST /language: the cookie for a year, 303 to a path of this service only; a bad locale is a 400 page", async (t) => {
    const service = await app(t);
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      service.inject({
        method: "POST",
        url: "/language",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        payload: new URLSearchParams(fields).toString(),
      });
    const chosen = await post({ locale: "de", continue: "/account/security" });
    assert.equal(chosen.statusCode, 303);
    assert.equal(chosen.headers.location, "/account/security");
    assert.equal(chosen.headers["set-cookie"], "lang=de; Path=/; Max-Age=31536000; SameSite=Lax");
    assert.equal(chosen.body, "");
    for (const unsafe of ["//evil.example", "https://evil.example/", "/\\evil.example", "evil", "/\tx"]) {
      const answer = await post({ locale: "ja", continue: unsafe });
      assert.equal(answer.statusCode, 303, unsafe);
      assert.equal(answer.headers.location, "/sign-in", unsafe);
    }
    assert.equal((await post({ locale: "fr" })).headers.location, "/sign-in", "no continue");
    const bad = await post({ locale: "xx", continue: "/device" }, { "accept-language": "fr" });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.headers["set-cookie"], undefined);
    assertPage(bad, "fr", { status: 400, page: "language refusal", keys: keysOf("pages.language.") });
    assert.ok(bad.body.includes(escapeHtml(AREAS.pages!.fr["pages.language.unknown"]!)));
    // Over HTTPS (behind a proxy the service trusts), the cookie is Secure.
    const proxied = (await buildTestApp(t, { trustProxy: true })).app;
    const secure = await proxied.inject({
      method: "POST",
      url: "/language",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-proto": "https" },
      payload: "locale=ja&continue=%2Fdevice",
    });
    assert.equal(secure.statusCode, 303);
    assert.equal(secure.headers.location, "/device");
    assert.equal(secure.headers["set-cookie"], "lang=ja; Path=/; Max-Age=31536000; SameSite=Lax; Secure");
    // The cookie it sets is what the next page reads.
    assert.equal(lang((await service.inject({ url: "/sign-in", headers: { cookie: "lang=de" } })).body), "de");
  });
});
