// The admin console (issue 35) in Chromium against the service on a real
// port: an admin signs in through the sign-in page (code + PKCE), finds a
// user, deactivates and reactivates them and resets their second factors;
// registers an app, sees its secret once and completes a code flow with it
// (openid-client); adds a webhook endpoint and rotates its secret; signs out
// (RP-initiated logout). Around it: every request stays on the service's
// origin, the CSP has no unsafe-*, no token in web storage, axe-core finds
// nothing on any screen, the first load's JS + CSS is under 150 KB gzipped.
// Then an admin with a second factor signs in with it and walks a deactivation
// by keyboard alone; a non-admin gets the refusal page; a webhook endpoint
// hears of a user created in the console and its delivery log redelivers the
// event; with ADMIN_CONSOLE_REQUIRE_MFA=on an admin without a second factor
// gets the page saying how to add one. The users screen's screenshot goes to
// test-artifacts/browser/ (and to docs/images/ with UPDATE_DOCS_IMAGES=1).
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { gzipSync } from "node:zlib";
import * as client from "openid-client";
import type { Browser, Response } from "playwright-core";
import { CONSOLE_CLIENT_ID } from "../../src/admin/console-client.ts";
import { createUser, requestToken } from "../helpers.ts";
import { codeAt } from "../totp.ts";
import { WebhookReceiver } from "../webhook-receiver.ts";
import {
  confirm,
  makeAdmin,
  openPage as openConsolePage,
  PASSWORD,
  signIn,
  startConsole,
} from "./admin-console-fixture.ts";
import { ARTIFACTS, launchChromium, skipWithoutChromium } from "./chromium.ts";

const MAX_FIRST_LOAD_GZIP_BYTES = 150 * 1024;

