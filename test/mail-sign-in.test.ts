// Sign-in by mail without a password (issue 37), in process with a real SMTP
// server (test/mail-server.ts): the ask (202, the attempt, the binding
// cookie), the mail (its text in the asking page's language, its link and
// code), the two grants and their token response (`amr`, refresh, audit),
// the expiry, PASSWORDLESS_MAIL's modes (link, code, off) and its settings
// rule, the sign-in page's section and script, discovery. The attacker's
// list: test/security/mail-sign-in.test.ts; the browser: test/browser/mail-sign-in.test.ts.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, type TestContext, test } from "node:test";
import { loadConfig } from "../src/config.ts";
import { ConfigError, UNSUPPORTED_GRANT_TYPE } from "../src/errors.ts";
import { INVALID_MAIL_SIGN_IN } from "../src/passwordless/mail-sign-in.ts";
import { createUser, passwords, requestToken } from "./helpers.ts";
import { MailServer } from "./mail-server.ts";
import {
  address,
  askMail,
  bindingOf,
  claimsOf,
  codeGrant,
  codeOf,
  linkGrant,
  linkOf,
  MAIL_CODE_GRANT,
  MAIL_LINK_GRANT,
  mailSignInApp,
  signInMails,
} from "./mail-sign-in-fixture.ts";

const PASSWORD = "correct horse battery";
const INVALID = { detail: INVALID_MAIL_SIGN_IN, error: "invalid_grant", error_description: INVALID_MAIL_SIGN_IN };

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

const setup = (t: TestContext, overrides: Parameters<typeof mailSignInApp>[2] = {}) =>
  mailSignInApp(t, smtp, overrides);

