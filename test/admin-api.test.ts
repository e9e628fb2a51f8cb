// The service-wide admin API (issue 35): GET /events (the whole audit log,
// newest first, cursor pages, filters, CSV and JSON Lines export) and
// GET /admin/overview (the dashboard's counts), whole answers on either
// backend (TEST_BACKEND=postgres). GET /admin/settings has its own file
// (admin-settings.test.ts); refusals are in test/security/admin-api.test.ts.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { secretKeyId } from "../src/auth/keys.ts";
import { StoreUnavailable } from "../src/errors.ts";
import type { AuditEventType } from "../src/store/store.ts";
import {
  bearer,
  buildTestApp,
  loginToken,
  openTestStore,
  passwords,
  TEST_SECRET,
  TestClock,
  testConfig,
} from "./helpers.ts";

const PASSWORD = "correct horse battery";

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t);
  const { app, store } = testApp;
  const root = await store.create({
    email: "root@example.com",
    hashedPassword: await passwords.hash(PASSWORD),
    isAdmin: true,
  });
  let token = await loginToken(app, "root@example.com", PASSWORD);
  const get = (url: string) => app.inject({ method: "GET", url, headers: bearer(token) });
  /** A new token, after the test's clock has moved past the last one's expiry (a login event, counted). */
  const signInAgain = async () => {
    token = await loginToken(app, "root@example.com", PASSWORD);
  };
  /** Events written straight to the store, one second apart on the test's clock. */
  const record = async (type: AuditEventType, outcome: string, userId: string | null, clientAddress: string | null) => {
    testApp.clock.advanceSeconds(1);
    await store.recordEvent({ type, outcome, userId, clientAddress });
  };
  return { ...testApp, root, get, signInAgain, record };
}