describe("the admin console at /admin", { skip: skipWithoutChromium("admin console") }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  const openPage = (t: TestContext) => openConsolePage(browser, t);

  test("an admin manages users, apps and webhooks, and signs out", async (t) => {
    const { rp, service } = await startConsole(t);
    const admin = await makeAdmin(service, "admin@example.com");
    const grace = await createUser(service.store, "grace@example.com", PASSWORD);
    for (const name of ["ada", "edsger", "barbara"]) await createUser(service.store, `${name}@example.com`, PASSWORD);
    const { page, requests, complaints, axe } = await openPage(t);
    const assetBodies = new Map<string, Buffer>();
    const reading: Promise<void>[] = [];
    const recordAsset = (response: Response) => {
      if (!response.url().includes("/admin/assets/")) return;
      reading.push(
        response.body().then(
          (body) => void assetBodies.set(response.url(), body),
          () => undefined, // a load navigated away from (the redirect to the sign-in page): read again after it
        ),
      );
    };
    page.on("response", recordAsset);

    // The console's page: the hosted pages' policy, nothing unsafe, never cached.
    const first = await page.goto(`${service.issuer}/admin`);
    await signIn(page, "admin@example.com");
    // The overview is the first screen; the users screen is one link away.
    await page.waitForSelector("#overview-users");
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForSelector("#user-results table");
    const shell = await fetch(`${service.issuer}/admin/`);
    const policy = shell.headers.get("content-security-policy") ?? "";
    assert.match(policy, /script-src 'self'/);
    assert.doesNotMatch(policy, /unsafe-/);
    assert.equal(shell.headers.get("cache-control"), "no-store");
    assert.ok(first);

    // The first load's scripts and stylesheet, gzipped, stay small.
    page.off("response", recordAsset);
    await Promise.all(reading);
    const gzipped = [...assetBodies.values()].reduce((sum, body) => sum + gzipSync(body).length, 0);
    assert.ok(assetBodies.size >= 5, `the console's assets were loaded (${[...assetBodies.keys()].join(", ")})`);
    assert.ok(gzipped < MAX_FIRST_LOAD_GZIP_BYTES, `first load is ${gzipped} bytes of gzipped JS + CSS`);
    t.diagnostic(`admin console first load: ${gzipped} bytes gzipped JS + CSS in ${assetBodies.size} files`);

    // The console's tokens stay in memory: nothing of its own in web storage once signed in (its PKCE
    // verifier, kept across the redirect, is gone). The one entry left is the hosted sign-in page's own
    // session (src/pages/session.js keeps its refresh token in this tab's sessionStorage).
    const storage = JSON.parse(
      await page.evaluate("JSON.stringify({ local: Object.keys(localStorage), session: Object.keys(sessionStorage) })"),
    );
    assert.deepEqual(storage, { local: [], session: ["uts.refresh_token"] });

    // Users: the list, then one user found by e-mail.
    assert.equal(await page.locator("#user-results tbody tr").count(), 5);
    await axe("the users screen");
    await page.screenshot({ path: `${ARTIFACTS}/admin-console-users.png` });
    if (process.env.UPDATE_DOCS_IMAGES === "1") await page.screenshot({ path: "docs/images/admin-console-users.png" });
    await page.locator("#filter-email").fill("GRACE@example.com");
    await page.getByRole("button", { name: "Find" }).click();
    await page.locator("#user-results tbody tr:nth-child(2)").waitFor({ state: "detached" });
    assert.equal(await page.locator("#user-results tbody tr").count(), 1);
    await page.getByRole("link", { name: "grace@example.com" }).click();
    await page.waitForSelector("#deactivate");
    await axe("a user's page");

    // Deactivate (asked first), then activate again.
    await page.click("#deactivate");
    await axe("the confirmation dialog");
    await confirm(page, "Deactivate");
    await page.waitForSelector("#activate");
    assert.equal((await service.store.findById(grace.id))?.isActive, false);
    await page.click("#activate");
    await page.waitForSelector("#deactivate");
    assert.equal((await service.store.findById(grace.id))?.isActive, true);

    // Reset the second factors: the API's 204, audited with the admin as actor.
    await page.click("#reset-mfa");
    await confirm(page, "Reset second factors");
    await page.getByText("Second factors reset.").waitFor();
    const events = await service.app.inject({
      url: `/users/${grace.id}/events`,
      headers: {
        authorization: `Bearer ${(await requestToken(service.app, { username: admin.email, password: PASSWORD })).json().access_token}`,
      },
    });
    assert.ok(events.json().items.some((event: { type: string }) => event.type === "second_factor"));

    // Apps: register a confidential app; its secret is shown once.
    await page.getByRole("link", { name: "Apps" }).click();
    await page.waitForSelector("#register-app");
    await axe("the apps screen");
    await page.getByLabel("client_name").fill("Partner portal");
    // The API's refusal, in its words (the detail), never raw JSON.
    await page.getByLabel("redirect_uris", { exact: true }).fill("http://partner.example.com/callback");
    await page.getByRole("button", { name: "Register the app" }).click();
    const refusal = page.locator("#register-app .status.error");
    await refusal.waitFor();
    assert.match((await refusal.textContent()) ?? "", /^redirect_uris: http is allowed only on a loopback host/);
    await page.getByLabel("redirect_uris", { exact: true }).fill(`${rp.origin}/callback`);
    await page.getByRole("button", { name: "Register the app" }).click();
    const secret = (await page.locator("#shown-secret").textContent()) ?? "";
    assert.ok(secret.length >= 32);
    await axe("the secret shown once");
    const link = page.getByRole("link", { name: "Open Partner portal" });
    const clientId = decodeURIComponent((await link.getAttribute("href"))?.split("/").pop() ?? "");
    await link.click();
    await page.waitForSelector("#rotate-secret");
    assert.equal(await page.locator("#shown-secret").count(), 0, "the secret is not shown again");
    await page.getByText("openid-client").first().click();
    assert.match((await page.locator(".snippets").textContent()) ?? "", new RegExp(service.issuer));
    await axe("an app's page");

    // The app completes a code flow with that secret (openid-client); the browser is signed in already.
    const config = await client.discovery(
      new URL(service.issuer),
      clientId,
      undefined,
      client.ClientSecretBasic(secret),
      {
        execute: [client.allowInsecureRequests],
      },
    );
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const appPage = await page.context().newPage();
    const back = rp.next();
    await appPage.goto(
      client
        .buildAuthorizationUrl(config, {
          redirect_uri: `${rp.origin}/callback`,
          scope: "openid email",
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
          state,
        })
        .toString(),
    );
    await appPage.click("#allow");
    const tokens = await client.authorizationCodeGrant(config, await back, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    assert.equal(tokens.claims()?.sub, admin.id);
    await appPage.close();

    // Webhooks: add an endpoint (secret shown once), then rotate its secret.
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.waitForSelector("#create-webhook");
    await page.getByText("No webhook endpoints yet").waitFor();
    await axe("the webhooks screen");
    await page.getByLabel("Address (url)").fill("http://127.0.0.1:9/hook");
    await page.getByRole("button", { name: "Add the endpoint" }).click();
    const firstSecret = (await page.locator("#shown-secret").textContent()) ?? "";
    assert.match(firstSecret, /^whsec_/);
    await page.getByRole("link", { name: "http://127.0.0.1:9/hook" }).click();
    await page.waitForSelector("#rotate-webhook-secret");
    await axe("a webhook's page");
    await page.click("#rotate-webhook-secret");
    await confirm(page, "Rotate");
    await page.locator("#shown-secret").waitFor();
    const rotated = (await page.locator("#shown-secret").textContent()) ?? "";
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, firstSecret);

    // A phone's width: the navigation and the screen stay readable (no sideways scrolling of the page).
    await page.setViewportSize({ width: 360, height: 800 });
    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForSelector("#user-results table");
    const overflow = Number(
      await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"),
    );
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px at 360 px`);
    await axe("the users screen at 360 px");

    // Sign out: RP-initiated logout ends the browser's session at the service.
    await page.click("#sign-out");
    await page.getByRole("heading", { name: "Signed out" }).waitFor();
    await axe("the signed-out page");
    await page.getByRole("button", { name: "Sign in again" }).click();
    await page.waitForURL(/\/sign-in\?/);

    const foreign = requests.filter((url) => new URL(url).origin !== service.issuer);
    assert.deepEqual(foreign, [], "no request to another host");
    assert.deepEqual(complaints, []);
  });

  test("an admin with an authenticator app signs in with its code; a non-admin is refused; the API wants a token", async (t) => {
    const { service } = await startConsole(t);
    const admin = await makeAdmin(service, "admin@example.com");
    await createUser(service.store, "plain@example.com", PASSWORD);
    const own = await requestToken(service.app, { username: admin.email, password: PASSWORD });
    const auth = { authorization: `Bearer ${own.json().access_token}` };
    const { secret } = (await service.app.inject({ method: "POST", url: "/me/totp", headers: auth })).json();
    const confirmed = await service.app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: auth,
      payload: { code: codeAt(secret, service.clock.now) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    service.clock.advanceSeconds(60);

    const { page, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/users`);
    await signIn(page, admin.email);
    await page.waitForSelector("#otp-form:not([hidden])");
    await page.fill("#otp", codeAt(secret, service.clock.now));
    await page.click("#otp-form button");
    await page.waitForSelector("#user-results table");
    assert.equal(await page.locator(".who").textContent(), admin.email);

    // A non-admin: the refusal page, and no admin data asked for.
    const other = await openPage(t);
    const adminCalls: string[] = [];
    other.page.on("request", (request) => {
      const path = new URL(request.url()).pathname;
      if (/^\/(users|clients|webhooks)/.test(path)) adminCalls.push(path);
    });
    await other.page.goto(`${service.issuer}/admin/`);
    await signIn(other.page, "plain@example.com");
    await other.page.getByRole("heading", { name: "Admins only" }).waitFor();
    await other.axe("the refusal page");
    assert.deepEqual(adminCalls, []);
    assert.equal(await other.page.locator("#user-results").count(), 0);

    // The routes the console calls, without a token: 401 with WWW-Authenticate: Bearer, uncached.
    for (const path of ["/users", "/clients", "/webhooks", `/clients/${CONSOLE_CLIENT_ID}`, "/me"]) {
      const answer = await fetch(`${service.issuer}${path}`);
      assert.equal(answer.status, 401, path);
      assert.equal(answer.headers.get("www-authenticate"), "Bearer", path);
      assert.equal(answer.headers.get("cache-control"), "no-store", path);
    }
    // With the admin's token, the answers the console reads are uncached too.
    for (const path of [
      "/me",
      "/me/mfa",
      "/users",
      `/users/${admin.id}`,
      `/users/${admin.id}/events`,
      "/clients",
      `/clients/${CONSOLE_CLIENT_ID}`,
      "/webhooks",
    ]) {
      const answer = await fetch(`${service.issuer}${path}`, { headers: auth });
      assert.equal(answer.status, 200, path);
      assert.equal(answer.headers.get("cache-control"), "no-store", path);
    }
    await axe("the users screen after a second factor");

    // By keyboard alone: the skip link first, then a user's deactivation, cancelled with Escape, then confirmed.
    const plain = (await service.store.findByEmail("plain@example.com"))?.id as string;
    const focused = async () =>
      String(await page.evaluate("document.activeElement?.id || document.activeElement?.textContent"));
    await page.goto(`${service.issuer}/admin/#/users/${plain}`);
    await page.waitForSelector("#deactivate");
    // A screen takes the focus to its content (main); back with Shift+Tab, past the navigation, the skip link.
    assert.equal(await focused(), "main");
    let back = 0;
    while ((await focused()) !== "Skip to the content" && back < 10) {
      await page.keyboard.press("Shift+Tab");
      back += 1;
    }
    assert.equal(await focused(), "Skip to the content");
    await page.keyboard.press("Enter");
    assert.equal(await focused(), "main", "the skip link takes the focus to the content");
    assert.equal(new URL(page.url()).hash, `#/users/${plain}`, "and leaves the route alone");
    let presses = 0;
    while ((await focused()) !== "deactivate" && presses < 40) {
      await page.keyboard.press("Tab");
      presses += 1;
    }
    assert.equal(await focused(), "deactivate", "the Deactivate button is reached with Tab");
    await page.keyboard.press("Enter");
    await page.locator("dialog.confirm").waitFor();
    await page.keyboard.press("Escape");
    await page.locator("dialog.confirm").waitFor({ state: "detached" });
    assert.equal((await service.store.findById(plain))?.isActive, true, "Escape cancels");
    await page.focus("#deactivate");
    await page.keyboard.press("Enter");
    await page.locator("dialog.confirm").waitFor();
    await page.keyboard.press("Tab");
    assert.equal(await focused(), "Deactivate", "the dialog's action is reached with Tab");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#activate");
    assert.equal((await service.store.findById(plain))?.isActive, false);
  });

  test("a webhook endpoint hears of a user created in the console; its delivery log redelivers the event", async (t) => {
    const { service } = await startConsole(t);
    await makeAdmin(service, "admin@example.com");
    const receiver = new WebhookReceiver();
    await receiver.start();
    t.after(() => receiver.stop());
    receiver.now = service.clock.read;
    const { page, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/#/webhooks`);
    await signIn(page, "admin@example.com");
    await page.waitForSelector("#create-webhook");
    await page.getByLabel("Address (url)").fill(receiver.url);
    await page.getByRole("button", { name: "Add the endpoint" }).click();
    receiver.secrets = [((await page.locator("#shown-secret").textContent()) ?? "").trim()];

    await page.getByRole("link", { name: "Users" }).click();
    await page.waitForSelector("#create-user");
    await page.locator("#new-email").fill("newcomer@example.com");
    await page.locator("#new-password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create the user" }).click();
    await page.getByText("Created newcomer@example.com.").waitFor();
    await receiver.waitFor(() => receiver.accepted.length === 1);
    const eventId = receiver.accepted[0]?.id;

    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("link", { name: receiver.url }).click();
    // The endpoint's own delivery log, not the list of endpoints the page showed a moment before.
    const row = page.locator('section[aria-labelledby="deliveries-heading"] table tbody tr').first();
    await row.waitFor();
    assert.deepEqual(
      (await row.locator("td").allTextContents()).slice(1, 4),
      ["user.created", "1", "204"],
      "the event, its attempt and the receiver's answer",
    );
    await axe("the delivery log");
    await row.getByRole("button", { name: /^Deliver again/ }).click();
    await page.getByText("Queued again").waitFor();
    await receiver.waitFor(() => receiver.accepted.length === 2);
    assert.equal(receiver.accepted[1]?.id, eventId, "the same event, the same webhook-id");
  });

  test("ADMIN_CONSOLE_REQUIRE_MFA=on: an admin without a second factor is told how to add one", async (t) => {
    const { service } = await startConsole(t, true);
    await makeAdmin(service, "admin@example.com");
    const { page, axe } = await openPage(t);
    await page.goto(`${service.issuer}/admin/`);
    await signIn(page, "admin@example.com");
    await page.getByRole("heading", { name: "Add a second factor first" }).waitFor();
    assert.equal(await page.getByRole("link", { name: "security page" }).getAttribute("href"), "/account/security");
    assert.equal(await page.locator("#user-results").count(), 0);
    await axe("the second-factor page");
  });
});
