// Password reset by e-mail, end to end against a real SMTP server that the
// test starts: the request, the mail that arrives (text and HTML parts, a
// Message-ID, a link built from the settings only), the new password, and
// what must not work: a link used twice, an expired one, one replaced by a
// newer request, a common password, a session from before the reset.
// Enumeration parity: status, body and timing alike for unknown e-mails.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { EXPIRED_LINK, INVALID_LINK, USED_LINK } from "../src/auth/account-recovery.ts";
import { generatePrivateKeyPem } from "../src/auth/keys.ts";
import { COMMON_PASSWORD, PASSWORD_CONTAINS_EMAIL } from "../src/auth/password-policy.ts";
import type { Config } from "../src/config.ts";
import { RESET_REQUESTED } from "../src/recovery/routes.ts";
import { bearer, buildTestApp, createUser, requestToken, type TestApp, testConfig } from "./helpers.ts";
import { linkIn, MailServer, tokenIn } from "./mail-server.ts";
import { assertTimingParity } from "./timing-parity.ts";

const PASSWORD = "correct horse battery";
const NEW_PASSWORD = "a brand new passphrase";

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

function mailConfig(overrides: Partial<Config> = {}): Partial<Config> {
  const base = testConfig();
  return {
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    ...overrides,
  };
}

async function setup(t: TestContext, overrides: Partial<Config> = {}): Promise<TestApp> {
  return buildTestApp(t, mailConfig(overrides));
}

const requestReset = (app: TestApp["app"], email: string, headers: Record<string, string> = {}) =>
  app.inject({ method: "POST", url: "/auth/password-reset-requests", payload: { email }, headers });
const confirmReset = (app: TestApp["app"], token: string, new_password: string) =>
  app.inject({ method: "POST", url: "/auth/password-resets", payload: { token, new_password } });

/** A unique address per test, so tests sharing the SMTP server read their own mail. */
let counter = 0;
const address = () => `reset${++counter}.${process.pid}@example.com`;

const mailFor = (email: string, count = 1) => smtp.mailsTo(email, count);