describe("GET /events", () => {
  test("answers every event, those about no user too, newest first, with the user's e-mail", async (t) => {
    const { store, root, get, record, clock } = await setup(t);
    const ada = await store.create({ email: "ada@example.com", hashedPassword: "x" });
    await record("signup", "success", ada.id, "192.0.2.1");
    await record("login", "failure", null, "192.0.2.2");
    await record("mail", "sent", null, null);
    await store.remove(ada.id, { events: [{ type: "deletion", outcome: "success", clientAddress: null }] });
    const response = await get("/events");
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["cache-control"], "no-store");
    assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
    const all = await store.listServiceEvents({ limit: 100 });
    const at = (ms: number) => new Date(ms).toISOString();
    // Oldest first: root's login (at the start), ada's sign-up, the failed login, the mail, ada's deletion.
    assert.deepEqual(
      all.map((event) => [event.type, event.outcome]),
      [
        ["deletion", "success"],
        ["mail", "sent"],
        ["login", "failure"],
        ["signup", "success"],
        ["login", "success"],
      ],
    );
    const [deletion, mail, failure, signup, login] = all as [
      (typeof all)[0],
      (typeof all)[0],
      (typeof all)[0],
      (typeof all)[0],
      (typeof all)[0],
    ];
    assert.deepEqual(response.json(), {
      items: [
        {
          id: deletion.id,
          type: "deletion",
          outcome: "success",
          user_id: ada.id,
          user_email: null,
          client_address: null,
          created_at: at(clock.now),
          actor_id: null,
          actor_email: null,
        },
        {
          id: mail.id,
          type: "mail",
          outcome: "sent",
          user_id: null,
          user_email: null,
          client_address: null,
          created_at: at(clock.now),
          actor_id: null,
          actor_email: null,
        },
        {
          id: failure.id,
          type: "login",
          outcome: "failure",
          user_id: null,
          user_email: null,
          client_address: "192.0.2.2",
          created_at: at(clock.now - 1000),
          actor_id: null,
          actor_email: null,
        },
        {
          id: signup.id,
          type: "signup",
          outcome: "success",
          user_id: ada.id,
          user_email: null,
          client_address: "192.0.2.1",
          created_at: at(clock.now - 2000),
          actor_id: null,
          actor_email: null,
        },
        {
          id: login.id,
          type: "login",
          outcome: "success",
          user_id: root.id,
          user_email: "root@example.com",
          client_address: "127.0.0.1",
          created_at: at(clock.now - 3000),
          actor_id: null,
          actor_email: null,
        },
      ],
      next_cursor: null,
      next: null,
    });
  });

  test("cursor pages walk many events newest first, each once, keeping the filters", async (t) => {
    const { store, get } = await setup(t);
    for (let i = 0; i < 230; i++)
      await store.recordEvent({ type: "mail", outcome: `sent_${i}`, userId: null, clientAddress: "192.0.2.9" });
    const seen: string[] = [];
    let url: string | null = "/events?limit=100&type=mail&address=192.0.2.9";
    let pages = 0;
    while (url) {
      const response = await get(url);
      assert.equal(response.statusCode, 200, response.body);
      const page = response.json() as {
        items: { id: string; outcome: string }[];
        next: string | null;
        next_cursor: string | null;
      };
      seen.push(...page.items.map((item) => item.outcome));
      if (page.next) {
        assert.match(page.next, /^\/events\?limit=100&cursor=[A-Za-z0-9_-]+&type=mail&address=192.0.2.9$/);
        assert.ok(page.next.includes(`cursor=${page.next_cursor}`));
      }
      url = page.next;
      pages += 1;
    }
    assert.equal(pages, 3);
    assert.deepEqual(
      seen,
      Array.from({ length: 230 }, (_, i) => `sent_${229 - i}`),
    );
  });

  test("filters combine: user, type, outcome prefix, address, since and until", async (t) => {
    const { store, get, record, clock } = await setup(t);
    const ada = await store.create({ email: "ada@example.com", hashedPassword: "x" });
    const start = clock.now;
    await record("login", "refused_inactive", ada.id, "192.0.2.1"); // +1 s
    await record("login", "refused_unverified", ada.id, "192.0.2.2"); // +2 s: other address
    await record("login", "failure", ada.id, "192.0.2.1"); // +3 s: other outcome
    await record("login", "refused_inactive", null, "192.0.2.1"); // +4 s: no user
    await record("mail", "refused_x", ada.id, "192.0.2.1"); // +5 s: other type
    await record("login", "refused_inactive", ada.id, "192.0.2.1"); // +6 s
    const query = new URLSearchParams({
      user_id: ada.id.toUpperCase(),
      type: "login",
      outcome: "refused",
      address: "192.0.2.1",
    });
    const outcomes = async (extra: Record<string, string> = {}) => {
      const response = await get(`/events?${new URLSearchParams({ ...Object.fromEntries(query), ...extra })}`);
      assert.equal(response.statusCode, 200, response.body);
      return (response.json().items as { created_at: string }[]).map(
        (item) => (Date.parse(item.created_at) - start) / 1000,
      );
    };
    assert.deepEqual(await outcomes(), [6, 1]);
    assert.deepEqual(await outcomes({ since: new Date(start + 2000).toISOString() }), [6]);
    assert.deepEqual(await outcomes({ until: new Date(start + 5000).toISOString() }), [1]);
    // An offset is an instant like any other: +01:00 one hour ahead of UTC.
    const oneSecondInParis = new Date(start + 1000 + 3_600_000).toISOString().replace("Z", "+01:00");
    assert.deepEqual(await outcomes({ since: oneSecondInParis, until: oneSecondInParis }), [1]);
    // The prefix is a prefix, not a pattern: no wildcard, case-sensitive.
    assert.deepEqual(await outcomes({ outcome: "refused%" }), []);
    assert.deepEqual(await outcomes({ outcome: "REFUSED" }), []);
    assert.deepEqual(await outcomes({ outcome: "refused_i" }), [6, 1]);
  });

  test("bad input is 422 in the error shape", async (t) => {
    const { get } = await setup(t);
    const cases: [string, string][] = [
      ["/events?cursor=not-a-cursor", "querystring.cursor: not a cursor of this list"],
      ["/events?cursor=%24%24%24", "querystring.cursor: not a cursor of this list"],
      [
        `/events?cursor=${Buffer.from("ev1:nope").toString("base64url")}`,
        "querystring.cursor: not a cursor of this list",
      ],
      ["/events?cursor=0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f", "querystring.cursor: not a cursor of this list"],
      [`/events?cursor=${"a".repeat(201)}`, "querystring.cursor: must NOT have more than 200 characters"],
      ["/events?limit=0", "querystring.limit: must be >= 1"],
      ["/events?limit=101", "querystring.limit: must be <= 100"],
      ["/events?limit=ten", "querystring.limit: must be integer"],
      ["/events?type=nope", "querystring.type: must be equal to one of the allowed values"],
      ["/events?user_id=42", 'querystring.user_id: must match format "uuid"'],
      ["/events?since=2016-12-31T23:59:60Z", 'querystring.since: must match format "date-time"'],
      ["/events?until=yesterday", 'querystring.until: must match format "date-time"'],
      ["/events?format=xml", "querystring.format: must be equal to one of the allowed values"],
      ["/events?client_id=app", "querystring.client_id: unknown field"],
    ];
    for (const [url, detail] of cases) {
      const response = await get(url);
      assert.equal(response.statusCode, 422, `${url}: ${response.body}`);
      assert.deepEqual(response.json(), { detail }, url);
    }
  });
});

