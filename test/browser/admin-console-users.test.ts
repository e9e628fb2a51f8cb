// The admin console's user page, search and webhook test event (issue 35,
// part B) in Chromium against the service on a real port (SQLite, or
// PostgreSQL with TEST_BACKEND=postgres POSTGRES_URL=...): an admin finds a
// user by e-mail prefix and by name, ends one session and then all of them
// (the user's refresh tokens are then refused with 401), removes a passkey,
// revokes an app they allowed, verifies their
// e-mail, sends them a password-reset mail (a real SMTP server gets it); then
// sends a webhook test event that a real receiver verifies with the
// standardwebhooks library, and sees it in the delivery log. axe-core finds
// nothing on each new view; every request stays on the service's origin.
// The shared helpers come from admin-console-fixture.ts.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import type { Config } from "../../src/config.ts";
import { createUser, requestToken, testConfig } from "../helpers.ts";
import { MailServer } from "../mail-server.ts";
import { WebhookReceiver } from "../webhook-receiver.ts";
import {
  makeAdmin,
  openPage as openPageIn,
  PASSWORD,
  signIn,
  startConsole as startConsoleWith,
} from "./admin-console-fixture.ts";
import { launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

describe("the admin console's user page and webhook test event", { skip: skipWithoutChromium("admin console") }, () => {
  let browser: Browser;
  const smtp = new MailServer();
  before(async () => {
    await smtp.start();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await smtp.stop();
  });

  /** The fixture's service, with mail to the test's SMTP server and webhooks to a receiver on loopback. */
  async function startConsole(t: TestContext, overrides: Partial<Config> = {}) {
    const base = testConfig();
    return startConsoleWith(t, false, {
      ...overrides,
      mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
      webhooks: { ...base.webhooks, refusePrivateAddresses: false, pollIntervalMs: 100 },
    });
  }

  const openPage = (t: TestContext) => openPageIn(browser, t);

  /** Polls `ready` (the page's CSP refuses playwright's string predicates). */
  async function until(ready: () => Promise<boolean>) {
    const deadline = Date.now() + STEP_TIMEOUT;
    while (!(await ready())) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  async function confirm(page: Page, label: string) {
    const dialog = page.locator("dialog.confirm");
    await dialog.waitFor();
    await dialog.getByRole("button", { name: label }).click();
    await dialog.waitFor({ state: "detached" });
  }

  test("an admin finds a user by prefix, ends their sessions, revokes an app, verifies and mails them; a webhook test event arrives signed", async (t) => {
    const { service } = await startConsole(t);
    const admin = await makeAdmin(service, "admin@example.com");
    const ada = await createUser(service.store, "ada@example.com", PASSWORD);
    for (const name of ["adele", "grace", "barbara"]) await createUser(service.store, `${name}@example.com`, PASSWORD);
    // Ada signs in (a refresh token) and allowed the partner app.
    const login = await requestToken(service.app, { username: ada.email, password: PASSWORD });
    assert.equal(login.statusCode, 200, login.body);
    const refreshToken = login.json().refresh_token as string;
    // A second sign-in (another device), and a passkey.
    const phone = await requestToken(
      service.app,
      { username: ada.email, password: PASSWORD },
      { "user-agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Version/17.0 Mobile Safari/604.1" },
    );
    assert.equal(phone.statusCode, 200, phone.body);
    await service.store.update(ada.id, { fullName: "Ada Lovelace" });
    const passkey = await service.store.addPasskey({
      userId: ada.id,
      credentialId: "cred-ada-phone",
      publicKey: "pQECAyYgASFYIA",
      counter: 0,
      transports: ["internal"],
      name: "Ada's phone",
      deviceType: "multiDevice",
      backedUp: true,
      aaguid: null,
    });
    assert.ok(passkey);
    await service.store.grantConsent(ada.id, service.clients.partner.id, "openid email", new Date().toISOString());
    const receiver = new WebhookReceiver();
    await receiver.start();
    t.after(() => receiver.stop());

    const { page, requests, complaints, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/users`);
    await signIn(page, "admin@example.com");
    await page.waitForSelector("#user-results table");

    // Search by e-mail prefix: "ada" finds Ada, not Adele; a filter with no match shows the empty state.
    await page.fill("#filter-email", "ada");
    await page.getByRole("button", { name: "Find" }).click();
    await until(async () => (await page.locator("#user-results tbody tr").count()) === 1);
    assert.deepEqual(await page.locator("#user-results tbody tr td:first-child").allTextContents(), [ada.email]);
    await axe("the users screen with its filters");
    // By a part of the name.
    await page.fill("#filter-email", "");
    await page.fill("#filter-name", "lovel");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByRole("link", { name: ada.email }).waitFor();
    assert.equal(await page.locator("#user-results tbody tr").count(), 1);
    await page.fill("#filter-name", "");
    await page.fill("#filter-email", "nobody");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByText("No user matches these filters").waitFor();
    await page.fill("#filter-email", "ada");
    await page.selectOption("#filter-verified", "false");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByRole("link", { name: ada.email }).click();

    // Her page: sessions, passkeys, apps, linked sign-ins, audit trail.
    await page.waitForSelector("#sessions-list table");
    await page.waitForSelector("#apps-list table");
    await page.waitForSelector("#passkeys-list table");
    await axe("a user's page");

    // End one session: the phone's (named by its browser and system), the other stays.
    await until(async () => (await page.locator("#sessions-list tbody tr").count()) === 2);
    await page.getByRole("button", { name: /^End the session on Safari on iPhone/ }).click();
    await confirm(page, "End the session");
    await page.getByText("The session is ended.").waitFor();
    await until(async () => (await page.locator("#sessions-list tbody tr").count()) === 1);
    const phoneRefused = await requestToken(service.app, {
      grant_type: "refresh_token",
      refresh_token: phone.json().refresh_token,
    });
    assert.equal(phoneRefused.statusCode, 401, phoneRefused.body);

    // Remove her passkey.
    await page.getByRole("button", { name: "Remove the passkey Ada's phone" }).click();
    await confirm(page, "Remove the passkey");
    await page.getByText("No passkey.").waitFor();
    assert.deepEqual(await service.store.listPasskeys(ada.id), []);

    // End all her sessions: her refresh token is refused from then on.
    await page.click("#end-all-sessions");
    await confirm(page, "End all sessions");
    await page.getByText("No live session").waitFor();
    const refused = await requestToken(service.app, { grant_type: "refresh_token", refresh_token: refreshToken });
    assert.equal(refused.statusCode, 401, refused.body);

    // Revoke the partner app's access.
    await page.getByRole("button", { name: /^Revoke / }).click();
    await confirm(page, "Revoke");
    await page.getByText("No app holds the user's consent").waitFor();
    assert.equal(await service.store.findConsent(ada.id, service.clients.partner.id), undefined);

    // Verify her e-mail address.
    await page.click("#toggle-verified");
    await page.getByText("The e-mail address is marked verified.").waitFor();
    assert.match((await page.locator(".facts").textContent()) ?? "", /e-mail verified/);
    assert.equal(await page.locator("#toggle-verified").textContent(), "Mark e-mail not verified");

    // A password-reset mail reaches her (a real SMTP server).
    await page.click("#send-password-reset");
    await confirm(page, "Send the mail");
    await page.getByText(`A password-reset mail is on its way to ${ada.email}`).waitFor();
    // (Her second device's sign-in sent her a new-device notice before: the reset mail is the one with a link.)
    const resetMail = () => smtp.messages.find((mail) => mail.to.includes(ada.email) && /#token=/.test(mail.text));
    await until(async () => resetMail() !== undefined);
    assert.match(resetMail()?.subject ?? "", /password/i);
    await axe("a user's page after its actions");

    // Webhooks: add an endpoint for the receiver, send a test event, see it arrive signed and in the log.
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.waitForSelector("#create-webhook");
    await page.getByLabel("Address (url)").fill(receiver.url);
    await page.getByRole("button", { name: "Add the endpoint" }).click();
    receiver.secrets = [((await page.locator("#shown-secret").textContent()) ?? "").trim()];
    await page.getByRole("link", { name: receiver.url }).click();
    await page.waitForSelector("#send-test-event");
    await page.click("#send-test-event");
    await page.getByText(/A test event \(webhook-id .+\) is queued/).waitFor();
    await receiver.waitFor(() => receiver.accepted.length === 1);
    const delivery = receiver.accepted[0];
    assert.ok(delivery, "a delivery the receiver verified");
    const endpointId = decodeURIComponent(new URL(page.url()).hash.split("/").pop() ?? "");
    assert.deepEqual((delivery.verified as { data: unknown }).data, { user_id: admin.id, endpoint_id: endpointId });
    assert.equal((delivery.verified as { type: string }).type, "webhook.test");
    await page.click("#refresh-deliveries");
    const row = page.locator("#deliveries-heading ~ .delivery-page tbody tr").first();
    await row.waitFor();
    assert.deepEqual((await row.locator("td").allTextContents()).slice(1, 4), ["webhook.test", "1", "204"]);
    await axe("a webhook's page after a test event");
    // Turned off, the endpoint takes no test event: the button is off and the page says why.
    await page.click("#toggle-webhook");
    await confirm(page, "Turn off");
    await page.getByText("Turn the endpoint on to send it a test event").waitFor();
    assert.equal(await page.locator("#send-test-event").isDisabled(), true);
    await axe("a turned-off webhook's page");

    const foreign = requests.filter((url) => new URL(url).origin !== service.issuer);
    assert.deepEqual(foreign, [], "no request to another host");
    assert.deepEqual(complaints, []);
  });

  test("with an upstream provider: the provider filter, and unlinking the last way in is refused in words; readable at 360 px", async (t) => {
    // A GitHub provider in the settings is enough: the console lists providers and unlinks, it never calls GitHub.
    const { service } = await startConsole(t, {
      upstream: {
        providers: [
          {
            kind: "github",
            name: "github",
            label: "GitHub",
            webUrl: "http://127.0.0.1:9",
            apiUrl: "http://127.0.0.1:9",
            scopes: "read:user user:email",
            clientId: "console-test",
            clientSecret: "console-test-secret",
            allowedDomains: [],
          },
        ],
        autoLink: false,
        keepTokens: false,
        timeoutMs: 3000,
      },
    });
    await makeAdmin(service, "admin@example.com");
    await createUser(service.store, "grace@example.com", PASSWORD);
    // Signed up through GitHub: no password, so the linked identity is the account's only way in.
    const octo = await service.store.create({ email: "octo@example.com", hashedPassword: "" });
    const linked = await service.store.linkIdentity({
      id: "01900000-0000-7000-8000-0000000000bb",
      userId: octo.id,
      provider: "github",
      issuer: "https://github.com",
      subject: "4242",
      email: "octo@example.com",
      createdAt: new Date().toISOString(),
      sealedTokens: null,
    });
    assert.ok(linked);

    const { page, requests, complaints, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/users`);
    await signIn(page, "admin@example.com");
    await page.waitForSelector("#user-results table");
    await page.waitForSelector("#filter-provider");
    await page.selectOption("#filter-provider", "github");
    await page.getByRole("button", { name: "Find" }).click();
    await until(async () => (await page.locator("#user-results tbody tr").count()) === 1);
    assert.deepEqual(await page.locator("#user-results tbody tr td:first-child").allTextContents(), [octo.email]);
    await axe("the users screen with the provider filter");

    await page.getByRole("link", { name: octo.email }).click();
    await page.waitForSelector("#identities-list table");
    await page.getByRole("button", { name: "Unlink GitHub" }).click();
    await confirm(page, "Unlink");
    const refusal = page.locator(".status.error");
    await refusal.waitFor();
    assert.match((await refusal.textContent()) ?? "", /^GitHub is octo@example\.com's last way to sign in/);
    assert.equal((await service.store.listIdentities(octo.id)).length, 1, "still linked");
    await axe("a user's page with a refusal");

    // A deactivated user: the reset mail is not sent, and the page says why.
    await service.store.update(octo.id, { isActive: false });
    await page.reload();
    await page.waitForSelector("#send-password-reset");
    await page.click("#send-password-reset");
    await page.getByText("is deactivated and cannot sign in, so no reset mail is sent").waitFor();

    // A phone's width: the user's page stays readable (its tables scroll inside their frame).
    await page.setViewportSize({ width: 360, height: 800 });
    const overflow = Number(
      await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"),
    );
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px at 360 px`);
    await axe("a user's page at 360 px");

    const foreign = requests.filter((url) => new URL(url).origin !== service.issuer);
    assert.deepEqual(foreign, [], "no request to another host");
    assert.deepEqual(complaints, []);
  });
});
