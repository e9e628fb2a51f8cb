// The /docs page end to end in Debian's headless Chromium (/usr/bin/chromium,
// driven by playwright-core; no browser is ever downloaded). One test, one
// page: Swagger UI loads from the service itself (no request leaves
// 127.0.0.1:PORT), its Content-Security-Policy blocks nothing, GET /me shows a
// padlock while POST /users and POST /auth/token do not, and a person can
// press Authorize, give e-mail and password, then Try it out / Execute on
// GET /me and see 200 with their e-mail. Each step leaves a screenshot in
// test-artifacts/browser/. Without Chromium the test is skipped with a
// message, except under CI=true, where that is a failure.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { test } from "node:test";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium, type Page, type Request, type Response } from "playwright-core";
import { buildApp } from "../../src/app.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { createUser, testConfig } from "../helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = "test-artifacts/browser";
const STEP_TIMEOUT = 15_000;
const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";
const MISSING_MESSAGE =
  `Chromium is missing at ${CHROMIUM}; install it with "apt-get update && apt-get install -y chromium" ` +
  "to run the docs-page browser test";

/** Swagger UI's block for one operation, found by method and exact path (so /me is not /me/sessions). */
function operation(page: Page, method: string, path: string) {
  return page
    .locator(`.opblock.opblock-${method}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
}

/**
 * Runs in the page before its own scripts (init scripts are exempt from the page's CSP) and records
 * every Content-Security-Policy violation the page sees. A string, since the project has no DOM types.
 */
const RECORD_CSP_VIOLATIONS = `
  window.cspViolations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.cspViolations.push(event.violatedDirective + " blocked " + (event.blockedURI || "inline"));
  });
