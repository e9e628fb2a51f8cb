// Security notifications (issue 26), end to end against a real SMTP server
// that the test starts: each notice arrives at the right address with its
// subject, text and HTML parts, the time, the device and the client address
// (or, for an administrator's action, neither), and no secret of any kind; a
// sign-in from a new device is told once, the same device never again; the
// caller's answer is the same whether or not a notice was queued; and each
// notice can be switched off on its own (SECURITY_NOTIFICATIONS).
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, type TestContext, test } from "node:test";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { buildApp } from "../src/app.ts";
import { DEVICE_COOKIE, KNOWN_DEVICES_PER_USER } from "../src/auth/devices.ts";
import { describeDevice, parseUserAgent } from "../src/auth/user-agent.ts";
import type { Config } from "../src/config.ts";
import { MFA_RECOVERY_CODE_GRANT } from "../src/core/schemas.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { NOTICE_KINDS, type NoticeKind, type UserRecord } from "../src/store/store.ts";
import { bearer, buildTestApp, createUser, passwords, type TestApp, TestClock, testConfig } from "./helpers.ts";
import { MailServer, type ReceivedMail, tokenIn } from "./mail-server.ts";
import { SoftAuthenticator } from "./soft-authenticator.ts";
import { codeAt } from "./totp.ts";

const PASSWORD = "correct horse battery";
const NEW_PASSWORD = "a brand new passphrase";
const PUBLIC_URL = "https://id.test.example";
const FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0";
const SAFARI_IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 " +
  "Mobile/15E148 Safari/604.1";
const CHROME_ANDROID =
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36";
/** Where the test's requests come from, as the service sees it (no proxy is trusted). */
const ORIGIN_ADDRESS = "203.0.113.7";

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

/** A unique address per user, so tests sharing the SMTP server read their own mail. */
let counter = 0;
const address = (name = "user") => `${name}${++counter}.${process.pid}@example.com`;

async function setUp(t: TestContext, overrides: Partial<Config> = {}): Promise<TestApp> {
  const base = testConfig();
  return buildTestApp(t, {
    publicUrl: PUBLIC_URL,
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    ...overrides,
  });
}

/** A request from the person's Firefox on Windows at ORIGIN_ADDRESS. */
function call(
  app: FastifyInstance,
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  url: string,
  options: { token?: string; payload?: object; agent?: string; headers?: Record<string, string> } = {},
) {
  return app.inject({
    method,
    url,
    remoteAddress: ORIGIN_ADDRESS,
    headers: {
      "user-agent": options.agent ?? FIREFOX,
      ...(options.token ? bearer(options.token) : {}),
      ...options.headers,
    },
    ...(options.payload ? { payload: options.payload } : {}),
  });
}

function grant(app: FastifyInstance, fields: Record<string, string>, agent = FIREFOX, cookie?: string) {
  return app.inject({
    method: "POST",
    url: "/auth/token",
    remoteAddress: ORIGIN_ADDRESS,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "user-agent": agent,
      ...(cookie ? { cookie } : {}),
    },
    payload: new URLSearchParams(fields).toString(),
  });
}

function expectStatus(response: LightMyRequestResponse, status: number): LightMyRequestResponse {
  assert.equal(response.statusCode, status, response.body);
  return response;
}

/** The person the actions are about: signed up, and signed in once from Firefox (their first device). */
interface Person {
  user: UserRecord;
  token: string;
  /** Every secret this person's actions handled: none may appear in any mail. */
  secrets: string[];
}

async function person(fixture: TestApp): Promise<Person> {
  const user = await createUser(fixture.store, address(), PASSWORD);
  const login = expectStatus(await grant(fixture.app, { username: user.email, password: PASSWORD }), 200);
  const { access_token, refresh_token } = login.json();
  return { user, token: access_token, secrets: [PASSWORD, NEW_PASSWORD, access_token, refresh_token] };
}