describe("GET /events exports", () => {
  test("CSV: a header row, RFC 4180 quoting, formulas defused, a download", async (t) => {
    const { store, get, record, clock } = await setup(t);
    const eve = await store.create({ email: "=evil@example.com", hashedPassword: "x" });
    await record("login", '=HYPERLINK("http://evil.example","click")', eve.id, "192.0.2.1");
    await record("login", "+1+1", null, "-2");
    await record("login", "@SUM(A1)", null, "\t9");
    await record("login", 'a,b "quoted"\r\nnext line', null, "\rx");
    await record("login", "plain", null, null);
    const response = await get(
      `/events?format=csv&type=login&since=${encodeURIComponent(new Date(clock.now - 4000).toISOString())}`,
    );
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["content-type"], "text/csv; charset=utf-8");
    assert.equal(response.headers["cache-control"], "no-store");
    const date = new Date(clock.now).toISOString().slice(0, 10);
    assert.equal(response.headers["content-disposition"], `attachment; filename="events-${date}.csv"`);
    const events = await store.listServiceEvents({ limit: 5, type: "login" });
    const row = (i: number, rest: string) => {
      const event = events[i] as (typeof events)[0];
      return `${event.id},${event.createdAt},login,${rest}\r\n`;
    };
    assert.equal(
      response.body,
      "id,created_at,type,outcome,user_id,user_email,client_address,actor_id,actor_email\r\n" +
        row(0, "plain,,,,,") +
        row(1, `"a,b ""quoted""\r\nnext line",,,"'\rx",,`) +
        row(2, "'@SUM(A1),,,'\t9,,") +
        row(3, "'+1+1,,,'-2,,") +
        row(4, `"'=HYPERLINK(""http://evil.example"",""click"")",${eve.id},'=evil@example.com,192.0.2.1,,`),
    );
  });

  test("JSON Lines: one event per line, the same as the pages, every event of a large log", async (t) => {
    const { store, get } = await setup(t);
    for (let i = 0; i < 1_150; i++)
      await store.recordEvent({ type: "mail", outcome: `sent_${i}`, userId: null, clientAddress: null });
    const response = await get("/events?format=jsonl&type=mail");
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["content-type"], "application/jsonl");
    assert.match(
      String(response.headers["content-disposition"]),
      /^attachment; filename="events-\d{4}-\d{2}-\d{2}\.jsonl"$/,
    );
    assert.ok(response.body.endsWith("\n"));
    const lines = response.body
      .slice(0, -1)
      .split("\n")
      .map((line) => JSON.parse(line));
    assert.equal(lines.length, 1_150);
    assert.deepEqual(
      lines.map((line) => line.outcome),
      Array.from({ length: 1_150 }, (_, i) => `sent_${1_149 - i}`),
    );
    const page = (await get("/events?type=mail&limit=3")).json();
    assert.deepEqual(lines.slice(0, 3), page.items);
    // An export with a cursor starts after it, like the page it follows.
    const rest = await get(`/events?format=jsonl&type=mail&cursor=${page.next_cursor}`);
    assert.equal(rest.body.split("\n").length - 1, 1_147);
  });

  test("an export reads the store a page of 500 at a time, as the client reads", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const reads: number[] = [];
    const counted = {
      ...store,
      listServiceEvents: async (query: Parameters<typeof store.listServiceEvents>[0]) => {
        const rows = await store.listServiceEvents(query);
        reads.push(rows.length);
        return rows;
      },
    };
    const app = await buildApp({ config: testConfig(), store: counted, clock: clock.read });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
    const token = await loginToken(app, "root@example.com", PASSWORD);
    for (let i = 0; i < 1_199; i++) {
      await store.recordEvent({ type: "mail", outcome: "sent", userId: null, clientAddress: null });
    }
    const response = await app.inject({ method: "GET", url: "/events?format=csv", headers: bearer(token) });
    assert.equal(response.statusCode, 200);
    // 1,200 events (root's login too): three pages of 500, 500 and 200, and a header row.
    assert.deepEqual(reads, [500, 500, 200]);
    assert.equal(response.body.split("\r\n").length - 2, 1_200);
    // A HEAD answers the headers without reading the whole log.
    reads.length = 0;
    const head = await app.inject({ method: "HEAD", url: "/events?format=csv", headers: bearer(token) });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers["content-type"], "text/csv; charset=utf-8");
    assert.equal(head.body, "");
    assert.ok(reads.length <= 1, `HEAD read ${reads.length} pages`);
  });

  test("an unreachable database is a 503 in the error shape, before any of the file is sent", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const down = {
      ...store,
      listServiceEvents: async () => {
        throw new StoreUnavailable();
      },
    };
    const app = await buildApp({ config: testConfig(), store: down, clock: clock.read });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
    const token = await loginToken(app, "root@example.com", PASSWORD);
    for (const format of ["csv", "jsonl", "json"]) {
      const response = await app.inject({ method: "GET", url: `/events?format=${format}`, headers: bearer(token) });
      assert.equal(response.statusCode, 503, format);
      assert.equal(response.headers["retry-after"], "1", format);
      assert.equal(response.headers["content-disposition"], undefined, format);
      assert.deepEqual(response.json(), { detail: "The service is temporarily unavailable; try again shortly" });
    }
  });

  test("an export of nothing is the header alone (CSV) or empty (JSON Lines)", async (t) => {
    const { get } = await setup(t);
    const csv = await get("/events?format=csv&type=dpop");
    assert.equal(csv.statusCode, 200);
    assert.equal(csv.body, "id,created_at,type,outcome,user_id,user_email,client_address,actor_id,actor_email\r\n");
    const jsonl = await get("/events?format=jsonl&type=dpop");
    assert.equal(jsonl.statusCode, 200);
    assert.equal(jsonl.body, "");
  });
});

