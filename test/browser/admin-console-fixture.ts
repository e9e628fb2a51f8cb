// The admin console's browser tests' shared helpers (issue 35): start the
// service on a real port with the console on, make an admin, open a fresh
// browser context that records every request and CSP complaint and runs
// axe-core, sign in through the hosted sign-in page, answer a confirmation
// dialog. Used by admin-console.test.ts and the screen tests beside it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { TestContext } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ensureConsoleClient } from "../../src/admin/console-client.ts";
import type { Config } from "../../src/config.ts";
import { createUser } from "../helpers.ts";
import { type OidcService, startOidcService, startRelyingParty } from "../oidc/fixture.ts";
import { STEP_TIMEOUT } from "./chromium.ts";

export const PASSWORD = "correct horse battery";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** The service with the console on (and a relying party for code flows), on a free port. */
export async function startConsole(t: TestContext, requireMfa = false, overrides: Partial<Config> = {}) {
  const rp = await startRelyingParty(t);
  const service = await startOidcService(t, rp.origin, { adminConsole: { enabled: true, requireMfa }, ...overrides });
  // Registered when the service starts listening; once more here, so the test does not race that hook.
  await ensureConsoleClient(service.store, service.issuer);
  return { rp, service };
}

export async function makeAdmin(service: OidcService, email: string) {
  const user = await createUser(service.store, email, PASSWORD);
  await service.store.update(user.id, { isAdmin: true });
  return user;
}

/** A fresh browser context (no cookies) whose every request is recorded, with CSP complaints. */
export async function openPage(browser: Browser, t: TestContext, options: { acceptDownloads?: boolean } = {}) {
  const context: BrowserContext = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    ...(options.acceptDownloads ? { acceptDownloads: true } : {}),
  });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT);
  const requests: string[] = [];
  const complaints: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
  });
  const cdp = await context.newCDPSession(page);
  async function axe(what: string) {
    await cdp.send("Runtime.evaluate", { expression: axeSource });
    const { result } = await cdp.send("Runtime.evaluate", {
      expression:
        "axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) })))",
      awaitPromise: true,
      returnByValue: true,
    });
    assert.deepEqual(result.value, [], `axe-core found violations on ${what}`);
  }
  return { page, requests, complaints, axe };
}

/** Signs in on the hosted sign-in page the console redirected to. */
export async function signIn(page: Page, email: string) {
  await page.waitForURL(/\/sign-in\?/);
  await page.fill("#email", email);
  await page.fill("#password", PASSWORD);
  await page.click("#password-form button");
}

/** Answers the console's confirmation dialog with its action. */
export async function confirm(page: Page, label: string) {
  const dialog = page.locator("dialog.confirm");
  await dialog.waitFor();
  await dialog.getByRole("button", { name: label }).click();
}
