// The admin console's service screens (issue 35) in Chromium against the
// service on a real port: the overview (the first screen after sign-in)
// shows the same counts as GET /admin/overview after some sign-ins and
// failures, with its charts and their tables; the audit log filtered by type
// and by user shows only those rows, and its CSV export (fetched with the
// token, saved through a Blob) holds the filtered rows; the settings screen
// shows secrets as set or unset and never a value (the signing secret is
// nowhere in the page). axe-core finds nothing on each screen, the CSP
// complains of nothing (the SVG chart uses no inline style) and no request
// goes to another host.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { createUser, requestToken } from "../helpers.ts";
import { makeAdmin, openPage, PASSWORD, signIn, startConsole } from "./admin-console-fixture.ts";
import { ARTIFACTS, launchChromium, skipWithoutChromium } from "./chromium.ts";

interface Bucket {
  succeeded: number;
  failed: number;
}
interface OverviewAnswer {
  users: { total: number; active: number; created_last_7_days: number };
  sign_ins: { last_24_hours: Bucket[]; last_7_days: Bucket[] };
}
interface EventPage {
  items: { id: string; outcome: string }[];
}

/** Polls until `check` stops throwing (a screen redraws after its API answer), or fails with its error. */
async function eventually(check: () => Promise<void>, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** The audit log's rows, as their cells' text. */
async function auditRows(page: Page) {
  const rows = page.locator("#audit-results tbody tr");
  const cells: string[][] = [];
  for (let i = 0; i < (await rows.count()); i += 1) cells.push(await rows.nth(i).locator("td").allTextContents());
  return cells;
}

/** RFC 4180 records of a small CSV without quoted line breaks (the export's rows here have none). */
function csvRecords(text: string) {
  return text
    .split("\r\n")
    .filter((line) => line !== "")
    .map((line) => line.split(","));
}

describe("the admin console's overview, audit log and settings", { skip: skipWithoutChromium("admin console") }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test("an admin reads the overview, filters and exports the audit log, and reads the settings", async (t) => {
    const signingSecret = `console-${randomBytes(24).toString("hex")}`;
    const { service } = await startConsole(t, false, {
      signingSecrets: [signingSecret],
      settingsGiven: { SIGNING_SECRET: signingSecret, PORT: "8000" },
    });
    const admin = await makeAdmin(service, "admin@example.com");
    const grace = await createUser(service.store, "grace@example.com", PASSWORD);
    await createUser(service.store, "ada@example.com", PASSWORD);
    const token = (await requestToken(service.app, { username: admin.email, password: PASSWORD })).json().access_token;
    const auth = { authorization: `Bearer ${token}` };
    // Some sign-ins and failed sign-ins for the overview and the audit log.
    for (let i = 0; i < 2; i += 1)
      assert.equal((await requestToken(service.app, { username: grace.email, password: PASSWORD })).statusCode, 200);
    for (const username of [grace.email, "nobody@example.com", "ada@example.com"])
      assert.equal((await requestToken(service.app, { username, password: "not the password" })).statusCode, 401);
    // And one thing the admin did to grace's account, which the log names the admin for.
    const verified = await service.app.inject({
      method: "PATCH",
      url: `/users/${grace.id}`,
      headers: auth,
      payload: { email_verified: true },
    });
    assert.equal(verified.statusCode, 200, verified.body);

    const { page, requests, complaints, axe } = await openPage(browser, t);
    await page.goto(`${service.issuer}/admin/`);
    await signIn(page, admin.email);

    // Overview, the first screen: the API's numbers (read after the console's own sign-in).
    await page.waitForSelector("#overview-users");
    assert.equal(new URL(page.url()).hash, "", "the overview is the default route");
    const api = async <T>(path: string) => {
      const answer = await fetch(`${service.issuer}${path}`, { headers: auth });
      assert.equal(answer.status, 200, path);
      return (await answer.json()) as T;
    };
    const overview = await api<OverviewAnswer>("/admin/overview");
    const sum = (buckets: Bucket[], kind: "succeeded" | "failed") =>
      buckets.reduce((total, bucket) => total + bucket[kind], 0);
    const text = async (selector: string) => ((await page.locator(selector).textContent()) ?? "").trim();
    assert.deepEqual(
      {
        total: await text("#users-total"),
        active: await text("#users-active"),
        created: await text("#users-new"),
        signIns24h: await text("#sign-ins-24h"),
        failed24h: await text("#failed-24h"),
        signIns7d: await text("#sign-ins-7d"),
        failed7d: await text("#failed-7d"),
      },
      {
        total: String(overview.users.total),
        active: String(overview.users.active),
        created: String(overview.users.created_last_7_days),
        signIns24h: String(sum(overview.sign_ins.last_24_hours, "succeeded")),
        failed24h: String(sum(overview.sign_ins.last_24_hours, "failed")),
        signIns7d: String(sum(overview.sign_ins.last_7_days, "succeeded")),
        failed7d: String(sum(overview.sign_ins.last_7_days, "failed")),
      },
    );
    assert.equal(overview.users.total, 3);
    assert.ok(sum(overview.sign_ins.last_24_hours, "succeeded") >= 4, "the admin's, grace's twice, the console's");
    assert.equal(sum(overview.sign_ins.last_24_hours, "failed"), 3);
    // The charts: one bar per bucket and kind, drawn in SVG; their numbers as tables.
    assert.equal(await page.locator("svg#chart-24h rect.bar").count(), 48);
    assert.equal(await page.locator("svg#chart-7d rect.bar").count(), 14);
    assert.equal(await page.locator("svg#chart-24h[role=img]").count(), 1);
    const dayTable = page.locator(".chart-figure").nth(1).locator("tbody tr");
    assert.equal(await dayTable.count(), 7);
    const today = await dayTable.nth(6).locator("td").allTextContents();
    const lastDay = overview.sign_ins.last_7_days[6] as Bucket;
    assert.deepEqual(today.slice(1), [String(lastDay.succeeded), String(lastDay.failed)]);
    assert.match(await text("#locked-count"), /^Not available\./);
    assert.equal(await page.locator("svg [style]").count(), 0, "no inline style in the chart");
    await axe("the overview");
    await page.screenshot({ path: `${ARTIFACTS}/admin-console-overview.png`, fullPage: true });
    await page.locator(".chart-figure summary").first().click();
    await axe("the overview with a chart's table open");

    // Audit log: filtered by type.
    await page.getByRole("link", { name: "Audit log", exact: true }).click();
    await page.waitForSelector("#audit-results table");
    await axe("the audit log");
    const logins = (await api<EventPage>("/events?type=login")).items;
    await page.locator("#audit-type").selectOption("login");
    await page.getByRole("button", { name: "Filter" }).click();
    await eventually(async () => {
      const rows = await auditRows(page);
      assert.equal(rows.length, logins.length);
      assert.ok(rows.every((cells) => cells[1] === "login"));
    });
    assert.deepEqual(
      (await auditRows(page)).map((cells) => cells[2]),
      logins.map((event) => event.outcome),
    );

    // Its CSV export: fetched with the token, saved as a file holding the same rows (no token in a URL).
    const downloading = page.waitForEvent("download");
    await page.click("#export-csv");
    const download = await downloading;
    assert.match(download.suggestedFilename(), /^events-\d{4}-\d{2}-\d{2}\.csv$/);
    const [header, ...records] = csvRecords(await readFile((await download.path()) as string, "utf8"));
    assert.deepEqual(header, [
      "id",
      "created_at",
      "type",
      "outcome",
      "user_id",
      "user_email",
      "client_address",
      "actor_id",
      "actor_email",
    ]);
    assert.deepEqual(
      records.map((cells) => cells[0]),
      logins.map((event) => event.id),
    );
    assert.ok(records.every((cells) => cells[2] === "login"));
    assert.ok(
      requests.every((url) => !url.includes(token)),
      "the token is in no URL",
    );

    // Filtered by user (given by e-mail), any type: only grace's rows, each linking to her page.
    const graces = (await api<EventPage>(`/events?user_id=${grace.id}`)).items;
    await page.locator("#audit-type").selectOption("");
    await page.locator("#audit-user").fill(grace.email);
    await page.getByRole("button", { name: "Filter" }).click();
    await eventually(async () => {
      const rows = await auditRows(page);
      assert.equal(rows.length, graces.length);
      assert.ok(rows.every((cells) => cells[3] === grace.email));
      // "By": the admin on what the admin did, nobody on what grace did.
      assert.deepEqual(
        rows.map((cells) => [cells[2], cells[4]]).filter(([outcome]) => outcome === "verified_by_admin"),
        [["verified_by_admin", admin.email]],
      );
      assert.ok(rows.every((cells) => cells[2] === "verified_by_admin" || cells[4] === "—"));
    });
    assert.ok(graces.length >= 3, "her sign-ins and her failure");
    const links = page.locator("#audit-results tbody a");
    assert.equal(await links.first().getAttribute("href"), `#/users/${grace.id}`);
    await axe("the filtered audit log");
    await links.first().click();
    await page.getByRole("heading", { name: grace.email }).waitFor();

    // A user the service does not know: said in words; a filter nothing matches: the empty state.
    await page.getByRole("link", { name: "Audit log", exact: true }).click();
    await page.waitForSelector("#audit-results table");
    await page.locator("#audit-user").fill("nobody-here@example.com");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("No user has the e-mail address nobody-here@example.com.").waitFor();
    await page.locator("#audit-user").fill("");
    await page.locator("#audit-outcome").fill("no_such_outcome");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.getByText("No event matches these filters").waitFor();
    await axe("the audit log's empty state");

    // Settings: secrets as set or unset only; the signing secret nowhere in the page.
    await page.getByRole("link", { name: "Settings" }).click();
    await page.waitForSelector("#features");
    const row = (name: string) => page.locator("tr", { has: page.locator(`code:text-is("${name}")`) });
    assert.deepEqual((await row("SIGNING_SECRET").locator("td").allTextContents()).slice(1, 2), ["Set (secret)"]);
    assert.deepEqual((await row("DATABASE_URL").locator("td").allTextContents()).slice(1, 2), ["Not set"]);
    assert.deepEqual((await row("PORT").locator("td").allTextContents()).slice(1, 2), ["8000"]);
    const html = await page.content();
    assert.ok(!html.includes(signingSecret), "the signing secret's value is not in the page");
    assert.ok(!html.includes(Buffer.from(signingSecret).toString("base64")));
    await axe("the settings");

    // Each screen at a phone's width: no sideways scrolling of the page.
    await page.setViewportSize({ width: 360, height: 800 });
    for (const [name, selector] of [
      ["Overview", "#overview-users"],
      ["Audit log", "#audit-results"],
      ["Settings", "#features"],
    ] as const) {
      await page.getByRole("link", { name, exact: true }).click();
      await page.waitForSelector(selector);
      const overflow = Number(
        await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"),
      );
      assert.ok(overflow <= 0, `${name} scrolls sideways by ${overflow} px at 360 px`);
    }

    const foreign = requests.filter((url) => new URL(url).origin !== service.issuer);
    assert.deepEqual(foreign, [], "no request to another host");
    assert.deepEqual(complaints, []);
  });
});