`;

test("docs page: Swagger UI from the service itself, padlocks, Authorize, then GET /me", {
  timeout: 55_000,
}, async (t) => {
  if (!existsSync(CHROMIUM)) {
    if (process.env.CI === "true") assert.fail(`${MISSING_MESSAGE} (CI=true requires it)`);
    t.skip(MISSING_MESSAGE);
    return;
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  // Named apart from docs-page.test.ts's screenshots, which share the folder and may run at the same time.
  let step = 0;
  async function screenshot(page: Page, name: string): Promise<void> {
    step += 1;
    const file = `${ARTIFACTS}/docs-ui-${String(step).padStart(2, "0")}-${name}.png`;
    await page.screenshot({ path: file, fullPage: true, timeout: STEP_TIMEOUT });
  }

  let browser: Browser | undefined;
  let app: FastifyInstance | undefined;
  const store = openSqliteStore(":memory:");
  // One hook, so the order is certain (t.after hooks run first-registered first): browser, app, store,
  // each even when the one before failed to close.
  t.after(async () => {
    try {
      await browser?.close();
    } finally {
      try {
        await app?.close();
      } finally {
        await store.close();
      }
    }
  });
  app = await buildApp({ config: testConfig({ logLevel: "silent" }), store });
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const origin = new URL(address).origin;
  assert.match(origin, /^http:\/\/127\.0\.0\.1:\d+$/);
  await createUser(store, EMAIL, PASSWORD);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: STEP_TIMEOUT,
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-gpu",
      "--no-first-run",
      "--disable-sync",
    ],
  });

  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  page.setDefaultNavigationTimeout(STEP_TIMEOUT);

  // Everything the page asks for, every answer it gets, and everything it complains about.
  const requests: Request[] = [];
  const responses: Response[] = [];
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  context.on("request", (request) => requests.push(request));
  page.on("response", (response) => responses.push(response));
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  await page.addInitScript({ content: RECORD_CSP_VIOLATIONS });

  // Step 1: the page loads, entirely from this service, under a same-origin CSP.
  const docsResponse = await page.goto(`${origin}/docs`, { waitUntil: "load" });
  assert.ok(docsResponse, "navigating to /docs got a response");
  const me = operation(page, "get", "/me");
  await me.waitFor();
  await page.locator(".swagger-ui .information-container .title").waitFor();
  await page.waitForLoadState("networkidle", { timeout: STEP_TIMEOUT });
  await screenshot(page, "docs-loaded");

  const csp = docsResponse.headers()["content-security-policy"];
  assert.ok(csp, "the Swagger UI page is served with a Content-Security-Policy");
  assert.doesNotMatch(csp, /https:|unsafe-eval/, `the CSP stays on this origin: ${csp}`);

  assert.ok(requests.length > 3, "the page loaded its scripts and the OpenAPI document");
  const foreign = requests.map((request) => request.url()).filter((url) => !url.startsWith(`${origin}/`));
  assert.deepEqual(foreign, [], "every request goes to the service itself (no CDN)");
  const script = requests.find((request) => request.resourceType() === "script" && /swagger-ui/.test(request.url()));
  assert.ok(script, "Swagger UI's script came from the service");

  // Step 2: the padlock (the operation's authorization button) marks GET /me only.
  assert.equal(await me.locator(".authorization__btn").count(), 1, "GET /me shows a padlock");
  for (const [method, path] of [
    ["post", "/users"],
    ["post", "/auth/token"],
  ] as const) {
    const block = operation(page, method, path);
    assert.equal(await block.count(), 1, `${method.toUpperCase()} ${path} is on the page`);
    assert.equal(
      await block.locator(".authorization__btn").count(),
      0,
      `${method.toUpperCase()} ${path} has no padlock`,
    );
  }

  // Step 3: Authorize with e-mail and password in the password-flow dialog.
  await page.locator(".scheme-container button.authorize").click();
  const dialog = page.locator(".dialog-ux .modal-ux");
  await dialog.waitFor();
  await dialog.locator("#oauth_username").fill(EMAIL);
  await dialog.locator("#oauth_password").fill(PASSWORD);
  const tokenResponsePromise = page.waitForResponse(
    (response) => new URL(response.url()).pathname === "/auth/token" && response.request().method() === "POST",
  );
  await dialog.getByRole("button", { name: "Apply given OAuth2 credentials" }).click();
  const tokenResponse = await tokenResponsePromise;
  assert.equal(tokenResponse.status(), 200, `the token request succeeded: ${await tokenResponse.text()}`);
  // Once authorized, the dialog offers Logout in place of Authorize.
  await dialog.getByRole("button", { name: "Remove authorization" }).waitFor();
  await screenshot(page, "authorized");
  await dialog.locator(".auth-btn-wrapper button.btn-done").click();
  await dialog.waitFor({ state: "detached" });

  // Step 4: GET /me > Try it out > Execute shows 200 with the user's e-mail.
  await me.locator(".opblock-summary").first().click();
  await me.locator("button.try-out__btn").click();
  const meResponsePromise = page.waitForResponse(
    (response) => response.url() === `${origin}/me` && response.request().method() === "GET",
  );
  await me.locator("button.execute").click();
  const meResponse = await meResponsePromise;
  const live = me.locator(".live-responses-table tbody tr.response").first();
  await live.waitFor();
  await live.scrollIntoViewIfNeeded();
  await screenshot(page, "me-response");

  assert.equal(meResponse.status(), 200, "the /me request succeeded on the wire");
  const meHeaders = await meResponse.request().allHeaders();
  assert.match(meHeaders.authorization ?? "", /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/, "GET /me carried the bearer token");
  assert.equal((await live.locator(".response-col_status").innerText()).trim(), "200", "the page shows status 200");
  assert.match(await live.locator(".response-col_description").innerText(), /ada@example\.com/);
  assert.ok(
    responses.some((response) => response.url() === `${origin}/openapi.json` || /\/docs\/json$/.test(response.url())),
    "the page read the OpenAPI document from the service",
  );

  // Nothing was blocked or broken along the way (checked last, so it covers every step).
  const foreignAtEnd = requests.map((request) => request.url()).filter((url) => !url.startsWith(`${origin}/`));
  assert.deepEqual(foreignAtEnd, [], "no request left the service at any step");
  const violations = (await page.evaluate("window.cspViolations")) as string[];
  assert.deepEqual(violations, [], "the page's CSP blocked nothing");
  assert.deepEqual(
    consoleErrors.filter((text) => /Content[- ]Security[- ]Policy|Refused to/i.test(text)),
    [],
    "no CSP messages in the console",
  );
  assert.deepEqual(pageErrors, [], "no uncaught errors in the page");
});
