// The hosted pages in each of the six languages in Chromium (issue 37), one
// browser context per language, 360 px wide: an authorization request with
// ui_locales leads to the sign-in page (a wrong password shows the page's own
// message, not the API's English detail), then to the consent page; then the
// device page, the security page (signed in), the reset and verification
// pages with a bad token, and the language page. On each: `lang` and `dir`,
// axe-core finds nothing, the visible text (document.body.innerText) holds no
// English message of the page's keys that its translation changes, and the
// page does not scroll sideways. Screenshots go to test-artifacts/browser/i18n-*.png.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { AREAS } from "../../src/i18n/catalogues.ts";
import { LOCALES, type Locale } from "../../src/i18n/locales.ts";
import { createUser } from "../helpers.ts";
import { OIDC_KEY, pkcePair, registerClients, type TestClients } from "../oidc/fixture.ts";
import { ARTIFACTS, type BrowserFixture, STEP_TIMEOUT, serveToChromium, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const RP = "https://rp.example";
const ENGLISH = AREAS.pages!.en;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const keysOf = (...prefixes: string[]) =>
  Object.keys(ENGLISH).filter((key) => prefixes.some((prefix) => key === prefix || key.startsWith(prefix)));

/** The English message's words: its literal parts (between values), those long enough to be telling. */
function englishParts(message: string): string[] {
  return message
    .replace(/\{[^{}]*\{[^{}]*\}[^{}]*\}/g, "\uE001")
    .split(/\{[^}]*\}|\uE001/)
    .map((part) => part.trim().replace(/^[,.:;]\s*|\s*[,.:;]$/g, ""))
    .filter((part) => part.length >= 4);
}

