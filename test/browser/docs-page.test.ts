// The docs page in a real headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core), in one browser session: Swagger UI loads from
// the service itself, the padlock marks protected routes only, and a person
// can Authorize with e-mail and password and then call GET /me, or sign up
// and PATCH /me, all from the page. Each step leaves a screenshot in
// test-artifacts/browser/. Without Chromium the tests are skipped with a
// message, except under CI=true, where that is a failure.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { buildApp } from "../../src/app.ts";
import type { UserStore } from "../../src/store/store.ts";
import { createUser, openTestStore, testConfig } from "../helpers.ts";
import { ARTIFACTS, launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

describe("docs page in Chromium", { skip: skipWithoutChromium("docs-page") }, () => {
  let browser: Browser;
  let app: FastifyInstance;
  let store: UserStore;
  let baseUrl: string;
  let step = 0;

  before(async (t) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    store = await openTestStore(t as never);
    app = await buildApp({ config: testConfig(), store });
    baseUrl = await app.listen({ host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
  });

  async function snapshot(page: Page, name: string): Promise<void> {
    step += 1;
    await page.screenshot({ path: `${ARTIFACTS}/${String(step).padStart(2, "0")}-${name}.png`, fullPage: true });
  }

  /** A fresh page that records every request host and every console error. */
  async function openDocs() {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.setDefaultTimeout(STEP_TIMEOUT);
    const hosts = new Set<string>();
    const consoleErrors: string[] = [];
    page.on("request", (request) => hosts.add(new URL(request.url()).host));
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    await page.goto(`${baseUrl}/docs`);
    await page.locator(".swagger-ui .information-container").waitFor();
    return { page, hosts, consoleErrors };
  }

  async function authorize(page: Page, email: string, password: string): Promise<void> {
    await page.locator(".scheme-container button.authorize").click();
    const dialog = page.locator(".modal-ux");
    await dialog.locator("#oauth_username").fill(email);
    await dialog.locator("#oauth_password").fill(password);
    const tokenResponse = page.waitForResponse((response) => response.url().endsWith("/auth/token"));
    // The dialog also offers HTTP Basic for introspection clients; this is the password flow's button.
    await dialog.getByRole("button", { name: "Apply given OAuth2 credentials" }).click();
    assert.equal((await tokenResponse).status(), 200, "the Authorize control got a token");
    await dialog.locator(".auth-btn-wrapper button.btn-done").first().waitFor();
    await snapshot(page, "authorized");
    await dialog.locator(".auth-btn-wrapper button.btn-done").first().click();
  }

  /** Expands an operation, presses Try it out, optionally fills the JSON body, executes, and returns the live response. */
  async function execute(page: Page, operation: string, body?: object) {
    const block = page.locator(`#${operation}`);
    await block.locator(".opblock-summary").first().click();
    await block.locator("button.try-out__btn").click();
    if (body) await block.locator("textarea.body-param__text").fill(JSON.stringify(body));
    const [request, response] = await Promise.all([
      page.waitForRequest((candidate) => candidate.url().startsWith(baseUrl) && !candidate.url().includes("/docs")),
      page.waitForResponse((candidate) => candidate.url().startsWith(baseUrl) && !candidate.url().includes("/docs")),
      block.locator("button.execute").click(),
    ]);
    const status = block.locator(".live-responses-table tbody .response-col_status").first();
    await status.waitFor();
    return {
      request,
      response,
      statusText: (await status.innerText()).trim(),
      bodyText: await block.locator(".live-responses-table tbody .response-col_description").first().innerText(),
    };
  }

  test("serves Swagger UI from the service itself, with the padlock on protected routes only", async () => {
    const { page, hosts, consoleErrors } = await openDocs();
    await page.locator("#operations-me-readCurrentUser").waitFor();
    await snapshot(page, "docs-loaded");
    assert.deepEqual([...hosts], [new URL(baseUrl).host], "no request leaves the service (no CDN)");
    assert.equal(
      consoleErrors.filter((text) => /Content Security Policy|Refused to/i.test(text)).length,
      0,
      consoleErrors.join("\n"),
    );

    for (const protectedOperation of [
      "operations-me-readCurrentUser",
      "operations-me-updateCurrentUser",
      "operations-users-listUsers",
    ]) {
      assert.equal(
        await page.locator(`#${protectedOperation} .authorization__btn`).count(),
        1,
        `${protectedOperation} shows a padlock`,
      );
    }
    for (const openOperation of [
      "operations-users-createUser",
      "operations-auth-issueToken",
      "operations-health-liveness",
    ]) {
      assert.equal(
        await page.locator(`#${openOperation} .authorization__btn`).count(),
        0,
        `${openOperation} shows no padlock`,
      );
    }
    await page.close();
  });

  test("Authorize with e-mail and password, then GET /me answers 200 with that e-mail", async () => {
    await createUser(store, "ada@example.com", "correct horse battery");
    const { page } = await openDocs();
    await authorize(page, "ada@example.com", "correct horse battery");
    const { request, statusText, bodyText } = await execute(page, "operations-me-readCurrentUser");
    await snapshot(page, "me-response");
    assert.match(
      request.headers().authorization ?? "",
      /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/,
      "the page sent the token as a bearer header",
    );
    assert.equal(statusText, "200");
    assert.match(bodyText, /ada@example\.com/);
    await page.close();
  });

  test("sign up, Authorize as the new user, and PATCH /me from the docs page", async () => {
    const { page } = await openDocs();
    const signUp = await execute(page, "operations-users-createUser", {
      email: "grace@example.com",
      password: "a long enough password",
    });
    await snapshot(page, "signed-up");
    assert.equal(signUp.statusText, "201", signUp.bodyText);

    await authorize(page, "grace@example.com", "a long enough password");
    const patched = await execute(page, "operations-me-updateCurrentUser", { full_name: "Grace Hopper" });
    await snapshot(page, "patched-me");
    assert.equal(patched.statusText, "200", patched.bodyText);
    assert.match(patched.bodyText, /Grace Hopper/);
    assert.equal((await store.findByEmail("grace@example.com"))?.fullName, "Grace Hopper");
    await page.close();
  });
});