describe("sign-in by mail", () => {
  test("end to end by code: 202 and the cookie, the mail, the token response, amr, refresh, audit", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    const hashedPassword = await passwords.hash(PASSWORD);
    const user = await store.create({ email, hashedPassword, emailVerifiedAt: new Date().toISOString() });
    const asked = await askMail(app, email.toUpperCase());
    assert.equal(asked.statusCode, 202);
    assert.equal(asked.headers["content-type"], "application/json; charset=utf-8");
    const { attempt } = asked.json();
    assert.deepEqual(asked.json(), { attempt, expires_in: 900, delivery: ["link", "code"] });
    assert.match(
      String(asked.headers["set-cookie"]),
      /^uts_mail_sign_in=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900$/,
    );

    const [mail] = await signInMails(smtp, email);
    const link = linkOf(mail!);
    const code = codeOf(mail!);
    assert.equal(link.attempt, attempt);
    assert.equal(mail!.subject, "Your sign-in link");
    assert.equal(
      mail!.text,
      "Someone (we hope you) asked to sign in with this e-mail address. Open this link to sign in:\n\n" +
        `http://service.test/sign-in?mail_sign_in=${attempt}#token=${link.token}\n\n` +
        `Or enter this code on the sign-in page where you asked: ${code}\n\n` +
        "The link and the code work once, for 15 minutes.\n\n" +
        "If you did not ask for this, ignore this message: no one can sign in with it but you.\n",
    );
    assert.ok(
      mail!.html.includes(
        // The link's words in the brand's colour (branding/mail-parts.ts).
        `<a href="http://service.test/sign-in?mail_sign_in=${attempt}#token=${link.token}"><span style="color:#1d4ed8">Sign in</span></a>`,
      ),
    );

    const signedIn = await codeGrant(app, attempt, code);
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    assert.equal(signedIn.headers["cache-control"], "no-store");
    assert.equal(signedIn.headers.pragma, "no-cache");
    const body = signedIn.json();
    assert.deepEqual(Object.keys(body), ["access_token", "token_type", "expires_in", "refresh_token"]);
    assert.equal(body.token_type, "bearer");
    assert.equal(body.expires_in, 1800);
    const claims = claimsOf(body.access_token);
    assert.equal(claims.sub, email);
    assert.deepEqual(claims.amr, ["email", "otp"]);
    const me = await app.inject({
      method: "GET",
      url: "/me",
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().email, email);
    const refreshed = await requestToken(app, { grant_type: "refresh_token", refresh_token: body.refresh_token });
    assert.equal(refreshed.statusCode, 200);
    assert.deepEqual(claimsOf(refreshed.json().access_token).amr, ["email", "otp"]);
    const events = await store.listEvents({ userId: user.id, limit: 20 });
    assert.ok(events.some((event) => event.type === "login" && event.outcome === "success_mail_code"));
    assert.ok(events.some((event) => event.type === "login" && event.outcome === "mail_sign_in_requested"));
    // A verified account keeps its password: the mail proved an address that was already proven.
    assert.equal((await store.findById(user.id))?.hashedPassword, hashedPassword);
    assert.equal((await requestToken(app, { username: email, password: PASSWORD })).statusCode, 200);
  });

  test("by link in the browser that asked: amr email, no confirmation asked", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    const user = await store.create({ email, hashedPassword: "", emailVerifiedAt: new Date().toISOString() });
    const asked = await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const { attempt, token } = linkOf(mail!);
    const signedIn = await linkGrant(app, attempt, token, { cookie: bindingOf(asked) });
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    assert.deepEqual(claimsOf(signedIn.json().access_token).amr, ["email"]);
    const events = await store.listEvents({ userId: user.id, limit: 20 });
    assert.ok(events.some((event) => event.type === "login" && event.outcome === "success_mail_link"));
  });

  test("a browser that asks again keeps its binding: the earlier mail's link still opens there", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    const first = await askMail(app, email);
    const cookie = bindingOf(first);
    const second = await askMail(app, email, { cookie });
    assert.equal(bindingOf(second), cookie);
    const mails = await signInMails(smtp, email, 2);
    const earlier = mails.map(linkOf).find((link) => link.attempt === first.json().attempt);
    const signedIn = await linkGrant(app, earlier!.attempt, earlier!.token, { cookie });
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    // A cookie of another shape is not taken up.
    const odd = await askMail(app, address(), { cookie: "uts_mail_sign_in=short" });
    assert.notEqual(bindingOf(odd), "uts_mail_sign_in=short");
  });

  test("the mail is in the asking page's language (Accept-Language, the language cookie)", async (t) => {
    const { app } = await setup(t);
    const de = address("de");
    await askMail(app, de, { "accept-language": "de-AT,de;q=0.9,en;q=0.5" });
    const [german] = await signInMails(smtp, de);
    assert.equal(german!.subject, "Ihr Anmeldelink");
    assert.ok(german!.text.startsWith("Jemand (hoffentlich Sie) möchte sich mit dieser E-Mail-Adresse anmelden."));
    assert.ok(german!.text.includes("Der Link und der Code funktionieren einmal, 15 Minuten lang."), german!.text);
    assert.ok(german!.html.includes("Oder kopieren Sie diese Adresse in Ihren Browser:<br>"), german!.html);
    const ja = address("ja");
    await askMail(app, ja, { cookie: "lang=ja" });
    const [japanese] = await signInMails(smtp, ja);
    assert.equal(japanese!.subject, "サインイン用のリンク");
    assert.ok(japanese!.text.includes("リンクとコードは 1 回だけ、15 分間使用できます。"), japanese!.text);
  });

  test("expired after 15 minutes", async (t) => {
    const { app, store, clock } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    const asked = await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    clock.advanceSeconds(900);
    const late = await codeGrant(app, asked.json().attempt, codeOf(mail!));
    assert.deepEqual([late.statusCode, late.json()], [400, INVALID]);
  });

  test("the attempt's row is there until housekeeping purges it past its expiry", async (t) => {
    const { app, store, clock } = await setup(t);
    const asked = await askMail(app, address());
    const { attempt } = asked.json();
    let row = await store.findMailSignIn(attempt);
    for (let i = 0; row === undefined && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      row = await store.findMailSignIn(attempt);
    }
    assert.equal(row?.expiresAt, new Date(clock.now + 900_000).toISOString());
    assert.equal(await store.purgeMailSignIns(new Date(clock.now + 899_000).toISOString(), 1000), 0);
    assert.equal(await store.purgeMailSignIns(new Date(clock.now + 901_000).toISOString(), 1000), 1);
    assert.equal(await store.findMailSignIn(attempt), undefined);
  });

  test("missing fields are 422 as for every grant; a wrong body for the ask is 422", async (t) => {
    const { app } = await setup(t);
    const noCode = await requestToken(app, { grant_type: MAIL_CODE_GRANT, attempt: "x" });
    assert.deepEqual([noCode.statusCode, noCode.json()], [422, { detail: "body.code: field required" }]);
    const noToken = await requestToken(app, { grant_type: MAIL_LINK_GRANT, attempt: "x" });
    assert.deepEqual([noToken.statusCode, noToken.json()], [422, { detail: "body.token: field required" }]);
    const noAttempt = await requestToken(app, { grant_type: MAIL_CODE_GRANT, code: "123456" });
    assert.deepEqual([noAttempt.statusCode, noAttempt.json()], [422, { detail: "body.attempt: field required" }]);
    const bad = await askMail(app, "not an address");
    assert.equal(bad.statusCode, 422);
    assert.deepEqual(Object.keys(bad.json()), ["detail"]);
  });

  test("PASSWORDLESS_MAIL=link or code: the mail carries one way in, the other grant is unknown", async (t) => {
    const linkOnly = await setup(t, { passwordlessMail: "link" });
    const a = address("link");
    await createUser(linkOnly.store, a, PASSWORD);
    const asked = await askMail(linkOnly.app, a);
    assert.deepEqual(asked.json().delivery, ["link"]);
    const [mail] = await signInMails(smtp, a);
    const { token } = linkOf(mail!);
    assert.equal(mail!.subject, "Your sign-in link");
    assert.equal(
      mail!.text,
      "Someone (we hope you) asked to sign in with this e-mail address. Open this link to sign in:\n\n" +
        `http://service.test/sign-in?mail_sign_in=${asked.json().attempt}#token=${token}\n\n` +
        "The link works once, for 15 minutes.\n\n" +
        "If you did not ask for this, ignore this message: no one can sign in with it but you.\n",
    );
    const codeRefused = await codeGrant(linkOnly.app, asked.json().attempt, "123456");
    assert.deepEqual([codeRefused.statusCode, codeRefused.json()], [400, { detail: UNSUPPORTED_GRANT_TYPE }]);
    assert.deepEqual((await linkOnly.app.inject({ method: "GET", url: "/auth/mail-sign-in" })).json(), {
      delivery: ["link"],
    });

    const codeOnly = await setup(t, { passwordlessMail: "code" });
    const b = address("code");
    await createUser(codeOnly.store, b, PASSWORD);
    const askedB = await askMail(codeOnly.app, b);
    const mailB = (await smtp.mailsTo(b))[0]!;
    const code = /: (\d{6})$/m.exec(mailB.text)?.[1] as string;
    assert.equal(mailB.subject, "Your sign-in code");
    assert.equal(
      mailB.text,
      "Someone (we hope you) asked to sign in with this e-mail address.\n\n" +
        `Enter this code on the sign-in page where you asked: ${code}\n\n` +
        "The code works once, for 15 minutes.\n\n" +
        "If you did not ask for this, ignore this message: no one can sign in with it but you.\n",
    );
    const linkRefused = await linkGrant(codeOnly.app, askedB.json().attempt, "x".repeat(43));
    assert.deepEqual([linkRefused.statusCode, linkRefused.json()], [400, { detail: UNSUPPORTED_GRANT_TYPE }]);
    assert.equal((await codeGrant(codeOnly.app, askedB.json().attempt, code)).statusCode, 200);
  });

  test("off: no routes, no grants, nothing in discovery; the page's section stays hidden", async (t) => {
    const { app } = await setup(t, { passwordlessMail: "off" });
    assert.equal((await askMail(app, address())).statusCode, 404);
    assert.equal((await app.inject({ method: "GET", url: "/auth/mail-sign-in" })).statusCode, 404);
    const refused = await codeGrant(app, "x", "123456");
    assert.deepEqual([refused.statusCode, refused.json()], [400, { detail: UNSUPPORTED_GRANT_TYPE }]);
    const discovery = await app.inject({ method: "GET", url: "/.well-known/oauth-authorization-server" });
    assert.ok(!discovery.json().grant_types_supported.includes(MAIL_CODE_GRANT));
    const on = await setup(t);
    const onDiscovery = await on.app.inject({ method: "GET", url: "/.well-known/oauth-authorization-server" });
    assert.ok(onDiscovery.json().grant_types_supported.includes(MAIL_CODE_GRANT));
    assert.ok(onDiscovery.json().grant_types_supported.includes(MAIL_LINK_GRANT));
  });

  test("the sign-in page carries the section (hidden) and its messages; its script is served", async (t) => {
    const { app } = await setup(t);
    const page = await app.inject({ method: "GET", url: "/sign-in" });
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes('<section id="mail-sign-in" aria-labelledby="mail-sign-in-heading" hidden>'));
    assert.ok(
      page.body.includes(
        '<button type="button" id="mail-sign-in-send" class="secondary">E-mail me a sign-in link</button>',
      ),
    );
    const block = /<script type="application\/json" id="passwordless-messages">([^<]*)<\/script>/.exec(page.body);
    assert.ok(block);
    const messages = JSON.parse(block[1] as string);
    assert.equal(messages["passwordless.send"], "E-mail me a sign-in link");
    assert.equal(messages["passwordless.mail.subject"], undefined);
    const script = await app.inject({ method: "GET", url: "/pages/mail-sign-in.js" });
    assert.equal(script.statusCode, 200);
    assert.equal(script.headers["content-type"], "text/javascript; charset=utf-8");
    assert.ok(script.body.includes("export function start(hooks)"));
  });

  test("the cookie is __Host- and Secure when the service is reached over https", async (t) => {
    const { app } = await setup(t, { publicUrl: "https://auth.example.com" });
    const asked = await askMail(app, address());
    assert.match(
      String(asked.headers["set-cookie"]),
      /^__Host-uts_mail_sign_in=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=900; Secure$/,
    );
  });
});

