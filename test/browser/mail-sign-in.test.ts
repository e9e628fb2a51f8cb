// Sign-in by mail in Debian's Chromium (issue 37), the mail read from a real
// SMTP server (test/mail-server.ts): by link in the browser that asked; by
// the code; the link opened in a second browser (refused until the person
// confirms, then signed in); an account with an authenticator app (the mail,
// then the app's code); past the limit (the page says so, the API answers 429
// with Retry-After); an unknown address while sign-up is closed (the same
// page, no mail, no account). Every state is checked by axe-core, at 360 px
// wide, with nothing loaded from elsewhere and no complaint of the page's
// policy. Screenshots go to test-artifacts/browser/mail-sign-in-*.png.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import { TOO_MANY_MAIL_REQUESTS } from "../../src/auth/rate-limits.ts";
import { passwords, requestToken, testConfig } from "../helpers.ts";
import { MailServer } from "../mail-server.ts";
import { address, codeOf, enrolTotp, linkOf, signInMails } from "../mail-sign-in-fixture.ts";
import { codeAt } from "../totp.ts";
import { ARTIFACTS, type BrowserFixture, STEP_TIMEOUT, serveToChromium, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const smtp = new MailServer();

describe("sign-in by mail in Chromium", { skip: skipWithoutChromium("mail-sign-in") }, () => {
  let s: BrowserFixture;
  const contexts: BrowserContext[] = [];

  before(async (t) => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await smtp.start();
    const base = testConfig();
    s = await serveToChromium(t as never, {
      mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
      passwordlessMail: "both",
      signupOpen: false,
      rateLimit: { ...base.rateLimit, enabled: true, mailRequestsPerEmail: 3, mailRequestsPerAddress: 100 },
    });
  });

  after(async () => {
    for (const context of contexts) await context.close();
    await s?.close();
    await smtp.stop();
  });

  /** A page in a browser context of its own (its own cookies), 360 px wide, recording hosts and policy complaints. */
  async function open(path: string, context?: BrowserContext) {
    const ctx = context ?? (await s.browser.newContext({ viewport: { width: 360, height: 800 } }));
    if (!context) contexts.push(ctx);
    const page = await ctx.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    const hosts = new Set<string>();
    const complaints: string[] = [];
    page.on("request", (request) => {
      if (!request.url().startsWith("data:")) hosts.add(new URL(request.url()).host);
    });
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
    });
    const cdp = await ctx.newCDPSession(page);
    await page.goto(`${s.baseUrl}${path}`);
    return { page, context: ctx, hosts, complaints, cdp };
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

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: `${ARTIFACTS}/mail-sign-in-${name}.png`, fullPage: true });

  /** Types the address and asks for the mail; waits for "Check your inbox". */
  async function askOnPage(page: Page, email: string) {
    await page.getByLabel("E-mail").fill(email);
    await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
    await page.getByRole("heading", { name: "Check your inbox" }).waitFor();
  }

  /** The link's address on this service (the mail's links start with ACCOUNT_LINK_BASE_URL). */
  const onService = (url: URL) => `${s.baseUrl}${url.pathname}${url.search}${url.hash}`;

  const fitsIn360 = async (page: Page) =>
    (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) === 0;

  test("by link, in the browser that asked: signed in, the token gone from the address bar", async () => {
    const email = address("link");
    await s.store.create({ email, hashedPassword: "", emailVerifiedAt: new Date().toISOString() });
    const { page, context, hosts, complaints, cdp } = await open("/sign-in");
    await page.getByRole("button", { name: "E-mail me a sign-in link" }).waitFor();
    await axe(cdp, "the sign-in page with sign-in by mail");
    await shot(page, "01-sign-in");
    await askOnPage(page, email);
    await page
      .getByText(
        "If this address can sign in here, we have sent it an e-mail. It works for 15 minutes. Open the link in the e-mail in this browser.",
      )
      .waitFor();
    assert.equal(await page.getByLabel("Your 6-digit sign-in code").isVisible(), true);
    assert.equal(await page.locator("#password-form").isVisible(), false);
    await axe(cdp, "the check-your-inbox step");
    assert.ok(await fitsIn360(page), "no horizontal scrolling at 360 px");
    await shot(page, "02-check-your-inbox");

    const [mail] = await signInMails(smtp, email);
    const linkPage = await context.newPage();
    linkPage.setDefaultTimeout(STEP_TIMEOUT);
    await linkPage.goto(onService(linkOf(mail!).url));
    await linkPage.getByText(`Signed in as ${email}.`).waitFor();
    assert.equal(new URL(linkPage.url()).pathname, "/account/security");
    assert.ok(!linkPage.url().includes("token"), linkPage.url());
    assert.deepEqual(complaints, []);
    assert.deepEqual([...hosts], [new URL(s.baseUrl).host]);
  });

  test("by code: typed on the page that asked", async () => {
    const email = address("code");
    await s.store.create({ email, hashedPassword: "", emailVerifiedAt: new Date().toISOString() });
    const { page, complaints } = await open("/sign-in");
    await askOnPage(page, email);
    const [mail] = await signInMails(smtp, email);
    await page.getByLabel("Your 6-digit sign-in code").fill("000000" === codeOf(mail!) ? "000001" : "000000");
    await page.getByRole("button", { name: "Sign in with the code" }).click();
    await page.getByText("The code was not accepted. Check it, or ask for a new e-mail.").waitFor();
    await page.getByLabel("Your 6-digit sign-in code").fill(codeOf(mail!));
    await page.getByRole("button", { name: "Sign in with the code" }).click();
    await page.getByText(`Signed in as ${email}.`).waitFor();
    assert.equal(new URL(page.url()).pathname, "/account/security");
    assert.deepEqual(complaints, []);
  });

  test("the link in a second browser: refused without the confirmation, signed in after it", async () => {
    const email = address("forwarded");
    await s.store.create({ email, hashedPassword: "", emailVerifiedAt: new Date().toISOString() });
    const { page } = await open("/sign-in");
    await askOnPage(page, email);
    const [mail] = await signInMails(smtp, email);
    const link = onService(linkOf(mail!).url);

    // Another browser (no cookie of the attempt): the question, and no session until it is answered.
    const other = await open("/sign-in");
    const grants: number[] = [];
    other.page.on("response", (response) => {
      if (response.url().endsWith("/auth/token")) grants.push(response.status());
    });
    await other.page.goto(link);
    await other.page.getByRole("heading", { name: "Did you ask for this link?" }).waitFor();
    await other.page.getByText(/^Did you ask for this link on another device at .+\?$/).waitFor();
    assert.deepEqual(grants, [400]);
    assert.equal(await other.page.evaluate(() => sessionStorage.length), 0, "no tokens before the confirmation");
    assert.ok(!other.page.url().includes("token"), other.page.url());
    await axe(other.cdp, "the confirmation question");
    assert.ok(await fitsIn360(other.page), "no horizontal scrolling at 360 px");
    await shot(other.page, "03-confirm");

    // "No" signs nothing in; a third browser that says "Yes" is signed in.
    await other.page.getByRole("button", { name: "No, cancel" }).click();
    await other.page.getByText("Nothing happened. You can close this page.").waitFor();
    assert.equal(await other.page.evaluate(() => sessionStorage.length), 0);
    const third = await open("/sign-in");
    await third.page.goto(link);
    await third.page.getByRole("button", { name: "Yes, it was me: sign in" }).click();
    await third.page.getByText(`Signed in as ${email}.`).waitFor();
    assert.deepEqual(other.complaints, []);
    assert.deepEqual(third.complaints, []);
  });

  test("an account with an authenticator app: the mail, then the app's code", async () => {
    const email = address("totp");
    const hashedPassword = await passwords.hash(PASSWORD);
    await s.store.create({ email, hashedPassword, emailVerifiedAt: new Date().toISOString() });
    const login = await requestToken(s.app, { username: email, password: PASSWORD });
    const secret = await enrolTotp(s.app, login.json().access_token, Date.now());
    const { page, cdp } = await open("/sign-in");
    await askOnPage(page, email);
    const [mail] = await signInMails(smtp, email);
    await page.getByLabel("Your 6-digit sign-in code").fill(codeOf(mail!));
    await page.getByRole("button", { name: "Sign in with the code" }).click();
    await page.getByText("Enter the 6-digit code from your authenticator app.").waitFor();
    assert.equal(await page.locator("#mail-sign-in-inbox").isVisible(), false);
    await axe(cdp, "the second step after the mail");
    await shot(page, "04-second-factor");
    // A code of the next period: the enrolment's own code (this period's) is spent.
    await page.getByLabel("Code from your authenticator app").fill(codeAt(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Verify the code" }).click();
    await page.getByText(`Signed in as ${email}.`).waitFor();
  });

  test("past the limit: the page says so; the API answers 429 with Retry-After", async () => {
    const email = address("limit");
    const { page, cdp } = await open("/sign-in");
    for (let i = 0; i < 3; i++) {
      const asked = await s.app.inject({ method: "POST", url: "/auth/mail-sign-in", payload: { email } });
      assert.equal(asked.statusCode, 202);
    }
    await page.getByLabel("E-mail").fill(email);
    await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
    await page.getByText("Too many e-mails were asked for. Try again in 15 minutes.").waitFor();
    assert.equal(await page.locator("#password-form").isVisible(), true);
    await axe(cdp, "the limit's message");
    await shot(page, "05-limit");
    const limited = await s.app.inject({ method: "POST", url: "/auth/mail-sign-in", payload: { email } });
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers["retry-after"]) > 0 && Number(limited.headers["retry-after"]) <= 900);
    assert.deepEqual(limited.json(), { detail: TOO_MANY_MAIL_REQUESTS });
  });

  test("an unknown address while sign-up is closed: the same page, no mail, no account", async () => {
    const known = address("known");
    await s.store.create({ email: known, hashedPassword: "", emailVerifiedAt: new Date().toISOString() });
    const unknown = address("unknown");
    const texts: string[] = [];
    let last: Page | undefined;
    for (const email of [known, unknown]) {
      const { page } = await open("/sign-in");
      await askOnPage(page, email);
      texts.push(await page.locator("main").innerText());
      last = page;
    }
    assert.equal(texts[0], texts[1]);
    // "Use another address" brings back the page as it was.
    await last!.getByRole("button", { name: "Use another address" }).click();
    await last!.getByLabel("Password", { exact: true }).waitFor();
    assert.equal(await last!.getByRole("button", { name: "E-mail me a sign-in link" }).isVisible(), true);
    assert.equal(await last!.getByRole("heading", { name: "Check your inbox" }).isVisible(), false);
    await signInMails(smtp, known);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(smtp.lastTo(unknown), undefined);
    assert.equal(await s.store.findByEmail(unknown), undefined);
  });
});
