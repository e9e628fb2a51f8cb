// The brand in Chromium (issue 37): with a product name, a colour, a logo and
// footer links set through the admin API, the sign-in page and the front
// door (in English at 900 px, in German and Japanese at 360 px) load the logo
// under the pages' policy (no complaint of it, nothing from elsewhere), paint
// the buttons and links in the brand's colour (computed style), fit a phone's
// width, and axe-core finds nothing. Screenshots go to
// test-artifacts/browser/branding-*.png.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import type { CDPSession } from "playwright-core";
import { admin, png } from "../branding/fixture.ts";
import { ARTIFACTS, type BrowserFixture, STEP_TIMEOUT, serveToChromium, skipWithoutChromium } from "./chromium.ts";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const TEAL = "rgb(15, 118, 110)";

/** The page's own globals, for functions run in the page (the project's types carry no DOM). */
type InPage = { getComputedStyle(element: unknown): Record<string, string> };
/** A computed style of a located element. */
const style = (element: unknown, name: string) => (globalThis as unknown as InPage).getComputedStyle(element)[name];

describe("the brand in Chromium", { skip: skipWithoutChromium("branding") }, () => {
  let fixture: BrowserFixture;

  before(async (t) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    fixture = await serveToChromium(t as never);
    const headers = await admin(fixture.app, fixture.store);
    const set = await fixture.app.inject({
      method: "PUT",
      url: "/branding",
      headers,
      payload: {
        product_name: "Acme ID",
        primary_color: "#0f766e",
        support_email: "help@acme.example",
        terms_url: "https://acme.example/terms",
        privacy_url: "https://acme.example/privacy",
      },
    });
    assert.equal(set.statusCode, 200, set.body);
    const logo = await fixture.app.inject({
      method: "PUT",
      url: "/branding/logo",
      headers: { ...headers, "content-type": "image/png" },
      payload: png(40, [15, 118, 110]),
    });
    assert.equal(logo.statusCode, 200, logo.body);
  });

  after(async () => {
    await fixture?.close();
  });

  async function open(path: string, { width, locale }: { width: number; locale: string }) {
    const context = await fixture.browser.newContext({ viewport: { width, height: 800 }, locale });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    const hosts = new Set<string>();
    const complaints: string[] = [];
    page.on("request", (request) => {
      hosts.add(new URL(request.url()).host);
    });
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
    });
    const cdp = await context.newCDPSession(page);
    await page.goto(`${fixture.baseUrl}${path}`);
    await page.waitForLoadState("networkidle");
    return { page, hosts, complaints, cdp, context };
  }

  async function axe(cdp: CDPSession, what: string): Promise<void> {
    await cdp.send("Runtime.evaluate", { expression: axeSource });
    const { result } = await cdp.send("Runtime.evaluate", {
      expression:
        "axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) })))",
      awaitPromise: true,
      returnByValue: true,
    });
    assert.deepEqual(result.value, [], `axe-core found violations on ${what}`);
  }

  for (const [path, width, locale, name] of [
    ["/sign-in", 900, "en-US", "sign-in"],
    ["/sign-in", 360, "de-DE", "sign-in-360-de"],
    ["/", 900, "en-US", "front-door"],
    ["/", 360, "ja-JP", "front-door-360-ja"],
  ] as const) {
    test(`${path} at ${width} px (${locale}): the logo loads under the policy, the colour shows, axe finds nothing`, async () => {
      const { page, hosts, complaints, cdp, context } = await open(path, { width, locale });
      try {
        const logo = page.locator("header.brand img.brand-logo");
        assert.equal(
          await logo.evaluate((img) => {
            const image = img as unknown as { complete: boolean; naturalWidth: number };
            return image.complete ? image.naturalWidth : 0;
          }),
          40,
        );
        assert.equal(await page.locator("header.brand .brand-name").textContent(), "Acme ID");
        if (path === "/sign-in") {
          const button = page.locator("#password-form button[type=submit]");
          assert.equal(await button.evaluate(style, "backgroundColor"), TEAL);
          assert.equal(await button.evaluate(style, "color"), "rgb(255, 255, 255)");
        } else {
          const link = page.locator("ul.doors a").first();
          assert.equal(await link.evaluate(style, "color"), TEAL);
          assert.equal(await page.locator("html").getAttribute("lang"), locale.slice(0, 2));
        }
        const footerLink = page.locator("footer.brand a").first();
        assert.equal(await footerLink.evaluate(style, "color"), TEAL);
        assert.equal(
          await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"),
          0,
          "nothing wider than the window",
        );
        await page.screenshot({ path: `${ARTIFACTS}/branding-${name}.png`, fullPage: true });
        await axe(cdp, `${path} at ${width} px`);
        assert.deepEqual(complaints, []);
        assert.deepEqual([...hosts], [new URL(fixture.baseUrl).host]);
      } finally {
        await context.close();
      }
    });
  }
});