describe("password reset by e-mail", () => {
  test("end to end: 202, a mail with text and HTML and a Message-ID, the new password works, the old does not", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    const user = await createUser(store, email, PASSWORD);
    const response = await requestReset(app, email);
    assert.equal(response.statusCode, 202);
    assert.deepEqual(response.json(), { message: RESET_REQUESTED });

    const [mail] = await mailFor(email);
    assert.ok(mail);
    assert.equal(mail.subject, "Reset your password");
    assert.match(mail.messageId, /^<[0-9a-f-]{36}@service\.test>$/);
    assert.match(mail.raw, /Content-Type: multipart\/alternative/i);
    const link = linkIn(mail);
    assert.equal(`${link.origin}${link.pathname}`, "http://service.test/reset-password");
    assert.equal(link.search, "", "the token is never in a query string");
    const token = tokenIn(mail);
    assert.ok(Buffer.from(token, "base64url").length >= 32, "at least 256 random bits");
    assert.ok(mail.html.includes(`#token=${token}`));
    // Only the hash is stored.
    assert.equal(await store.findAccountToken(token), undefined);

    assert.equal((await confirmReset(app, token, NEW_PASSWORD)).statusCode, 204);
    assert.equal((await requestToken(app, { username: email, password: NEW_PASSWORD })).statusCode, 200);
    assert.equal((await requestToken(app, { username: email, password: PASSWORD })).statusCode, 401);
    const events = await store.listEvents({ userId: user.id, limit: 50 });
    assert.ok(events.some((event) => event.type === "password_reset" && event.outcome === "success"));
    assert.ok(events.some((event) => event.type === "mail" && event.outcome === "password_reset_sent"));
    // A reset link proves the address too.
    assert.notEqual((await store.findById(user.id))?.emailVerifiedAt, null);
  });

  for (const algorithm of ["EdDSA", "ES256"] as const) {
    test(`under ${algorithm} (no signing secret): the link is sealed with the private key and arrives, and works`, async (t) => {
      const { app, store } = await setup(t, {
        signingAlgorithm: algorithm,
        signingSecrets: [],
        signingKeys: [generatePrivateKeyPem(algorithm)],
      });
      const email = address();
      await createUser(store, email, PASSWORD);
      assert.equal((await requestReset(app, email)).statusCode, 202);
      const [mail] = await mailFor(email);
      assert.ok(mail, "the mail arrives");
      assert.equal((await confirmReset(app, tokenIn(mail), NEW_PASSWORD)).statusCode, 204);
      assert.equal((await requestToken(app, { username: email, password: NEW_PASSWORD })).statusCode, 200);
    });
  }

  test("a link works once", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email);
    const token = tokenIn((await mailFor(email))[0]!);
    assert.equal((await confirmReset(app, token, NEW_PASSWORD)).statusCode, 204);
    const again = await confirmReset(app, token, "yet another passphrase");
    assert.equal(again.statusCode, 400);
    assert.deepEqual(again.json(), { detail: USED_LINK });
    assert.equal((await requestToken(app, { username: email, password: NEW_PASSWORD })).statusCode, 200);
  });

  test("two uses of one link at the same moment: exactly one wins", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email);
    const token = tokenIn((await mailFor(email))[0]!);
    const results = await Promise.all([
      confirmReset(app, token, NEW_PASSWORD),
      confirmReset(app, token, "a competing passphrase"),
    ]);
    assert.deepEqual(results.map((response) => response.statusCode).sort(), [204, 400]);
  });

  test("a link expires after PASSWORD_RESET_TTL_SECONDS (injected clock)", async (t) => {
    const base = testConfig();
    const { app, store, clock } = await setup(t, {
      accountRecovery: { ...base.accountRecovery, passwordResetTtlSeconds: 600 },
    });
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email);
    const mail = (await mailFor(email))[0]!;
    assert.match(mail.text, /for 10 minutes/);
    clock.advanceSeconds(601);
    const response = await confirmReset(app, tokenIn(mail), NEW_PASSWORD);
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { detail: EXPIRED_LINK });
    assert.equal((await requestToken(app, { username: email, password: PASSWORD })).statusCode, 200);
  });

  test("a newer request spends the older link", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email);
    await mailFor(email, 1);
    await requestReset(app, email);
    const [first, second] = await mailFor(email, 2);
    assert.notEqual(first!.messageId, second!.messageId);
    const old = await confirmReset(app, tokenIn(first!), NEW_PASSWORD);
    assert.equal(old.statusCode, 400);
    assert.deepEqual(old.json(), { detail: USED_LINK });
    assert.equal((await confirmReset(app, tokenIn(second!), NEW_PASSWORD)).statusCode, 204);
  });

  test("a reset ends every session and every access token issued before it", async (t) => {
    const { app, store, clock } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    const login = (await requestToken(app, { username: email, password: PASSWORD })).json();
    await requestReset(app, email);
    const token = tokenIn((await mailFor(email))[0]!);
    clock.advanceSeconds(1);
    assert.equal((await confirmReset(app, token, NEW_PASSWORD)).statusCode, 204);
    clock.advanceSeconds(1);
    const me = await app.inject({ url: "/me", headers: bearer(login.access_token) });
    assert.equal(me.statusCode, 401);
    const refresh = await requestToken(app, { grant_type: "refresh_token", refresh_token: login.refresh_token });
    assert.equal(refresh.statusCode, 401);
  });

  test("links come from the settings, never from Host or X-Forwarded-Host", async (t) => {
    const base = testConfig();
    const { app, store } = await setup(t, {
      trustProxy: true,
      accountRecovery: { ...base.accountRecovery, linkBaseUrl: "https://app.example.com/account" },
    });
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email, { host: "evil.example", "x-forwarded-host": "evil.example" });
    const mail = (await mailFor(email))[0]!;
    assert.ok(!mail.raw.includes("evil.example"));
    const link = linkIn(mail);
    assert.equal(`${link.origin}${link.pathname}`, "https://app.example.com/account/reset-password");
  });

  test("unknown, bad and malformed tokens: 400 or 422 with a reason, never a 500", async (t) => {
    const { app } = await setup(t);
    const unknown = await confirmReset(app, "A".repeat(43), NEW_PASSWORD);
    assert.equal(unknown.statusCode, 400);
    assert.deepEqual(unknown.json(), { detail: INVALID_LINK });
    assert.equal((await confirmReset(app, "", NEW_PASSWORD)).statusCode, 422);
    assert.equal((await confirmReset(app, "x".repeat(500), NEW_PASSWORD)).statusCode, 422);
    const short = await confirmReset(app, "A".repeat(43), "short");
    assert.equal(short.statusCode, 422);
  });

  test("common, breached and e-mail-like passwords are refused with 422 and the link survives", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await requestReset(app, email);
    const token = tokenIn((await mailFor(email))[0]!);
    for (const weak of ["password123", "Password123", "qwerty123", "iloveyou1", "11111111"]) {
      const response = await confirmReset(app, token, weak);
      assert.equal(response.statusCode, 422, weak);
      assert.deepEqual(response.json(), { detail: COMMON_PASSWORD });
    }
    const withEmail = await confirmReset(app, token, `my ${email.split("@")[0]} secret`);
    assert.deepEqual(withEmail.json(), { detail: PASSWORD_CONTAINS_EMAIL });
    assert.equal((await confirmReset(app, token, NEW_PASSWORD)).statusCode, 204);
  });

  test("enumeration parity: same status and body, and time within 5%, for known and unknown e-mails", async (t) => {
    const { app, store } = await setup(t);
    const knownEmail = address();
    await createUser(store, knownEmail, PASSWORD);
    const unknown = "nobody-here@example.com";
    const [a, b] = [await requestReset(app, knownEmail), await requestReset(app, unknown)];
    assert.equal(a.statusCode, b.statusCode);
    assert.equal(a.body, b.body);
    assert.deepEqual(Object.keys(a.headers).sort(), Object.keys(b.headers).sort());

    // Timed as test/timing-parity.ts says. The known e-mail's work runs after its response: a transaction,
    // then the outbox's SMTP delivery and its record. That work slows the requests that follow it for a
    // while (its garbage, the SMTP session's end), the next one most: with only the known e-mail's samples
    // followed by a mail, the unknown e-mail's samples came sooner after one on average (a gap of 6-9 % on
    // a fast machine, the unknown e-mail the slower, with the route taking the same path for both). So
    // every sample is followed by exactly one mail, sent and recorded before the next: the known e-mail's
    // own, or, after the unknown e-mail, one to a third account, asked for outside the timed part.
    const third = address();
    await createUser(store, third, PASSWORD);
    const mailsTo = new Map([
      [knownEmail, 1],
      [third, 0],
    ]);
    const time = async (isKnown: boolean) => {
      const email = isKnown ? knownEmail : unknown;
      const started = process.hrtime.bigint();
      await requestReset(app, email);
      const elapsed = Number(process.hrtime.bigint() - started);
      const mailed = isKnown ? knownEmail : third;
      if (mailed === third) await requestReset(app, third);
      const count = (mailsTo.get(mailed) ?? 0) + 1;
      mailsTo.set(mailed, count);
      await mailFor(mailed, count);
      while ((await store.listMail({ status: "pending", limit: 1 })).length > 0)
        await new Promise((resolve) => setTimeout(resolve, 5));
      await smtp.idle();
      await new Promise((resolve) => setTimeout(resolve, 10));
      return elapsed;
    };
    await assertTimingParity(t, { pairs: 150, rounds: 3, bound: 0.05, time, what: "known and unknown e-mails" });
  });

  test("limits per client address and per target e-mail, known or not, answer 429", async (t) => {
    const base = testConfig();
    const { app } = await setup(t, {
      rateLimit: { ...base.rateLimit, enabled: true, mailRequestsPerEmail: 2, mailRequestsPerAddress: 5 },
    });
    for (const email of ["limit-known@example.com", "limit-unknown@example.com"]) {
      assert.equal((await requestReset(app, email)).statusCode, 202);
      assert.equal((await requestReset(app, email)).statusCode, 202);
      const refused = await requestReset(app, email);
      assert.equal(refused.statusCode, 429);
      assert.ok(refused.headers["retry-after"]);
    }
    assert.equal((await requestReset(app, "another@example.com")).statusCode, 429, "address over its limit of 5");
  });
});