describe("GET /admin/overview", () => {
  test("counts users, sign-ins by hour and day, outbox backlogs and names the signing keys", async (t) => {
    const { store, get, signInAgain, clock } = await setup(t);
    const HOUR = 3_600_000;
    // Root signed in at setup. Users: root (admin), two more, one of them inactive.
    await store.create({ email: "ada@example.com", hashedPassword: "x" });
    await store.create({ email: "bob@example.com", hashedPassword: "x", isActive: false });
    const login = (outcome: string) => store.recordEvent({ type: "login", outcome, userId: null, clientAddress: null });
    await login("failure");
    await login("mfa_required"); // a step: neither
    clock.advanceSeconds(3 * 3600); // three hours later
    await login("success_upstream");
    await login("refused_inactive");
    await login("failure");
    await store.recordEvent({ type: "mail", outcome: "success", userId: null, clientAddress: null }); // not a login
    await store.enqueueMail({
      kind: "password_reset",
      recipient: "ada@example.com",
      userId: null,
      payload: "{}",
      messageDomain: "service.test",
    });
    const queuedAt = clock.now;
    clock.advanceSeconds(90);
    await signInAgain();
    const response = await get("/admin/overview");
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["cache-control"], "no-store");
    const body = response.json();
    const now = clock.now;
    const hourStart = Math.floor(now / HOUR) * HOUR;
    const dayStart = Math.floor(now / (24 * HOUR)) * (24 * HOUR);
    const expectedHours = Array.from({ length: 24 }, (_, i) => ({
      start: new Date(hourStart - (23 - i) * HOUR).toISOString(),
      succeeded: 0,
      failed: 0,
    }));
    const bump = (buckets: typeof expectedHours, size: number, at: number, succeeded: number, failed: number) => {
      const bucket = buckets.find((b) => Date.parse(b.start) <= at && at < Date.parse(b.start) + size);
      assert.ok(bucket);
      bucket.succeeded += succeeded;
      bucket.failed += failed;
    };
    const expectedDays = Array.from({ length: 7 }, (_, i) => ({
      start: new Date(dayStart - (6 - i) * 24 * HOUR).toISOString(),
      succeeded: 0,
      failed: 0,
    }));
    const earlier = queuedAt - 3 * 3600 * 1000;
    for (const [buckets, size] of [
      [expectedHours, HOUR],
      [expectedDays, 24 * HOUR],
    ] as const) {
      bump(buckets, size, earlier, 1, 1); // root's sign-in, the first failure
      bump(buckets, size, queuedAt, 1, 2);
      bump(buckets, size, clock.now, 1, 0); // root's sign-in for this request
    }
    assert.deepEqual(body, {
      generated_at: new Date(now).toISOString(),
      users: { total: 3, active: 2, created_last_7_days: 3 },
      sign_ins: { last_24_hours: expectedHours, last_7_days: expectedDays },
      locked_out: {
        available: false,
        count: null,
        reason:
          "The login rate limits' counters are kept by key (in this process or in Redis) and cannot be listed, " +
          "so the service cannot count the accounts over a limit; refused logins show as failed sign-ins.",
      },
      mail_outbox: {
        pending: 1,
        oldest_pending_at: new Date(queuedAt).toISOString(),
        oldest_pending_age_seconds: 90,
        failed: 0,
      },
      webhook_outbox: { pending: 0, oldest_pending_at: null, oldest_pending_age_seconds: null, failed: 0 },
      backchannel_logouts: { failed: 0, retrying: 0 },
      signing_keys: [
        { kid: secretKeyId(TEST_SECRET), algorithm: "HS256", use: "access_tokens", signing: true, age_seconds: null },
      ],
    });
    assert.ok(!response.body.includes(TEST_SECRET));
  });

  test("the webhook outbox's backlog: events for a subscribed endpoint wait until delivered", async (t) => {
    const { store, get, clock } = await setup(t);
    await store.createWebhookEndpoint({
      url: "http://127.0.0.1:9/",
      description: null,
      eventTypes: ["user.created"],
      enabled: true,
      sealedSecret: "sealed",
    });
    const queuedAt = clock.now;
    for (const email of ["ada@example.com", "bob@example.com"]) {
      await store.create(
        { email, hashedPassword: "x" },
        { events: [{ type: "signup", outcome: "success", clientAddress: null }] },
      );
    }
    clock.advanceSeconds(30);
    const body = (await get("/admin/overview")).json();
    assert.deepEqual(body.webhook_outbox, {
      pending: 2,
      oldest_pending_at: new Date(queuedAt).toISOString(),
      oldest_pending_age_seconds: 30,
      failed: 0,
    });
  });

  test("the store: a mail given up on counts as failed, not pending; the oldest pending is the one left", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read); // no app: no sender claims behind the test's back
    const mail = (recipient: string) =>
      store.enqueueMail({ kind: "password_reset", recipient, userId: null, payload: "{}", messageDomain: "x.test" });
    await mail("ada@example.com");
    clock.advanceSeconds(10);
    await mail("bob@example.com");
    const secondAt = new Date(clock.now).toISOString();
    const now = new Date(clock.now).toISOString();
    const [first] = await store.claimMail("me", now, new Date(clock.now + 60_000).toISOString(), 1);
    assert.equal(first?.recipient, "ada@example.com");
    await store.completeMail(first.id, "me", { status: "failed", error: "refused" });
    const counts = await store.overviewCounts(clock.now);
    assert.deepEqual(counts.mailOutbox, { pending: 1, oldestCreatedAt: secondAt, failed: 1 });
    assert.deepEqual(counts.webhookOutbox, { pending: 0, oldestCreatedAt: null, failed: 0 });
  });

  test("users created more than 7 days ago and sign-ins older than a week are not counted", async (t) => {
    const { store, get, signInAgain, clock } = await setup(t);
    clock.advanceSeconds(8 * 86_400);
    await store.create({ email: "ada@example.com", hashedPassword: "x" });
    await signInAgain();
    const body = (await get("/admin/overview")).json();
    assert.deepEqual(body.users, { total: 2, active: 2, created_last_7_days: 1 });
    const total = (buckets: { succeeded: number; failed: number }[]) =>
      buckets.reduce((sum, bucket) => sum + bucket.succeeded + bucket.failed, 0);
    // Root's sign-in for this request alone; the one 8 days ago is out of range.
    assert.equal(total(body.sign_ins.last_7_days), 1);
    assert.equal(total(body.sign_ins.last_24_hours), 1);
  });
});
