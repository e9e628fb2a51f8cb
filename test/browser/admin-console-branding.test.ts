// The admin console's Branding screen (issue 37) in Chromium against the
// service on a real port: an admin sets the product's name and colour (the
// preview paints them through the CSSOM and computes the contrast), sees them
// saved (GET /branding, whole answer) and on the sign-in page opened from the
// screen; a colour too light for white text shows the API's refusal next to
// the field and nothing is saved (the name changed beside it neither); a
// field goes back to its setting; a PNG (made with pngjs) is uploaded, shown
// on the sign-in page, then removed (its URL answers 404). An app's page sets
// its brand_color (a refusal shown next to it) and uploads and removes its
// logo. axe-core finds nothing, no CSP complaint, every request stays on the
// service's origin, nothing is wider than a 360 px window.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { PNG } from "pngjs";
import { requestToken } from "../helpers.ts";
import {
  confirm,
  makeAdmin,
  openPage as openConsolePage,
  PASSWORD,
  signIn,
  startConsole,
} from "./admin-console-fixture.ts";
import { launchChromium, skipWithoutChromium } from "./chromium.ts";

const TEAL = "rgb(15, 118, 110)";
const REFUSAL = "primary_color #ffcc00 on white text has contrast 1.5:1; WCAG AA needs at least 4.5:1";

/** A real PNG made by pngjs: `size` pixels square, of one colour. */
function png(size: number, [r, g, b]: [number, number, number]): Buffer {
  const image = new PNG({ width: size, height: size });
  for (let i = 0; i < image.data.length; i += 4) image.data.set([r, g, b, 255], i);
  return PNG.sync.write(image);
}

/** The page's own globals, for functions run in the page (the project's types carry no DOM). */
type InPage = { getComputedStyle(element: unknown): Record<string, string> };
const style = (element: unknown, name: string) => (globalThis as unknown as InPage).getComputedStyle(element)[name];
const naturalWidth = (img: unknown) => {
  const image = img as { complete: boolean; naturalWidth: number };
  return image.complete ? image.naturalWidth : 0;
};