describe("the hosted pages in six languages in Chromium", { skip: skipWithoutChromium("i18n-pages") }, () => {
  let fixture: BrowserFixture;
  let clients: TestClients;

  before(async (t) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    fixture = await serveToChromium(t as never, { oidcSigningKeys: [OIDC_KEY] });
    clients = await registerClients(fixture.store, RP);
  });

  after(async () => {
    await fixture?.close();
  });

  /** lang and dir, axe-core, no English left in the visible text, no sideways scroll; a screenshot. */
  async function check(context: BrowserContext, page: Page, locale: Locale, what: string, keys: readonly string[]) {
    const attributes = await page.evaluate("[document.documentElement.lang, document.documentElement.dir]");
    assert.deepEqual(attributes, [locale, "ltr"], `${what} (${locale}): lang and dir`);
    const cdp = await context.newCDPSession(page);
    await cdp.send("Runtime.evaluate", { expression: axeSource });
    const { result } = await cdp.send("Runtime.evaluate", {
      expression:
        "axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) })))",
      awaitPromise: true,
      returnByValue: true,
    });
    assert.deepEqual(result.value, [], `axe-core found violations on ${what} (${locale})`);
    await cdp.detach();
    const visible = String(await page.evaluate("document.body.innerText"));
    if (locale !== "en") {
      const own = AREAS.pages![locale];
      for (const key of keys) {
        if (own[key] === ENGLISH[key]) continue;
        for (const part of englishParts(ENGLISH[key]!).filter((part) => !own[key]!.includes(part))) {
          assert.ok(!visible.includes(part), `${what} (${locale}): English "${part}" of ${key} shown`);
        }
      }
    }
    const sideways = await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    assert.equal(sideways, 0, `${what} (${locale}) scrolls sideways at 360 px`);
    await page.screenshot({ path: `${ARTIFACTS}/i18n-${locale}-${what.replace(/\W+/g, "-")}.png`, fullPage: true });
  }

  const statusText = async (page: Page, kind: string) => {
    await page.locator(`#status.${kind}`).waitFor();
    return (await page.locator("#status").innerText()).trim();
  };

  for (const locale of LOCALES) {
    test(`every page in ${locale}`, async () => {
      const email = `reader-${locale.toLowerCase()}@example.com`;
      await createUser(fixture.store, email, PASSWORD);
      const own = AREAS.pages![locale];
      const context = await fixture.browser.newContext({ viewport: { width: 360, height: 800 } });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(STEP_TIMEOUT);
        const { baseUrl } = fixture;

        // An authorization request in this language: the sign-in page speaks it (ui_locales through continue).
        const pkce = pkcePair();
        const authorize = `/oauth/authorize?${new URLSearchParams({
          response_type: "code",
          client_id: clients.partner.id,
          redirect_uri: `${RP}/callback`,
          scope: "openid email profile",
          code_challenge: pkce.challenge,
          code_challenge_method: "S256",
          state: "st",
          prompt: "consent",
          ui_locales: locale,
        })}`;
        await page.goto(`${baseUrl}${authorize}`);
        await page.waitForURL(/\/sign-in\?/);
        await page.locator("#email").waitFor();
        await check(context, page, locale, "sign-in", keysOf("pages.signIn.", "pages.signInJs.", "pages.sharedJs."));

        // A wrong password: the page's message in this language, not the API's English detail.
        await page.locator("#email").fill(email);
        await page.locator("#password").fill("not the password");
        await page.locator("#password-form button[type=submit]").click();
        assert.equal(await statusText(page, "error"), own["pages.signInJs.wrongPassword"]);

        await page.locator("#password").fill(PASSWORD);
        await page.locator("#password-form button[type=submit]").click();
        await page.waitForURL(/\/oauth\/authorize\?/);
        await page.locator("#allow").waitFor();
        await check(context, page, locale, "consent", keysOf("pages.consent.", "pages.scope."));

        // The device page (the browser session the sign-in opened), in the language of the cookie.
        await context.addCookies([{ name: "lang", value: locale, url: baseUrl }]);
        await page.goto(`${baseUrl}/device`);
        await page.locator("#user-code").waitFor();
        await check(context, page, locale, "device", keysOf("pages.device.entryTitle", "pages.device.enterCode"));

        // The security page, signed in: its script's words and dates in this language.
        await page.goto(`${baseUrl}/account/security`);
        await page.locator("#session-list li").first().waitFor();
        await page.locator("#status.info").waitFor();
        assert.equal(
          (await page.locator("#who").innerText()).trim(),
          own["pages.securityJs.who"]!.replace("{email}", email),
        );
        await check(
          context,
          page,
          locale,
          "security",
          keysOf("pages.security.", "pages.securityJs.", "pages.sharedJs."),
        );
        const expectedDate = String(
          await page.evaluate(
            'new Intl.DateTimeFormat(document.documentElement.lang, { dateStyle: "medium", timeStyle: "short" }).format(new Date()).slice(0, 6)',
          ),
        );
        assert.ok(
          (await page.locator("#session-list").innerText()).includes(expectedDate),
          `${locale}: the sessions' dates by Intl.DateTimeFormat in the page's language (${expectedDate})`,
        );

        if (locale === "de") {
          // The security page's choice: the cookie (POST /language), the account (PATCH /me's locale, which
          // the mails follow), and the page again in the language chosen.
          await page.locator("#language-select").selectOption("fr");
          await page.locator("#language-choice button[type=submit]").click();
          // The page again, in French (a locator, not waitForFunction: the page's policy refuses eval).
          await page.locator('html[lang="fr"]').waitFor({ state: "attached" });
          await page.locator("#status.info").waitFor();
          const cookies = await context.cookies(baseUrl);
          assert.equal(cookies.find((cookie) => cookie.name === "lang")?.value, "fr");
          assert.equal(await page.locator("#language-select").inputValue(), "fr");
          assert.equal((await fixture.store.findByEmail(email))?.locale, "fr", "saved to the account");
          await context.addCookies([{ name: "lang", value: locale, url: baseUrl }]);
        }

        await page.goto(`${baseUrl}/reset-password#token=bad`);
        await page.locator("#reset-form").waitFor();
        await check(context, page, locale, "reset", keysOf("pages.reset.", "pages.accountJs."));

        await page.goto(`${baseUrl}/verify-email#token=bad`);
        assert.equal(await statusText(page, "error"), own["pages.accountJs.badLink"]);
        await check(context, page, locale, "verify", keysOf("pages.verify.", "pages.accountJs."));

        await page.goto(`${baseUrl}/language?continue=/account/security`);
        await page.locator("#choose").waitFor();
        await check(context, page, locale, "language", keysOf("pages.language."));
      } finally {
        await context.close();
      }
    });
  }
});
