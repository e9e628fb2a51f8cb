// Every mail in its reader's language (issue 37), end to end against a real
// SMTP server the test starts: the account's saved `locale` wins; without one,
// the language of the request that caused the mail; else DEFAULT_LOCALE. The
// language is decided when the message is queued and kept in its payload; a
// message the previous release queued (no locale in its payload) reads in
// DEFAULT_LOCALE. And the saved `locale` itself: PATCH /me, the admin's PUT and
// PATCH, POST /users, and the User answer, which shows it only once chosen.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Config } from "../src/config.ts";
import type { Locale } from "../src/i18n/locales.ts";
import { translator } from "../src/i18n/translate.ts";
import { createAccountMails } from "../src/mail/messages.ts";
import { createSealer } from "../src/mail/seal.ts";
import type { UserRecord } from "../src/store/store.ts";
import {
  bearer,
  buildTestApp,
  loginToken,
  passwords,
  signedInUser,
  TEST_SECRET,
  type TestApp,
  testConfig,
} from "./helpers.ts";
import { MailServer, type ReceivedMail } from "./mail-server.ts";

const PASSWORD = "correct horse battery";
const NEW_PASSWORD = "a brand new passphrase";
const RESET_SECONDS = 1800;
const VERIFY_SECONDS = 86_400;

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

let counter = 0;
const address = (name = "reader") => `${name}${++counter}.${process.pid}@example.com`;

async function setUp(t: TestContext, overrides: Partial<Config> = {}): Promise<TestApp> {
  const base = testConfig();
  return buildTestApp(t, {
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    accountRecovery: {
      ...base.accountRecovery,
      passwordResetTtlSeconds: RESET_SECONDS,
      emailVerificationTtlSeconds: VERIFY_SECONDS,
    },
    ...overrides,
  });
}

async function userWith(store: TestApp["store"], locale: Locale | null, verified = false): Promise<UserRecord> {
  return store.create({
    email: address(),
    hashedPassword: await passwords.hash(PASSWORD),
    locale,
    emailVerifiedAt: verified ? new Date().toISOString() : null,
  });
}