/** Turns on an authenticator app; answers its secret and recovery codes (both recorded as secrets). */
async function withAuthenticator(fixture: TestApp, who: Person) {
  const enrolment = expectStatus(await call(fixture.app, "POST", "/me/totp", { token: who.token }), 201);
  const { secret } = enrolment.json();
  const code = codeAt(secret, fixture.clock.now);
  const confirmed = expectStatus(
    await call(fixture.app, "POST", "/me/totp/confirm", { token: who.token, payload: { code } }),
    200,
  );
  const codes = confirmed.json().recovery_codes as string[];
  who.secrets.push(secret, code, ...codes);
  fixture.clock.advanceSeconds(90);
  return { secret, codes };
}

async function withPasskey(fixture: TestApp, who: Person): Promise<string> {
  const options = expectStatus(
    await call(fixture.app, "POST", "/me/passkeys/registration-options", { token: who.token }),
    200,
  ).json();
  const response = new SoftAuthenticator(PUBLIC_URL).register(options.options);
  const added = await call(fixture.app, "POST", "/me/passkeys", {
    token: who.token,
    payload: { challenge_id: options.challenge_id, name: "Work laptop", response },
  });
  return expectStatus(added, 201).json().id as string;
}

interface Action {
  /** Who the mail goes to: the person's address, except for an e-mail change (the previous one). */
  recipient?: (who: Person) => string;
  /** The administrator's doing: the mail shows neither device nor address. */
  byAdmin?: boolean;
  /** The device the mail names: the person's Firefox unless said. */
  device?: string;
  subject: string;
  summary: RegExp;
  /** The mail links to the security page. */
  review: boolean;
  run(fixture: TestApp, who: Person): Promise<void>;
}

const SECURITY_PAGE = "http://service.test/account/security";

/** Each notice, the action that causes it, and what its mail says. */
const ACTIONS: Record<NoticeKind, Action> = {
  password_changed: {
    subject: "Your password was changed",
    summary: /^The password of your account was changed, and every signed-in session was ended\.$/m,
    review: false,
    async run({ app }, who) {
      const payload = { current_password: PASSWORD, new_password: NEW_PASSWORD };
      expectStatus(await call(app, "PUT", "/me/password", { token: who.token, payload }), 204);
    },
  },
  password_reset_completed: {
    subject: "Your password was reset",
    summary: /^The password of your account was reset with a link sent to this address/m,
    review: false,
    async run({ app }, who) {
      const payload = { email: who.user.email };
      expectStatus(await call(app, "POST", "/auth/password-reset-requests", { payload }), 202);
      const [link] = await smtp.mailsTo(who.user.email);
      const token = tokenIn(link as ReceivedMail);
      who.secrets.push(token);
      const reset = await call(app, "POST", "/auth/password-resets", {
        payload: { token, new_password: NEW_PASSWORD },
      });
      expectStatus(reset, 204);
    },
  },
  email_changed: {
    recipient: (who) => who.user.email,
    subject: "The e-mail address of your account changed",
    summary: /^The e-mail address of your account is now n\*\*\*@example\.com\. This address no longer signs in\.$/m,
    review: false,
    async run({ app }, who) {
      const payload = { email: `new-${who.user.email}` };
      expectStatus(await call(app, "PATCH", "/me", { token: who.token, payload }), 200);
    },
  },
  new_device: {
    device: "Safari on iOS",
    subject: "A new sign-in to your account",
    summary: /^Your account was signed in to from a device or app it had not been used from before\.$/m,
    review: true,
    async run({ app }, who) {
      // Known: the first sign-in's Firefox. New: the same person's Safari on an iPhone... and Firefox again.
      const fields = { username: who.user.email, password: PASSWORD };
      expectStatus(await grant(app, fields, SAFARI_IPHONE), 200);
    },
  },
  second_factor_added: {
    subject: "An authenticator app was added to your account",
    summary: /^An authenticator app was set up as a second factor of your account\.$/m,
    review: true,
    async run(fixture, who) {
      await withAuthenticator(fixture, who);
    },
  },
  second_factor_removed: {
    subject: "An authenticator app was removed from your account",
    summary: /^The authenticator app of your account was turned off\.$/m,
    review: true,
    async run(fixture, who) {
      const { secret } = await withAuthenticator(fixture, who);
      const code = codeAt(secret, fixture.clock.now);
      who.secrets.push(code);
      const payload = { password: PASSWORD, code };
      expectStatus(await call(fixture.app, "POST", "/me/totp/disable", { token: who.token, payload }), 204);
    },
  },
  passkey_added: {
    subject: "A passkey was added to your account",
    summary: /^A passkey was added to your account: it can now sign in\.$/m,
    review: true,
    async run(fixture, who) {
      await withPasskey(fixture, who);
    },
  },
  passkey_removed: {
    subject: "A passkey was removed from your account",
    summary: /^A passkey was removed from your account: it no longer signs in\.$/m,
    review: true,
    async run(fixture, who) {
      const id = await withPasskey(fixture, who);
      expectStatus(await call(fixture.app, "DELETE", `/me/passkeys/${id}`, { token: who.token }), 204);
    },
  },
  recovery_code_used: {
    subject: "A recovery code was used",
    summary: /^One of your recovery codes was used to sign in to your account\. It will not work again\.$/m,
    review: true,
    async run(fixture, who) {
      const { codes } = await withAuthenticator(fixture, who);
      const challenge = expectStatus(await grant(fixture.app, { username: who.user.email, password: PASSWORD }), 403);
      const mfaToken = challenge.json().mfa_token as string;
      who.secrets.push(mfaToken);
      const fields = { grant_type: MFA_RECOVERY_CODE_GRANT, mfa_token: mfaToken, recovery_code: codes[0] as string };
      const signedIn = expectStatus(await grant(fixture.app, fields), 200);
      who.secrets.push(signedIn.json().access_token, signedIn.json().refresh_token);
    },
  },
  recovery_codes_regenerated: {
    subject: "New recovery codes were made",
    summary: /^New recovery codes were made for your account; the previous ones no longer work\.$/m,
    review: true,
    async run(fixture, who) {
      await withAuthenticator(fixture, who);
      const payload = { password: PASSWORD };
      const made = await call(fixture.app, "POST", "/me/recovery-codes", { token: who.token, payload });
      who.secrets.push(...(expectStatus(made, 200).json().recovery_codes as string[]));
    },
  },
  account_deactivated: {
    byAdmin: true,
    subject: "Your account was deactivated",
    summary: /^An administrator deactivated your account: it no longer signs in, and every session was ended\.$/m,
    review: false,
    async run(fixture, who) {
      const token = await adminToken(fixture);
      who.secrets.push(token);
      const payload = { is_active: false };
      expectStatus(await call(fixture.app, "PATCH", `/users/${who.user.id}`, { token, payload }), 200);
    },
  },
};

