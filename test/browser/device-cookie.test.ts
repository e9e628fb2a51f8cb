// The device cookie in Debian's Chromium (playwright-core): the hosted
// sign-in page sets it, the page's own request to the token endpoint carries
// it, and the page's script cannot read it. Two browser profiles with the very
// same User-Agent are two devices (the cookie tells them apart); signing in
// again in the same profile is the same device. The new-device notices are read
// from the outbox, where the sign-in's transaction writes them.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { DEVICE_COOKIE } from "../../src/auth/devices.ts";
import type { UserStore } from "../../src/store/store.ts";
import { createUser } from "../helpers.ts";
import { type BrowserFixture, STEP_TIMEOUT, serveToChromium, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const EMAIL = "ada@example.com";

describe("the device cookie in Chromium", { skip: skipWithoutChromium("device-cookie") }, () => {
  let fixture: BrowserFixture;
  let browser: Browser;
  let app: FastifyInstance;
  let store: UserStore;
  let baseUrl: string;

  before(async (t) => {
    fixture = await serveToChromium(t as unknown as TestContext);
    ({ browser, app, store, baseUrl } = fixture);
  });

  after(() => fixture?.close());

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${baseUrl}/sign-in`);
    await page.getByLabel("E-mail").fill(EMAIL);
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByText(`Signed in as ${EMAIL}.`).waitFor();
  }

  test("one profile is one device, however often it signs in; another profile is another", async () => {
    const user = await createUser(store, EMAIL, PASSWORD);
    const notices = async () =>
      (await store.listMail({ limit: 100 })).filter((m) => m.userId === user.id && m.kind === "new_device").length;
    // The account's first device: a script, which is not news.
    const first = await app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "curl/8.5.0" },
      payload: new URLSearchParams({ username: EMAIL, password: PASSWORD }).toString(),
    });
    assert.equal(first.statusCode, 200);
    assert.equal(await notices(), 0);

    const laptop = await browser.newPage();
    laptop.setDefaultTimeout(STEP_TIMEOUT);
    const tokenRequests: (string | null)[] = [];
    laptop.on("request", async (request) => {
      if (new URL(request.url()).pathname === "/auth/token") tokenRequests.push(await request.headerValue("cookie"));
    });
    await signIn(laptop);
    assert.equal(await notices(), 1, "a new device");
    const [cookie] = (await laptop.context().cookies()).filter((c) => c.name === DEVICE_COOKIE);
    assert.ok(cookie);
    assert.deepEqual(
      { path: cookie.path, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, secure: cookie.secure },
      { path: "/", httpOnly: true, sameSite: "Strict", secure: false },
    );
    assert.ok(cookie.expires * 1000 > Date.now() + 399 * 86_400_000, "kept for 400 days");
    assert.equal(await laptop.evaluate("document.cookie"), "", "not for the page's scripts");
    // The sign-in, and the security page's refresh after it: each carries the cookie.
    assert.ok(tokenRequests.length > 0);
    for (const sent of tokenRequests) assert.equal(sent, `${DEVICE_COOKIE}=${cookie.value}`);

    await laptop.getByRole("button", { name: "Sign out" }).click();
    await laptop.getByText("You are signed out.").waitFor();
    await signIn(laptop);
    assert.equal(await notices(), 1, "the same profile: the same device");

    // Another profile of the same browser: the very same User-Agent, another device.
    const phone = await browser.newPage();
    phone.setDefaultTimeout(STEP_TIMEOUT);
    assert.equal(await phone.evaluate(() => navigator.userAgent), await laptop.evaluate(() => navigator.userAgent));
    await signIn(phone);
    assert.equal(await notices(), 2, "another profile: another device");
    await laptop.close();
    await phone.close();
  });
});