describe("the admin console's Branding screen", { skip: skipWithoutChromium("admin console branding") }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  const openPage = (t: TestContext) => openConsolePage(browser, t);

  /** The sign-in page the screen's link opens in a new tab. */
  async function openSignIn(page: Page): Promise<Page> {
    const [tab] = await Promise.all([page.waitForEvent("popup"), page.click("#open-sign-in")]);
    await tab.waitForLoadState("networkidle");
    return tab;
  }

  test("an admin sets the name, colour and logo, sees a refusal next to the field, and resets to the settings", async (t) => {
    const { service } = await startConsole(t);
    await makeAdmin(service, "admin@example.com");
    const token = (await requestToken(service.app, { username: "admin@example.com", password: PASSWORD })).json()
      .access_token as string;
    const headers = { authorization: `Bearer ${token}` };
    const branding = async () => {
      const answer = await service.app.inject({ url: "/branding", headers });
      assert.equal(answer.statusCode, 200, answer.body);
      return answer.json();
    };
    const before = await branding();

    const { page, requests, complaints, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/branding`);
    await signIn(page, "admin@example.com");
    await page.waitForSelector("#brand-form");
    assert.equal(await page.locator('a[data-screen="branding"]').getAttribute("aria-current"), "page");
    // Every field from its setting: no reset button shown.
    assert.equal(await page.locator("#brand-product-name").inputValue(), "User service");
    assert.equal(await page.locator("#brand-primary-color").inputValue(), "#1d4ed8");
    assert.equal(await page.locator("#brand-primary-color-picker").inputValue(), "#1d4ed8");
    assert.equal(await page.locator("button.reset:visible").count(), 0);
    assert.equal(
      await page.locator("#brand-product-name-source").textContent(),
      "From its setting, BRAND_PRODUCT_NAME (or that setting's default).",
    );
    await axe("the branding screen");

    // Name and colour: the preview follows the text field, painted through the CSSOM, with its ratios.
    await page.fill("#brand-product-name", "Acme ID");
    await page.fill("#brand-primary-color", "#0F766E");
    assert.equal(await page.locator(".preview-button").evaluate(style, "backgroundColor"), TEAL);
    assert.equal(await page.locator(".preview-link").evaluate(style, "color"), TEAL);
    assert.equal(await page.locator("#brand-primary-color-picker").inputValue(), "#0f766e");
    assert.equal(
      await page.locator("#brand-preview-contrast").textContent(),
      "Contrast: white text on it 5.4:1, as a link on the page background 5.0:1. Both reach WCAG AA (4.5:1).",
    );
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved. The pages and mails show the new brand now.").waitFor();
    const saved = await branding();
    assert.match(saved.stylesheet_url, /^\/branding\/brand\.css\?v=[0-9a-f]+$/);
    assert.notEqual(saved.stylesheet_url, before.stylesheet_url);
    assert.deepEqual(saved, {
      ...before,
      product_name: "Acme ID",
      primary_color: "#0f766e",
      stylesheet_url: saved.stylesheet_url,
      sources: { ...before.sources, product_name: "api", primary_color: "api" },
    });
    // The table says where each value comes from; the two fields set here can be reset.
    assert.deepEqual(
      await page
        .locator("#brand-effective tbody tr")
        .evaluateAll((rows) => rows.map((row) => (row as unknown as { innerText: string }).innerText.split("\t"))),
      [
        ["Product name", "Acme ID", "Set here (API)"],
        ["Primary colour", "#0f766e", "Set here (API)"],
        ["Support e-mail", "—", "Setting BRAND_SUPPORT_EMAIL"],
        ["Terms of service URL", "—", "Setting BRAND_TERMS_URL"],
        ["Privacy notice URL", "—", "Setting BRAND_PRIVACY_URL"],
      ],
    );
    assert.deepEqual(
      await page.locator("button.reset:visible").evaluateAll((b) => b.map((x) => (x as unknown as { id: string }).id)),
      ["brand-product-name-reset", "brand-primary-color-reset"],
    );

    // On the sign-in page, in a new tab.
    const signInTab = await openSignIn(page);
    assert.equal(await signInTab.locator("header.brand .brand-name").textContent(), "Acme ID");
    assert.equal(
      await signInTab.locator("#password-form button[type=submit]").evaluate(style, "backgroundColor"),
      TEAL,
    );
    await signInTab.close();

    // Too light for white text: the preview warns, the API refuses, the refusal is next to the field,
    // and nothing is saved (not the name changed beside it either).
    await page.fill("#brand-product-name", "Other name");
    await page.fill("#brand-primary-color", "#ffcc00");
    assert.equal(
      await page.locator("#brand-preview-contrast").textContent(),
      "Contrast: white text on it 1.5:1, as a link on the page background 1.3:1. WCAG AA needs 4.5:1 for both: the service will refuse this colour.",
    );
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const refusal = page.locator("#brand-primary-color-error");
    await refusal.waitFor({ state: "visible" });
    assert.equal(await refusal.textContent(), REFUSAL);
    assert.equal(await page.locator("#brand-primary-color").getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator("#brand-product-name").getAttribute("aria-invalid"), null);
    assert.equal(await page.evaluate("document.activeElement.id"), "brand-primary-color");
    assert.equal(await page.locator("#main > .status").textContent(), "Nothing was saved: primary colour was refused.");
    assert.deepEqual(await branding(), saved);

    // The name back to its setting (PATCH null): the page shows the setting's value again.
    await page.click("#brand-product-name-reset");
    await page.getByText("Product name is back to its setting, BRAND_PRODUCT_NAME.").waitFor();
    assert.equal(await refusal.isHidden(), true);
    assert.equal(await page.locator("#brand-product-name").inputValue(), "User service");
    assert.equal(await page.locator("#brand-primary-color").inputValue(), "#0f766e");
    const reset = await branding();
    assert.deepEqual(reset, {
      ...saved,
      product_name: "User service",
      sources: { ...saved.sources, product_name: "setting" },
    });

    // The logo: a PNG made by pngjs, uploaded with its type, shown here and on the sign-in page.
    assert.equal(await page.locator("#brand-logo-remove").isHidden(), true);
    await page.setInputFiles("#brand-logo-file", {
      name: "logo.png",
      mimeType: "image/png",
      buffer: png(40, [15, 118, 110]),
    });
    await page.getByRole("button", { name: "Upload the logo" }).click();
    await page.getByText("The logo was uploaded: the pages show it now.").waitFor();
    const withLogo = await branding();
    assert.match(withLogo.logo_url, /^\/branding\/logo\/[0-9a-f]{20}\.png$/);
    assert.deepEqual(withLogo, { ...reset, logo_url: withLogo.logo_url });
    const logoHere = page.locator("#brand-logo-now");
    assert.equal(await logoHere.getAttribute("src"), withLogo.logo_url);
    await page.waitForFunction(naturalWidth, await logoHere.elementHandle());
    assert.equal(await logoHere.evaluate(naturalWidth), 40);
    await axe("the branding screen with a logo");
    const logoTab = await openSignIn(page);
    const logoThere = logoTab.locator("header.brand img.brand-logo");
    assert.equal(await logoThere.getAttribute("src"), withLogo.logo_url);
    assert.equal(await logoThere.evaluate(naturalWidth), 40);
    await logoTab.close();

    // Removed (asked first): gone from the screen, the API and the sign-in page; its URL answers 404.
    await page.click("#brand-logo-remove");
    await confirm(page, "Remove");
    await page.getByText("The logo was removed.").waitFor();
    assert.deepEqual(await branding(), reset);
    assert.equal(await page.locator("#brand-logo-now").count(), 0);
    assert.equal((await service.app.inject({ url: withLogo.logo_url })).statusCode, 404);
    const noLogoTab = await openSignIn(page);
    assert.equal(await noLogoTab.locator("header.brand img").count(), 0);
    await noLogoTab.close();

    // Usable at 360 px: nothing wider than the window.
    await page.setViewportSize({ width: 360, height: 800 });
    assert.equal(
      await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"),
      0,
      "nothing wider than the window",
    );
    await axe("the branding screen at 360 px");
    assert.deepEqual(complaints, []);
    assert.deepEqual(
      requests.filter((url) => new URL(url).origin !== service.issuer),
      [],
      "every request stays on the service's origin",
    );
  });

  test("an app's page sets its brand_color and uploads and removes its logo", async (t) => {
    const { service } = await startConsole(t);
    await makeAdmin(service, "admin@example.com");
    const token = (await requestToken(service.app, { username: "admin@example.com", password: PASSWORD })).json()
      .access_token as string;
    const id = service.clients.partner.id;
    const clientAnswer = async () =>
      (await service.app.inject({ url: `/clients/${id}`, headers: { authorization: `Bearer ${token}` } })).json();
    const before = await clientAnswer();
    assert.equal(before.brand_color, undefined);

    const { page, complaints, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/apps/${id}`);
    await signIn(page, "admin@example.com");
    await page.waitForSelector("#app-brand-form");
    // Unset: the field is empty and the preview shows the service's colour.
    assert.equal(await page.locator("#app-brand-color").inputValue(), "");
    assert.equal(
      await page.locator("#app-brand-preview .preview-button").evaluate(style, "backgroundColor"),
      "rgb(29, 78, 216)",
    );
    await axe("an app's page with its branding");

    await page.fill("#app-brand-color", "#ffcc00");
    await page.getByRole("button", { name: "Save the colour" }).click();
    const refusal = page.locator("#app-brand-color-error");
    await refusal.waitFor({ state: "visible" });
    assert.equal(
      await refusal.textContent(),
      "brand_color #ffcc00 on white text has contrast 1.5:1; WCAG AA needs at least 4.5:1",
    );
    assert.deepEqual(await clientAnswer(), before);

    await page.fill("#app-brand-color", "#0f766e");
    await page.getByRole("button", { name: "Save the colour" }).click();
    await page.getByText("Saved: its pages are in #0f766e.").waitFor();
    assert.equal(await refusal.isHidden(), true);
    assert.deepEqual(await clientAnswer(), { ...before, brand_color: "#0f766e" });

    await page.setInputFiles("#app-logo-file", {
      name: "app.png",
      mimeType: "image/png",
      buffer: png(24, [200, 30, 30]),
    });
    await page.getByRole("button", { name: "Upload the logo" }).click();
    await page.getByText("The logo was uploaded: its pages show it now.").waitFor();
    const logo = page.locator("#app-logo img");
    const src = (await logo.getAttribute("src")) ?? "";
    assert.match(src, /^\/branding\/logo\/[0-9a-f]{20}\.png$/);
    await page.waitForFunction(naturalWidth, await logo.elementHandle());
    assert.equal(await logo.evaluate(naturalWidth), 24);
    await axe("an app's page with its logo");

    await page.click("#app-logo-remove");
    await confirm(page, "Remove");
    await page.getByText("Its logo was removed (if it had one): its pages show the service's logo.").waitFor();
    assert.equal(await page.locator("#app-logo img").count(), 0);
    assert.equal((await service.app.inject({ url: src })).statusCode, 404);

    await page.click("#app-brand-color-reset");
    await page.getByText("Its pages use the service's colour.").waitFor();
    assert.deepEqual(await clientAnswer(), before);
    assert.equal(await page.locator("#app-brand-color").inputValue(), "");
    assert.deepEqual(complaints, []);
  });
});