describe("PASSWORDLESS_MAIL", () => {
  const cwd = mkdtempSync(join(tmpdir(), "passwordless-config-"));
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const SECRET = "s".repeat(32);
  const load = (env: Record<string, string>) => loadConfig({ SIGNING_SECRET: SECRET, ...env }, cwd).config;

  test("defaults to both with an SMTP server, else off; a value is read as given", () => {
    assert.equal(load({ MAIL_URL: "smtp://mail.example.com:587" }).passwordlessMail, "both");
    assert.equal(load({ MAIL_URL: "smtps://mail.example.com" }).passwordlessMail, "both");
    assert.equal(load({}).passwordlessMail, "off");
    assert.equal(load({ MAIL_URL: "file:mail" }).passwordlessMail, "off");
    assert.equal(load({ MAIL_URL: "file:mail", PASSWORDLESS_MAIL: "code" }).passwordlessMail, "code");
    assert.equal(load({ MAIL_URL: "smtp://mail.example.com", PASSWORDLESS_MAIL: "Link" }).passwordlessMail, "link");
    assert.equal(load({ MAIL_URL: "smtp://mail.example.com", PASSWORDLESS_MAIL: "off" }).passwordlessMail, "off");
    assert.equal(load({ PASSWORDLESS_MAIL: "off" }).passwordlessMail, "off");
  });

  test("a value other than off without MAIL_URL, or an unknown value, stops start-up naming the setting", () => {
    assert.throws(
      () => load({ PASSWORDLESS_MAIL: "both" }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message === 'PASSWORDLESS_MAIL: is "both" but MAIL_URL is not set: the mails would go nowhere',
    );
    assert.throws(
      () => load({ MAIL_URL: "smtp://mail.example.com", PASSWORDLESS_MAIL: "sms" }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message === 'PASSWORDLESS_MAIL: must be one of link, code, both, off, got "sms"',
    );
  });
});