async function mailWithSubject(recipient: string, subject: string): Promise<ReceivedMail> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = smtp.messages.find((message) => message.to.includes(recipient) && message.subject === subject);
    if (mail) return mail;
    if (Date.now() > deadline) {
      const seen = smtp.messages.filter((message) => message.to.includes(recipient)).map((m) => m.subject);
      throw new Error(`no mail "${subject}" to ${recipient}; got ${JSON.stringify(seen)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

type Said = [key: string, values?: Record<string, string | number>];

/**
 * The mail speaks `locale`: its HTML part says so, every message of it is there in that language (text
 * and HTML), and none of their English versions (where they differ) is.
 */
function assertSpeaks(mail: ReceivedMail, locale: Locale, said: Said[], htmlOnly: Said[] = []): void {
  const own = translator(locale);
  const english = translator("en");
  assert.match(mail.html, new RegExp(`^<!doctype html><html lang="${locale}" dir="ltr">`, "i"));
  for (const [key, values] of said) {
    const text = own.text(key, values);
    assert.ok(mail.text.includes(text), `${locale} text has ${key} "${text}":\n${mail.text}`);
    assert.ok(mail.html.includes(own.html(key, values)), `${locale} HTML has ${key}:\n${mail.html}`);
  }
  for (const [key, values] of htmlOnly) {
    assert.ok(mail.html.includes(own.html(key, values)), `${locale} HTML has ${key}:\n${mail.html}`);
  }
  if (locale === "en") return;
  for (const [key, values] of [...said, ...htmlOnly]) {
    const englishText = english.text(key, values);
    if (englishText === own.text(key, values)) continue;
    assert.ok(!mail.text.includes(englishText), `no English ${key} in the ${locale} text:\n${mail.text}`);
    assert.ok(!mail.html.includes(english.html(key, values)), `no English ${key} in the ${locale} HTML`);
  }
}

const duration = (locale: Locale, seconds: number) =>
  seconds >= 7200 && seconds % 3600 === 0
    ? translator(locale).text("mail.duration.hours", { count: seconds / 3600 })
    : translator(locale).text("mail.duration.minutes", { count: seconds / 60 });

const resetSaid = (locale: Locale): Said[] => [
  ["mail.reset.intro"],
  ["mail.reset.validity", { duration: duration(locale, RESET_SECONDS) }],
  ["mail.reset.ignore"],
];
const LINK_PARTS: Said[] = [["mail.copyLink"]];

/** The subjects, written out: the catalogue is what is under test. */
const SUBJECTS: Record<"de" | "ja" | "pt-BR" | "fr" | "en", { reset: string; verify: string; changed: string }> = {
  de: {
    reset: "Setzen Sie Ihr Passwort zurück",
    verify: "Bestätigen Sie Ihre E-Mail-Adresse",
    changed: "Ihr Passwort wurde geändert",
  },
  ja: {
    reset: "パスワードの再設定",
    verify: "メールアドレスの確認",
    changed: "パスワードが変更されました",
  },
  "pt-BR": {
    reset: "Redefina sua senha",
    verify: "Confirme seu endereço de e-mail",
    changed: "Sua senha foi alterada",
  },
  fr: {
    reset: "Réinitialisez votre mot de passe",
    verify: "Vérifiez votre adresse e-mail",
    changed: "Votre mot de passe a été changé",
  },
  en: { reset: "Reset your password", verify: "Verify your e-mail address", changed: "Your password was changed" },
};

const UTC_TIME = (locale: Locale) =>
  new Intl.DateTimeFormat(locale, { dateStyle: "long", timeStyle: "short", timeZone: "UTC" });

function post(app: FastifyInstance, url: string, payload: object, headers: Record<string, string> = {}) {
  return app.inject({ method: "POST", url, payload, headers });
}

describe("mails in the reader's language", () => {
  for (const locale of ["de", "ja", "pt-BR"] as const) {
    test(`${locale}: the reset, the verification and a security notice follow the saved locale, not the request's`, async (t) => {
      const { app, store, clock } = await setUp(t);
      const user = await userWith(store, locale);
      // The request asks for English: the account's choice wins.
      const english = { "accept-language": "en-US,en;q=0.9" };
      assert.equal((await post(app, "/auth/password-reset-requests", { email: user.email }, english)).statusCode, 202);
      const reset = await mailWithSubject(user.email, SUBJECTS[locale].reset);
      assertSpeaks(reset, locale, resetSaid(locale), [...LINK_PARTS, ["mail.reset.button"]]);

      assert.equal(
        (await post(app, "/auth/email-verification-requests", { email: user.email }, english)).statusCode,
        202,
      );
      const verify = await mailWithSubject(user.email, SUBJECTS[locale].verify);
      assertSpeaks(
        verify,
        locale,
        [
          ["mail.verify.intro"],
          ["mail.verify.validity", { duration: duration(locale, VERIFY_SECONDS) }],
          ["mail.verify.ignore"],
        ],
        [...LINK_PARTS, ["mail.verify.button"]],
      );
      // 24 hours, by the language's plural rules.
      assert.ok(verify.text.includes({ de: "24 Stunden", ja: "24時間", "pt-BR": "24 horas" }[locale]));

      const token = await loginToken(app, user.email, PASSWORD);
      const at = clock.now;
      const changed = await app.inject({
        method: "PUT",
        url: "/me/password",
        headers: { ...bearer(token), ...english },
        payload: { current_password: PASSWORD, new_password: NEW_PASSWORD },
      });
      assert.equal(changed.statusCode, 204);
      const notice = await mailWithSubject(user.email, SUBJECTS[locale].changed);
      assertSpeaks(notice, locale, [
        ["mail.notice.passwordChanged.summary"],
        ["mail.fact.when", { time: UTC_TIME(locale).format(at) }],
        ["mail.advice.lockedOut"],
      ]);
    });
  }

  test("a user without a locale gets the language of the request that caused the mail (Accept-Language: fr)", async (t) => {
    const { app, store } = await setUp(t);
    const user = await userWith(store, null);
    const french = { "accept-language": "fr-CH, fr;q=0.9, en;q=0.8" };
    assert.equal((await post(app, "/auth/password-reset-requests", { email: user.email }, french)).statusCode, 202);
    assertSpeaks(await mailWithSubject(user.email, SUBJECTS.fr.reset), "fr", resetSaid("fr"), LINK_PARTS);
    assert.equal((await post(app, "/auth/email-verification-requests", { email: user.email }, french)).statusCode, 202);
    const verify = await mailWithSubject(user.email, SUBJECTS.fr.verify);
    assertSpeaks(verify, "fr", [["mail.verify.validity", { duration: "24 heures" }]]);

    // The language cookie of the language page counts as the request's language too.
    const other = await userWith(store, null);
    const cookie = { cookie: "lang=pt-BR", "accept-language": "fr" };
    await post(app, "/auth/password-reset-requests", { email: other.email }, cookie);
    assertSpeaks(await mailWithSubject(other.email, SUBJECTS["pt-BR"].reset), "pt-BR", resetSaid("pt-BR"));
  });

  test("without a saved or asked language, a mail takes DEFAULT_LOCALE; the language is kept in the outbox", async (t) => {
    const { app, store } = await setUp(t, { defaultLocale: "de" });
    const user = await userWith(store, null);
    await post(app, "/auth/password-reset-requests", { email: user.email });
    assertSpeaks(await mailWithSubject(user.email, SUBJECTS.de.reset), "de", resetSaid("de"));
  });

  test("the language is decided when the message is queued, and kept in its payload", () => {
    const mails = createAccountMails(
      {
        from: "Service <no-reply@service.test>",
        linkBaseUrl: "http://service.test",
        passwordResetTtlSeconds: RESET_SECONDS,
        emailVerificationTtlSeconds: VERIFY_SECONDS,
        defaultLocale: "de",
      },
      createSealer([TEST_SECRET]),
    );
    const localeOf = (message: { payload: string }) => JSON.parse(message.payload).locale;
    const reader = { id: "u", email: "a@example.com" };
    const facts = { at: "2026-11-22T16:40:03.123Z", device: null, address: null };
    assert.equal(localeOf(mails.passwordReset({ ...reader, locale: null }, "t")), "de");
    assert.equal(localeOf(mails.passwordReset({ ...reader, locale: null }, "t", "fr")), "fr");
    assert.equal(localeOf(mails.passwordReset({ ...reader, locale: "ja" }, "t", "fr")), "ja");
    assert.equal(localeOf(mails.verification({ id: "u", locale: "es" }, "b@example.com", "t", true, "fr")), "es");
    assert.equal(localeOf(mails.upstreamLink(reader, "t", "GitHub", 600, "pt-BR")), "pt-BR");
    assert.equal(localeOf(mails.emailChanged("old@example.com", reader, facts)), "de");
    assert.equal(localeOf(mails.notice("new_device", reader.email, { id: "u", locale: "ja" }, facts, "fr")), "ja");
  });

  test("a message queued by the previous release (no locale in its payload) renders in DEFAULT_LOCALE", async (t) => {
    const { store } = await setUp(t, { defaultLocale: "ja" });
    const user = await userWith(store, null);
    // As the previous release wrote them: a reset with its sealed token, and a notice with its facts only.
    const sealer = createSealer([TEST_SECRET]);
    const at = "2026-11-22T16:40:03.123Z";
    await store.enqueueMail({
      kind: "password_reset",
      recipient: user.email,
      userId: user.id,
      payload: JSON.stringify({ token: sealer.seal("a-token-of-the-previous-release") }),
      messageDomain: "service.test",
    });
    await store.enqueueMail({
      kind: "password_changed",
      recipient: user.email,
      userId: user.id,
      payload: JSON.stringify({ at, device: "Firefox on Windows", address: "203.0.113.7" }),
      messageDomain: "service.test",
    });
    // A message of this release keeps the language decided when it was queued, whatever the default.
    await store.enqueueMail({
      kind: "password_changed",
      recipient: user.email,
      userId: user.id,
      payload: JSON.stringify({ at, device: null, address: null, locale: "pt-BR" }),
      messageDomain: "service.test",
    });
    // The sender finds them at its next poll (every 100 ms here).

    const reset = await mailWithSubject(user.email, SUBJECTS.ja.reset);
    assertSpeaks(reset, "ja", resetSaid("ja"));
    assert.ok(reset.text.includes("#token=a-token-of-the-previous-release"));
    const notice = await mailWithSubject(user.email, SUBJECTS.ja.changed);
    assert.equal(
      notice.text,
      "アカウントのパスワードが変更され、ログイン中のすべてのセッションが終了しました。\n\n" +
        "日時：2026年11月22日 16:40（UTC）\n" +
        "デバイス：Firefox on Windows\n" +
        "ネットワークアドレス：203.0.113.7（おおよそのもので、プロバイダーやプロキシのアドレスの場合があります）\n\n" +
        "お心当たりがない場合、第三者があなたのアカウントを使用しています。直ちにこのサービスの運営者にお問い合わせください。\n",
    );
    const kept = await mailWithSubject(user.email, SUBJECTS["pt-BR"].changed);
    assertSpeaks(kept, "pt-BR", [["mail.fact.when", { time: "22 de novembro de 2026 às 16:40" }]]);
  });
});

