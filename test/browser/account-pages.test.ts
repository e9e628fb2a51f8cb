// The account pages in a real headless Chromium: a password reset is asked
// for, the mail arrives at a real SMTP server started here, the browser
// opens the link from that mail, a person types the new password twice and
// submits, and the new password then logs in; the verification page does the
// same for a sign-up link. The pages load nothing from elsewhere and break
// no rule of their Content-Security-Policy. Screenshots of every step go to
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
import { linkIn, MailServer } from "../mail-server.ts";
import { ARTIFACTS, freePort, launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

describe("account pages in Chromium", { skip: skipWithoutChromium("account-page") }, () => {
  let browser: Browser;
  let app: FastifyInstance;
  let store: UserStore;
  let baseUrl: string;
  const smtp = new MailServer();

  before(async (t) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await smtp.start();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const base = testConfig();
    store = await openTestStore(t as never);
    app = await buildApp({
      config: {
        ...base,
        publicUrl: baseUrl,
        mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
        accountRecovery: { ...base.accountRecovery, linkBaseUrl: baseUrl },
      },
      store,
    });
    await app.listen({ host: "127.0.0.1", port });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
    await smtp.stop();
  });

  /** A page that records every host it asks and every CSP complaint. */
  async function open(url: string) {
    const page = await browser.newPage({ viewport: { width: 800, height: 700 } });
    page.setDefaultTimeout(STEP_TIMEOUT);
    const hosts = new Set<string>();
    const complaints: string[] = [];
    page.on("request", (request) => hosts.add(new URL(request.url()).host));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
    });
    await page.goto(url);
    return { page, hosts, complaints };
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: `${ARTIFACTS}/account-${name}.png`, fullPage: true });

  test("opens the reset link from the mail, sets a new password on the page, and logs in with it", async () => {
    await createUser(store, "lin@example.com", "correct horse battery");
    const asked = await fetch(`${baseUrl}/auth/password-reset-requests`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "lin@example.com" }),
    });
    assert.equal(asked.status, 202);
    await smtp.waitFor(1);
    const link = linkIn(smtp.lastTo("lin@example.com")!);
    assert.equal(link.origin, baseUrl);

    const { page, hosts, complaints } = await open(link.href);
    await page.getByLabel("New password", { exact: true }).waitFor();
    assert.equal(new URL(page.url()).hash, "", "the token is cleared from the address bar");
    await shot(page, "01-reset-page");

    // A mismatch is explained before anything is sent.
    await page.getByLabel("New password", { exact: true }).fill("a fresh long passphrase");
    await page.getByLabel("Repeat the new password").fill("a different passphrase");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("The two passwords are not the same.").waitFor();
    // A common password is refused by the service with its reason.
    await page.getByLabel("New password", { exact: true }).fill("password123");
    await page.getByLabel("Repeat the new password").fill("password123");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText(/list of common or breached passwords/).waitFor();
    await shot(page, "02-reset-refused");

    await page.getByLabel("New password", { exact: true }).fill("a fresh long passphrase");
    await page.getByLabel("Repeat the new password").fill("a fresh long passphrase");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText(/Your password is set/).waitFor();
    await shot(page, "03-reset-done");
    assert.deepEqual([...hosts], [new URL(baseUrl).host], "nothing is loaded from elsewhere");
    assert.deepEqual(complaints, []);

    const login = await page.request.post(`${baseUrl}/auth/token`, {
      form: { username: "lin@example.com", password: "a fresh long passphrase" },
    });
    assert.equal(login.status(), 200);
    const old = await page.request.post(`${baseUrl}/auth/token`, {
      form: { username: "lin@example.com", password: "correct horse battery" },
    });
    assert.equal(old.status(), 401);

    // The same link again (a fresh load, not a same-document jump): a page that says it was used.
    await page.goto("about:blank");
    await page.goto(link.href);
    await page.getByLabel("New password", { exact: true }).fill("another long passphrase");
    await page.getByLabel("Repeat the new password").fill("another long passphrase");
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText(/already used/).waitFor();
    await shot(page, "04-reset-link-used");
    await page.close();
  });

  test("opens the verification link from the sign-up mail and shows the address verified", async () => {
    const signUp = await fetch(`${baseUrl}/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "mo@example.com", password: "correct horse battery" }),
    });
    assert.equal(signUp.status, 201);
    // Its own mail: the previous test's reset also told its account (a security notification).
    const [mail] = await smtp.mailsTo("mo@example.com");
    const { page, complaints } = await open(linkIn(mail!).href);
    await page.getByText("Thank you: mo@example.com is verified.").waitFor();
    await shot(page, "05-verified");
    assert.deepEqual(complaints, []);
    assert.notEqual((await store.findByEmail("mo@example.com"))?.emailVerifiedAt, null);
    await page.goto(`${baseUrl}/verify-email`);
    await page.getByText(/This link is incomplete/).waitFor();
    await shot(page, "06-incomplete-link");
    await page.close();
  });
});
