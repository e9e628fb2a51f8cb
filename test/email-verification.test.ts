// E-mail verification end to end against a real SMTP server started by the
// test: the link mailed at sign-up, the resend endpoint, the login refusal
// for an unverified address when verification is required (only for a
// correct password), and e-mail changes: at once and unverified by default;
// with verification required, only when the new address confirms, with the
// old address told.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { USED_LINK } from "../src/auth/account-recovery.ts";
import type { Config } from "../src/config.ts";
import { EMAIL_NOT_VERIFIED } from "../src/core/token-routes.ts";
import { INCORRECT_EMAIL_OR_PASSWORD } from "../src/errors.ts";
import { VERIFICATION_REQUESTED } from "../src/recovery/routes.ts";
import { bearer, buildTestApp, requestToken, type TestApp, testConfig } from "./helpers.ts";
import { linkIn, MailServer, tokenIn } from "./mail-server.ts";

const PASSWORD = "correct horse battery";
const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

async function setup(t: TestContext, required = false): Promise<TestApp> {
  const base = testConfig();
  return buildTestApp(t, {
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    accountRecovery: { ...base.accountRecovery, verificationRequired: required },
  } satisfies Partial<Config>);
}

let counter = 0;
const address = (name = "verify") => `${name}${++counter}.${process.pid}@example.com`;

const mailFor = (email: string, count = 1) => smtp.mailsTo(email, count);

const signUp = (app: TestApp["app"], email: string) =>
  app.inject({ method: "POST", url: "/users", payload: { email, password: PASSWORD } });
const verify = (app: TestApp["app"], token: string) =>
  app.inject({ method: "POST", url: "/auth/email-verifications", payload: { token } });

describe("e-mail verification", () => {
  test("sign-up mails a link; opening it verifies the address, once", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    const created = await signUp(app, email);
    assert.equal(created.statusCode, 201);
    assert.equal(created.json().email_verified, false);
    assert.equal(created.json().email_verified_at, null);
    const mail = (await mailFor(email))[0]!;
    assert.equal(mail.subject, "Verify your e-mail address");
    const link = linkIn(mail);
    assert.equal(`${link.origin}${link.pathname}`, "http://service.test/verify-email");

    const verified = await verify(app, tokenIn(mail));
    assert.equal(verified.statusCode, 200);
    assert.equal(verified.json().email, email);
    const token = await requestToken(app, { username: email, password: PASSWORD });
    const me = await app.inject({ url: "/me", headers: bearer(token.json().access_token) });
    assert.equal(me.json().email_verified, true);
    assert.equal(me.json().email_verified_at, verified.json().email_verified_at);
    const again = await verify(app, tokenIn(mail));
    assert.equal(again.statusCode, 400);
    assert.deepEqual(again.json(), { detail: USED_LINK });
    const user = await store.findByEmail(email);
    const events = await store.listEvents({ userId: user!.id, limit: 50 });
    assert.ok(events.some((event) => event.type === "email_verification" && event.outcome === "verified"));
  });

  test("resend: 202 alike for any e-mail; a new link replaces the old one", async (t) => {
    const { app } = await setup(t);
    const email = address();
    await signUp(app, email);
    await mailFor(email, 1);
    for (const target of [email, "nobody-at-all@example.com"]) {
      const response = await app.inject({
        method: "POST",
        url: "/auth/email-verification-requests",
        payload: { email: target },
      });
      assert.equal(response.statusCode, 202);
      assert.deepEqual(response.json(), { message: VERIFICATION_REQUESTED });
    }
    const [first, second] = await mailFor(email, 2);
    assert.equal((await verify(app, tokenIn(first!))).statusCode, 400);
    assert.equal((await verify(app, tokenIn(second!))).statusCode, 200);
  });

  test("with verification required: a correct password gets 403 until verified, a wrong one the spec's 401", async (t) => {
    const { app } = await setup(t, true);
    const email = address();
    await signUp(app, email);
    const refused = await requestToken(app, { username: email, password: PASSWORD });
    assert.equal(refused.statusCode, 403);
    assert.deepEqual(refused.json(), { detail: EMAIL_NOT_VERIFIED });
    const wrong = await requestToken(app, { username: email, password: "not the password" });
    assert.equal(wrong.statusCode, 401);
    assert.deepEqual(wrong.json(), { detail: INCORRECT_EMAIL_OR_PASSWORD });
    assert.equal(wrong.headers["www-authenticate"], "Bearer");
    assert.equal((await verify(app, tokenIn((await mailFor(email))[0]!))).statusCode, 200);
    assert.equal((await requestToken(app, { username: email, password: PASSWORD })).statusCode, 200);
  });

  test("with verification required: an e-mail change waits for the new address, then the old one is told", async (t) => {
    const { app } = await setup(t, true);
    const email = address("old");
    const next = address("new");
    await signUp(app, email);
    await verify(app, tokenIn((await mailFor(email))[0]!));
    const access = (await requestToken(app, { username: email, password: PASSWORD })).json().access_token;

    const patched = await app.inject({
      method: "PATCH",
      url: "/me",
      headers: bearer(access),
      payload: { email: next },
    });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().email, email, "nothing changes before the new address confirms");
    assert.equal((await app.inject({ url: "/me", headers: bearer(access) })).statusCode, 200);
    const confirmation = (await mailFor(next))[0]!;
    assert.equal(confirmation.subject, "Confirm your new e-mail address");

    const confirmed = await verify(app, tokenIn(confirmation));
    assert.equal(confirmed.statusCode, 200);
    assert.equal(confirmed.json().email, next);
    const notice = (await mailFor(email, 2))[1]!;
    assert.equal(notice.subject, "The e-mail address of your account changed");
    assert.ok(!notice.text.includes(next), "the old inbox is not told the whole new address");
    assert.equal((await app.inject({ url: "/me", headers: bearer(access) })).statusCode, 401, "old tokens end");
    assert.equal((await requestToken(app, { username: next, password: PASSWORD })).statusCode, 200);
  });

  test("by default an e-mail change applies at once, unverified, with a link to the new address and a notice to the old", async (t) => {
    const { app } = await setup(t);
    const email = address("was");
    const next = address("now");
    await signUp(app, email);
    await verify(app, tokenIn((await mailFor(email))[0]!));
    const access = (await requestToken(app, { username: email, password: PASSWORD })).json().access_token;
    const patched = await app.inject({
      method: "PATCH",
      url: "/me",
      headers: bearer(access),
      payload: { email: next },
    });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().email, next);
    assert.equal(patched.json().email_verified, false);
    assert.equal((await mailFor(next))[0]!.subject, "Verify your e-mail address");
    assert.equal((await mailFor(email, 2))[1]!.subject, "The e-mail address of your account changed");
  });
});