/** The User answer as GET /me sends it, field by field in its order: byte-for-byte comparable. */
function userBody(user: UserRecord, extra: { locale?: Locale } = {}): string {
  return JSON.stringify({
    id: user.id,
    email: user.email,
    full_name: user.fullName,
    is_active: user.isActive,
    is_admin: user.isAdmin,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    email_verified: user.emailVerifiedAt !== null,
    email_verified_at: user.emailVerifiedAt,
    ...extra,
  });
}

describe("the saved locale", () => {
  const patchMe = (app: FastifyInstance, token: string, payload: object) =>
    app.inject({ method: "PATCH", url: "/me", headers: bearer(token), payload });

  test("GET /me without a locale is unchanged; PATCH /me sets, refuses and clears it", async (t) => {
    const { app, store, clock } = await setUp(t);
    const user = await userWith(store, null);
    const token = await loginToken(app, user.email, PASSWORD);

    const unchosen = await app.inject({ method: "GET", url: "/me", headers: bearer(token) });
    assert.equal(unchosen.statusCode, 200);
    assert.equal(unchosen.body, userBody(user));

    clock.advanceSeconds(5);
    const set = await patchMe(app, token, { locale: "de" });
    assert.equal(set.statusCode, 200);
    const saved = (await store.findById(user.id))!;
    assert.equal(saved.locale, "de");
    assert.notEqual(saved.updatedAt, user.updatedAt);
    assert.equal(set.body, userBody(saved, { locale: "de" }));
    const read = await app.inject({ method: "GET", url: "/me", headers: bearer(token) });
    assert.equal(read.body, userBody(saved, { locale: "de" }));

    for (const locale of ["xx", "de-AT", "EN", "", 42]) {
      const refused = await patchMe(app, token, { locale });
      assert.equal(refused.statusCode, 422, JSON.stringify(locale));
      assert.deepEqual(
        refused.json(),
        {
          detail:
            typeof locale === "number"
              ? "body.locale: must be string"
              : "body.locale: must be equal to one of the allowed values",
        },
        JSON.stringify(locale),
      );
    }
    assert.equal((await store.findById(user.id))!.locale, "de");

    clock.advanceSeconds(5);
    const cleared = await patchMe(app, token, { locale: null });
    assert.equal(cleared.statusCode, 200);
    const after = (await store.findById(user.id))!;
    assert.equal(after.locale, null);
    assert.equal(cleared.body, userBody(after));
    assert.equal(Object.hasOwn(cleared.json(), "locale"), false);

    // Another field's change leaves the choice alone.
    await patchMe(app, token, { locale: "ja" });
    const renamed = await patchMe(app, token, { full_name: "Ada" });
    assert.equal(renamed.json().locale, "ja");
  });

  test("admins: POST /users takes it, PATCH /users/{id} sets it, PUT without it clears it", async (t) => {
    const { app, store } = await setUp(t);
    const admin = await signedInUser(app, store, address("admin"), PASSWORD, true);
    const auth = bearer(admin.token);

    const created = await app.inject({
      method: "POST",
      url: "/users",
      headers: auth,
      payload: { email: address(), password: PASSWORD, locale: "pt-BR" },
    });
    assert.equal(created.statusCode, 201);
    const id = created.json().id as string;
    const stored = (await store.findById(id))!;
    assert.equal(created.body, userBody(stored, { locale: "pt-BR" }));

    const patched = await app.inject({
      method: "PATCH",
      url: `/users/${id}`,
      headers: auth,
      payload: { locale: "fr" },
    });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().locale, "fr");
    assert.equal((await store.findById(id))!.locale, "fr");

    const replaced = await app.inject({
      method: "PUT",
      url: `/users/${id}`,
      headers: auth,
      payload: { email: stored.email, full_name: "Ada" },
    });
    assert.equal(replaced.statusCode, 200);
    const after = (await store.findById(id))!;
    assert.equal(after.locale, null);
    assert.equal(replaced.body, userBody(after));

    const withLocale = await app.inject({
      method: "PUT",
      url: `/users/${id}`,
      headers: auth,
      payload: { email: stored.email, locale: "es" },
    });
    assert.equal(withLocale.json().locale, "es");
    const bad = await app.inject({
      method: "PUT",
      url: `/users/${id}`,
      headers: auth,
      payload: { email: stored.email, locale: "xx" },
    });
    assert.equal(bad.statusCode, 422);
    assert.deepEqual(bad.json(), { detail: "body.locale: must be equal to one of the allowed values" });
  });

  test("a locale chosen by PATCH /me is the one the next mail speaks", async (t) => {
    const { app, store } = await setUp(t);
    const user = await userWith(store, null);
    const token = await loginToken(app, user.email, PASSWORD);
    assert.equal((await patchMe(app, token, { locale: "ja" })).statusCode, 200);
    await post(app, "/auth/password-reset-requests", { email: user.email }, { "accept-language": "de" });
    assertSpeaks(await mailWithSubject(user.email, SUBJECTS.ja.reset), "ja", resetSaid("ja"));
  });
});