/** An administrator's access token. */
async function adminToken({ app, store }: TestApp): Promise<string> {
  const admin = await store.create({
    email: address("admin"),
    hashedPassword: await passwords.hash(PASSWORD),
    isAdmin: true,
  });
  const login = expectStatus(await grant(app, { username: admin.email, password: PASSWORD }), 200);
  return login.json().access_token as string;
}

/** The outbox's messages of one kind for one user (written in the same transaction as the change). */
async function queued(fixture: TestApp, userId: string, kind: NoticeKind) {
  const all = await fixture.store.listMail({ limit: 1000 });
  return all.filter((message) => message.userId === userId && message.kind === kind);
}

async function mailWithSubject(recipient: string, subject: string): Promise<ReceivedMail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = smtp.messages.find((message) => message.to.includes(recipient) && message.subject === subject);
    if (mail) return mail;
    if (Date.now() > deadline) throw new Error(`no mail "${subject}" to ${recipient}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How an English mail shows a time (mail/notices.ts, mailTime). */
const UTC_TIME = new Intl.DateTimeFormat("en", { dateStyle: "long", timeStyle: "short", timeZone: "UTC" });

describe("security notification mails", () => {
  for (const [kind, action] of Object.entries(ACTIONS) as [NoticeKind, Action][]) {
    test(`${kind}: subject, recipient, text and HTML with time, device and origin; no secret`, async (t) => {
      const fixture = await setUp(t);
      const who = await person(fixture);
      const recipient = (action.recipient ?? ((p: Person) => p.user.email))(who);
      const at = fixture.clock.now;
      await action.run(fixture, who);
      const mail = await mailWithSubject(recipient, action.subject);

      assert.equal(mail.to, recipient);
      assert.match(mail.raw, /Content-Type: multipart\/alternative/i);
      assert.match(mail.text, action.summary);
      // The clock moved (authenticator codes need a later step): the time is the action's, within minutes.
      // In the reader's language (English here), in UTC, to the minute (issue 37).
      const when = (/^When: (.*) \(UTC\)$/m.exec(mail.text) as RegExpExecArray)[1] as string;
      const near = Array.from({ length: 7 }, (_, minute) => UTC_TIME.format(at - (at % 60_000) + minute * 60_000));
      assert.ok(near.includes(when), `${when} near ${new Date(at).toISOString()}: one of ${near.join(", ")}`);
      const facts = action.byAdmin
        ? []
        : [
            `Device: ${action.device ?? "Firefox on Windows"}`,
            `From the network address: ${ORIGIN_ADDRESS} (approximate: it may be a provider's or a proxy's)`,
          ];
      for (const fact of facts) {
        assert.ok(mail.text.includes(`\n${fact}\n`), `text has "${fact}":\n${mail.text}`);
        assert.ok(mail.html.includes(`<br>${fact.replaceAll("'", "&#39;")}`), `HTML has "${fact}":\n${mail.html}`);
      }
      if (action.byAdmin) {
        assert.doesNotMatch(mail.text, /Device:|network address/);
        assert.ok(!mail.raw.includes(ORIGIN_ADDRESS), "an administrator's address is not shown");
      }
      assert.ok(mail.html.includes(mail.text.split("\n")[0]?.replaceAll('"', "&#34;") as string), mail.html);
      assert.equal(mail.text.includes(SECURITY_PAGE), action.review);
      assert.equal(mail.html.includes(`<a href="${SECURITY_PAGE}">`), action.review);
      assert.doesNotMatch(mail.text, /#token=|[?&]token=/, "no link that acts on its own");
      for (const secret of who.secrets) {
        assert.ok(!mail.raw.includes(secret), `the mail must not carry a secret (${secret.slice(0, 4)}...)`);
      }
      assert.ok(!mail.raw.includes(who.user.hashedPassword));
      assert.equal((await queued(fixture, who.user.id, kind)).length, 1, "one notice");
    });
  }

  test("new device: the whole mail, once per device; the answer is the same whether or not a mail went out", async (t) => {
    const fixture = await setUp(t);
    const { app } = fixture;
    const user = await createUser(fixture.store, address(), PASSWORD);
    const fields = { username: user.email, password: PASSWORD };
    const newDevices = async () => (await queued(fixture, user.id, "new_device")).length;
    const answers: { response: LightMyRequestResponse; mailed: boolean }[] = [];
    const signIn = async (agent: string, cookie?: string) => {
      const before = await newDevices();
      const response = expectStatus(await grant(app, fields, agent, cookie), 200);
      const mailed = (await newDevices()) > before;
      answers.push({ response, mailed });
      return mailed;
    };

    assert.equal(await signIn(FIREFOX), false, "the first device of an account is not news");
    assert.equal(await signIn(FIREFOX), false, "the same device");
    assert.equal(await signIn(CHROME_ANDROID), true, "a different device");
    assert.equal(await signIn(CHROME_ANDROID), false, "that device, again");
    assert.equal(await signIn(FIREFOX.replace("128.0", "129.0")), false, "a newer version of a known browser");
    // The hosted sign-in page's script asks for the browser's device cookie as it signs in (a view of the page
    // sets none): that browser is a device of its own...
    assert.equal((await call(app, "GET", "/sign-in")).headers["set-cookie"], undefined, "a page view sets no cookie");
    const asked = await call(app, "POST", "/sign-in/device");
    assert.equal(asked.statusCode, 204);
    assert.equal(asked.headers["cache-control"], "no-store");
    const setCookie = String(asked.headers["set-cookie"]);
    assert.match(
      setCookie,
      new RegExp(
        `^${DEVICE_COOKIE}=[\\w-]{22}\\.[\\w-]{22}; Path=/; Max-Age=34560000; HttpOnly; SameSite=Strict; Secure$`,
      ),
    );
    const cookie = setCookie.split(";")[0] as string;
    assert.equal(await signIn(FIREFOX, cookie), true, "a browser with a device cookie, first time");
    assert.equal(await signIn(FIREFOX, cookie), false, "... and never again");
    assert.equal(await signIn(SAFARI_IPHONE, cookie), false, "the cookie names the device, whatever the agent says");
    // ...and one with the cookie already gets none again; a forged or altered cookie counts as none.
    assert.equal(
      (await call(app, "POST", "/sign-in/device", { headers: { cookie } })).headers["set-cookie"],
      undefined,
    );
    const forged = `${cookie.slice(0, -2)}AA`;
    assert.equal(await signIn(CHROME_ANDROID, forged), false, "a forged cookie: known by its agent instead");
    assert.notEqual(
      (await call(app, "POST", "/sign-in/device", { headers: { cookie: forged } })).headers["set-cookie"],
      undefined,
    );

    // The caller cannot tell: same status, same headers, same body shape, whether or not a mail went out.
    const shape = ({ response }: (typeof answers)[number]) => ({
      status: response.statusCode,
      headers: Object.keys(response.headers).sort(),
      fixed: Object.fromEntries(
        ["cache-control", "pragma", "content-type", "x-content-type-options"].map((name) => [
          name,
          response.headers[name],
        ]),
      ),
      body: Object.keys(response.json()).sort(),
      tokenType: response.json().token_type,
    });
    const mailed = answers.filter((answer) => answer.mailed).map(shape);
    const silent = answers.filter((answer) => !answer.mailed).map(shape);
    assert.equal(mailed.length, 2);
    for (const answer of [...mailed, ...silent]) assert.deepEqual(answer, silent[0]);
    assert.equal(answers[0]?.response.headers["set-cookie"], undefined, "the token endpoint sets no cookie");

    // The whole mail, as the person reads it.
    const [first] = await queued(fixture, user.id, "new_device");
    assert.ok(first);
    const mail = await mailWithSubject(user.email, "A new sign-in to your account");
    const when = `${UTC_TIME.format(fixture.clock.now)} (UTC)`;
    assert.equal(
      mail.text,
      "Your account was signed in to from a device or app it had not been used from before.\n\n" +
        `When: ${when}\nDevice: Chrome on Android\n` +
        `From the network address: ${ORIGIN_ADDRESS} (approximate: it may be a provider's or a proxy's)\n\n` +
        "If this was not you, someone else may be able to sign in to your account: sign in, change your password, " +
        "and check your second factors, passkeys and signed-in sessions on your account's security page. If you " +
        "can no longer sign in, contact the people who run this service.\n\n" +
        `${SECURITY_PAGE}\n`,
    );
    const received = await smtp.mailsTo(user.email, 2);
    assert.deepEqual(
      received.map((message) => message.subject),
      ["A new sign-in to your account", "A new sign-in to your account"],
    );
    for (const message of received) assert.ok(!message.raw.includes(cookie.split("=")[1] as string));
  });

  test("the known devices are keyed hashes, never the User-Agent or the cookie; at most 30 per user", async (t) => {
    // A database file of its own, read behind the store's back (SQLite; the SQL is the same on PostgreSQL).
    const dir = mkdtempSync(join(tmpdir(), "devices-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const clock = new TestClock();
    const store = openSqliteStore(join(dir, "users.db"), clock.read);
    const app = await buildApp({ config: testConfig(), store, clock: clock.read });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    const user = await createUser(store, address(), PASSWORD);
    const cookie = String((await call(app, "POST", "/sign-in/device")).headers["set-cookie"]).split(";")[0] as string;
    expectStatus(await grant(app, { username: user.email, password: PASSWORD }, FIREFOX, cookie), 200);
    for (let i = 0; i < 40; i++) {
      clock.advanceSeconds(1);
      expectStatus(await grant(app, { username: user.email, password: PASSWORD }, `tool-${i}/1.0`), 200);
    }
    const db = new DatabaseSync(join(dir, "users.db"), { readOnly: true });
    t.after(() => db.close());
    const rows = db.prepare("SELECT * FROM known_devices WHERE user_id = ? ORDER BY last_seen_at").all(user.id);
    assert.equal(rows.length, KNOWN_DEVICES_PER_USER, "the least recently seen are forgotten");
    const stored = JSON.stringify(rows);
    for (const clue of ["tool-39", "Firefox", "Windows", cookie.split("=")[1] as string]) {
      assert.ok(!stored.includes(clue), `no ${clue} in the table`);
    }
    for (const row of rows) assert.match(String(row.device_hash), /^[\w-]{43}$/, "an HMAC-SHA-256, base64url");
    // The newest 30 stay: the first (cookie) device and the first ten tools were forgotten.
    assert.equal(rows.at(-1)?.last_seen_at, new Date(clock.now).toISOString());
  });

  test("secret rotation keeps known devices known (moved to the new key); last seen is written at most daily", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "devices-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const clock = new TestClock();
    const store = openSqliteStore(join(dir, "users.db"), clock.read);
    t.after(() => store.close());
    const db = new DatabaseSync(join(dir, "users.db"), { readOnly: true });
    t.after(() => db.close());
    const user = await createUser(store, address(), PASSWORD);
    const rows = () =>
      db.prepare("SELECT device_hash, last_seen_at FROM known_devices ORDER BY first_seen_at").all() as {
        device_hash: string;
        last_seen_at: string;
      }[];
    const notices = async () => (await store.listMail({ limit: 100 })).filter((m) => m.kind === "new_device").length;
    const withSecrets = async (signingSecrets: string[], work: (app: FastifyInstance) => Promise<void>) => {
      const app = await buildApp({ config: testConfig({ signingSecrets }), store, clock: clock.read });
      try {
        await work(app);
      } finally {
        await app.close();
      }
    };
    const signIn = async (app: FastifyInstance, agent: string) =>
      expectStatus(await grant(app, { username: user.email, password: PASSWORD }, agent), 200);
    const [oldSecret, newSecret] = ["o".repeat(32), "n".repeat(32)];

    await withSecrets([oldSecret], async (app) => {
      await signIn(app, FIREFOX);
      clock.advanceSeconds(1); // first seen in this order, which rows() reads them in
      await signIn(app, CHROME_ANDROID);
    });
    assert.equal(await notices(), 1);
    const [firefox, chrome] = rows();
    await withSecrets([newSecret, oldSecret], async (app) => {
      await signIn(app, CHROME_ANDROID);
    });
    assert.equal(await notices(), 1, "known under the old secret, still listed");
    assert.equal(rows()[0]?.device_hash, firefox?.device_hash, "not seen: as it was");
    assert.notEqual(rows()[1]?.device_hash, chrome?.device_hash, "seen: moved to the new secret's hash");
    await withSecrets([newSecret], async (app) => {
      await signIn(app, CHROME_ANDROID);
      assert.equal(await notices(), 1, "the moved device survives the old secret's removal");
      await signIn(app, FIREFOX);
      assert.equal(await notices(), 2, "one not seen during the rotation is new again");

      const lastSeen = () => rows().map((row) => row.last_seen_at);
      const before = lastSeen();
      clock.advanceSeconds(3600);
      await signIn(app, CHROME_ANDROID);
      assert.deepEqual(lastSeen(), before, "seen an hour later: nothing written");
      clock.advanceSeconds(2 * 86_400);
      await signIn(app, CHROME_ANDROID);
      assert.equal(rows()[1]?.last_seen_at, new Date(clock.now).toISOString(), "two days later: written");
    });
  });

  test("SECURITY_NOTIFICATIONS turns each notice off on its own", async (t) => {
    for (const [kind, action] of Object.entries(ACTIONS) as [NoticeKind, Action][]) {
      await t.test(`${kind} off`, async (t) => {
        const others = new Set(NOTICE_KINDS.filter((other) => other !== kind));
        const fixture = await setUp(t, { securityNotifications: others });
        const who = await person(fixture);
        await action.run(fixture, who);
        assert.deepEqual(await queued(fixture, who.user.id, kind), [], `${kind} is off`);
        // The switch is this kind's only: with it on, the same action queues it (see the tests above).
        const on = await setUp(t);
        const someone = await person(on);
        await action.run(on, someone);
        assert.equal((await queued(on, someone.user.id, kind)).length, 1, `${kind} is on by default`);
      });
    }
  });

  test("an administrator's reset of the second factors: told, without the administrator's device or address", async (t) => {
    const fixture = await setUp(t);
    const who = await person(fixture);
    await withAuthenticator(fixture, who);
    const admin = await adminToken(fixture);
    expectStatus(await call(fixture.app, "DELETE", `/users/${who.user.id}/mfa`, { token: admin }), 204);
    const mail = await mailWithSubject(who.user.email, "The second factors of your account were removed");
    assert.match(
      mail.text,
      /^An administrator removed every second factor of your account \(authenticator app, recovery codes and passkeys\): your password alone signs in until you set up a new one\.\n\nWhen: [^\n]+ \(UTC\)\n\nIf you think this is a mistake, contact the people who run this service\.\n\nhttp:\/\/service\.test\/account\/security\n$/,
    );
    assert.ok(!mail.raw.includes(ORIGIN_ADDRESS));
    for (const secret of [...who.secrets, admin]) assert.ok(!mail.raw.includes(secret));
  });

  test("without MAIL_URL, notices go where every mail goes: .eml files", async (t) => {
    const directory = mkdtempSync(join(tmpdir(), "notices-"));
    t.after(() => rmSync(directory, { recursive: true, force: true }));
    const base = testConfig();
    const fixture = await buildTestApp(t, {
      mail: { ...base.mail, transport: { kind: "file", directory }, pollIntervalMs: 100 },
    });
    const who = await person(fixture);
    await ACTIONS.password_changed.run(fixture, who);
    const deadline = Date.now() + 10_000;
    let files: string[] = [];
    while (files.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      files = readdirSync(directory).filter((name) => name.endsWith(".eml"));
    }
    assert.equal(files.length, 1);
    const eml = readFileSync(join(directory, files[0] as string), "utf8");
    assert.match(eml, new RegExp(`^To: ${who.user.email.replaceAll(".", "\\.")}$`, "m"));
    assert.match(eml, /^Subject: Your password was changed$/m);
  });

  test("a notice that cannot be delivered never fails the request it reports", async (t) => {
    // The default test transport is an SMTP port where nothing listens: the change answers as ever.
    const fixture = await buildTestApp(t);
    const who = await person(fixture);
    await ACTIONS.password_changed.run(fixture, who);
    assert.equal((await queued(fixture, who.user.id, "password_changed")).length, 1);
  });

  test("none: no notice at all, and every request answers as before", async (t) => {
    const fixture = await setUp(t, { securityNotifications: new Set() });
    const who = await person(fixture);
    await ACTIONS.new_device.run(fixture, who);
    await ACTIONS.password_changed.run(fixture, who);
    const kinds = (await fixture.store.listMail({ limit: 100 })).map((message) => message.kind);
    assert.deepEqual(kinds, []);
  });
});

describe("the User-Agent reader", () => {
  const cases: [string | null, string, string][] = [
    [FIREFOX, "Firefox", "Windows"],
    [SAFARI_IPHONE, "Safari", "iOS"],
    [CHROME_ANDROID, "Chrome", "Android"],
    [
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
      "Safari",
      "macOS",
    ],
    [
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
      "Edge",
      "Windows",
    ],
    [
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 OPR/111.0.0.0",
      "Opera",
      "Linux",
    ],
    [
      "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
      "Chrome",
      "ChromeOS",
    ],
    [
      "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 FxiOS/127.0 Mobile/15E148",
      "Firefox",
      "iOS",
    ],
    ["curl/8.5.0", "curl", "an unknown system"],
    ["python-requests/2.32.3", "python-requests", "an unknown system"],
    ["okhttp/4.12.0 (Android 14)", "okhttp", "Android"],
    ["", "an unknown browser or app", "an unknown system"],
    [null, "an unknown browser or app", "an unknown system"],
    ["\u0000<script>", "an unknown browser or app", "an unknown system"],
  ];
  for (const [agent, browser, system] of cases) {
    test(`${JSON.stringify(agent?.slice(0, 60))}: ${browser} on ${system}`, () => {
      assert.deepEqual(parseUserAgent(agent), { browser, system });
      assert.equal(describeDevice(agent), `${browser} on ${system}`);
    });
  }
  test("a client it does not know keeps its name apart, but a mail does not show words its sender chose", () => {
    const agent = "Call-support-at-555-0100/1.0";
    assert.deepEqual(parseUserAgent(agent), { browser: "Call-support-at-555-0100", system: "an unknown system" });
    assert.equal(describeDevice(agent), "an app or script on an unknown system");
  });
});
