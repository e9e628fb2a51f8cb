// Sign-in by mail (issue 37), the attacker's list, with whole answers and a
// real SMTP server: enumeration (same answer, same timing within the password
// reset's bound), replay, a link forwarded to another browser, code guessing
// (five wrong codes end the attempt; one attempt's code does not open
// another), the limits per address and per client address, account
// pre-hijacking (the mail proves the address: what an unproven registrant set
// ends), a second factor still asked for, sign-up closed, an inactive
// account, first-party apps only, and no usable secret at rest.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { TOO_MANY_LOGIN_ATTEMPTS, TOO_MANY_MAIL_REQUESTS } from "../../src/auth/rate-limits.ts";
import type { Config } from "../../src/config.ts";
import { MFA_OTP_GRANT } from "../../src/core/schemas.ts";
import { INCORRECT_EMAIL_OR_PASSWORD } from "../../src/errors.ts";
import { clientMetadata, createClientRegistry } from "../../src/oidc/clients.ts";
import { CONFIRMATION_REQUIRED, FIRST_PARTY_ONLY, INVALID_MAIL_SIGN_IN } from "../../src/passwordless/mail-sign-in.ts";
import { createUser, passwords, requestToken, testConfig } from "../helpers.ts";
import { MailServer } from "../mail-server.ts";
import {
  address,
  askMail,
  bindingOf,
  claimsOf,
  codeGrant,
  codeOf,
  enrolTotp,
  linkGrant,
  linkOf,
  mailSignInApp,
  signInMails,
} from "../mail-sign-in-fixture.ts";
import { rawStore } from "../raw-store.ts";
import { assertTimingParity } from "../timing-parity.ts";
import { codeAt } from "../totp.ts";
import { addTestPasskey } from "../upstream/fixture.ts";

const PASSWORD = "correct horse battery";
const INVALID = { detail: INVALID_MAIL_SIGN_IN, error: "invalid_grant", error_description: INVALID_MAIL_SIGN_IN };

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

const setup = (t: TestContext, overrides: Partial<Config> = {}) => mailSignInApp(t, smtp, overrides);
const verified = (email: string) =>
  passwords
    .hash(PASSWORD)
    .then((hashedPassword) => ({ email, hashedPassword, emailVerifiedAt: new Date().toISOString() }));

/** A wrong code for `code`: the same length, another value. */
const other = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

describe("sign-in by mail: the attacker's list", () => {
  test("enumeration: same status, body shape, headers and time (within 5 %) for known and unknown addresses", async (t) => {
    const { app, store } = await setup(t, { signupOpen: false });
    const known = address("known");
    await createUser(store, known, PASSWORD);
    const unknown = address("nobody");
    const [a, b] = [await askMail(app, known), await askMail(app, unknown)];
    assert.equal(a.statusCode, 202);
    assert.equal(b.statusCode, 202);
    const shape = (body: { attempt: string }) => ({ ...body, attempt: /^[\w-]{22}$/.test(body.attempt) });
    assert.deepEqual(shape(a.json()), { attempt: true, expires_in: 900, delivery: ["link", "code"] });
    assert.deepEqual(shape(b.json()), shape(a.json()));
    assert.notEqual(a.json().attempt, b.json().attempt);
    assert.deepEqual(Object.keys(a.headers).sort(), Object.keys(b.headers).sort());
    assert.equal(
      a.headers["set-cookie"]?.toString().replace(/=[\w-]{43};/, "=;"),
      b.headers["set-cookie"]?.toString().replace(/=[\w-]{43};/, "=;"),
    );
    await smtp.mailsTo(known);

    // As the password reset's test (test/timing-parity.ts): every sample followed by one mail (the known
    // address's own, or one to a third account asked for outside the timed part).
    const third = address("third");
    await createUser(store, third, PASSWORD);
    const counts = new Map([
      [known, 1],
      [third, 0],
    ]);
    const time = async (isKnown: boolean) => {
      const started = process.hrtime.bigint();
      const answer = await askMail(app, isKnown ? known : unknown);
      const elapsed = Number(process.hrtime.bigint() - started);
      assert.equal(answer.statusCode, 202);
      const mailed = isKnown ? known : third;
      if (mailed === third) await askMail(app, third);
      const count = (counts.get(mailed) ?? 0) + 1;
      counts.set(mailed, count);
      await smtp.mailsTo(mailed, count);
      while ((await store.listMail({ status: "pending", limit: 1 })).length > 0)
        await new Promise((resolve) => setTimeout(resolve, 5));
      await smtp.idle();
      await new Promise((resolve) => setTimeout(resolve, 10));
      return elapsed;
    };
    await assertTimingParity(t, { pairs: 100, rounds: 3, bound: 0.05, time, what: "known and unknown addresses" });
    // The unknown address got no mail while sign-up is closed, and no account.
    assert.equal(smtp.lastTo(unknown), undefined);
    assert.equal(await store.findByEmail(unknown), undefined);
  });

  test("replay: a code or a link works once, and the other way in of the same mail is spent with it", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    const asked = await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const { attempt, token } = linkOf(mail!);
    const code = codeOf(mail!);
    assert.equal((await codeGrant(app, attempt, code)).statusCode, 200);
    const again = await codeGrant(app, attempt, code);
    assert.equal(again.statusCode, 400);
    assert.deepEqual(again.json(), INVALID);
    const link = await linkGrant(app, attempt, token, { cookie: bindingOf(asked) });
    assert.deepEqual([link.statusCode, link.json()], [400, INVALID]);

    // The link first, then the link again.
    const second = await askMail(app, email);
    const [, mail2] = await signInMails(smtp, email, 2);
    const l2 = linkOf(mail2!);
    assert.equal((await linkGrant(app, l2.attempt, l2.token, { cookie: bindingOf(second) })).statusCode, 200);
    const replayed = await linkGrant(app, l2.attempt, l2.token, { cookie: bindingOf(second) });
    assert.deepEqual([replayed.statusCode, replayed.json()], [400, INVALID]);
  });

  test("a link opened in another browser: refused with the confirmation hint, signs in once confirmed", async (t) => {
    const { app, store, clock } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const { attempt, token } = linkOf(mail!);
    const requestedAt = new Date(clock.now).toISOString();
    for (const cookie of [undefined, `uts_mail_sign_in=${"x".repeat(43)}`]) {
      const refused = await linkGrant(app, attempt, token, cookie ? { cookie } : {});
      assert.equal(refused.statusCode, 400);
      assert.deepEqual(refused.json(), {
        detail: CONFIRMATION_REQUIRED,
        error: "invalid_grant",
        error_description: CONFIRMATION_REQUIRED,
        confirmation_required: true,
        requested_at: requestedAt,
      });
    }
    // A wrong token never gets the hint (nor the time).
    const wrongToken = await linkGrant(app, attempt, "A".repeat(43));
    assert.deepEqual([wrongToken.statusCode, wrongToken.json()], [400, INVALID]);
    const confirmed = await linkGrant(app, attempt, token, { confirm: true });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    assert.deepEqual(claimsOf(confirmed.json().access_token).amr, ["email"]);
  });

  test("code guessing: five wrong codes end the attempt; a code of attempt A does not open attempt B", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    const first = await askMail(app, email);
    const second = await askMail(app, email);
    const mails = await signInMails(smtp, email, 2);
    const byAttempt = new Map(mails.map((mail) => [linkOf(mail).attempt, codeOf(mail)]));
    const [a, b] = [first.json().attempt as string, second.json().attempt as string];
    const codeA = byAttempt.get(a) as string;
    const codeB = byAttempt.get(b) as string;
    if (codeA !== codeB) {
      const crossed = await codeGrant(app, b, codeA);
      assert.deepEqual([crossed.statusCode, crossed.json()], [400, INVALID]);
    }
    for (let i = 0; i < 4; i++) assert.deepEqual((await codeGrant(app, a, other(codeA))).json(), INVALID);
    // Four wrong: the right code still works for A... but B gets its five.
    for (let i = 0; i < (codeA === codeB ? 5 : 4); i++) await codeGrant(app, b, other(codeB));
    const ended = await codeGrant(app, b, codeB);
    assert.deepEqual([ended.statusCode, ended.json()], [400, INVALID]);
    assert.equal((await codeGrant(app, a, codeA)).statusCode, 200);
    // Malformed codes are wrong codes too, not a 422 or a 500.
    const third = await askMail(app, email);
    await signInMails(smtp, email, 3);
    for (const code of ["12345", "1234567", "abcdef", " "])
      assert.deepEqual((await codeGrant(app, third.json().attempt, code)).json(), INVALID);
    // Guesses sent all at once: each takes a try before it is compared, so only five are ever compared.
    const fourth = await askMail(app, email);
    const [, , , mail4] = await signInMails(smtp, email, 4);
    const code4 = codeOf(mail4!);
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        codeGrant(app, fourth.json().attempt, String((Number(code4) + 1 + i) % 1_000_000).padStart(6, "0")),
      ),
    );
    assert.deepEqual(new Set(burst.map((answer) => answer.body)), new Set([JSON.stringify(INVALID)]));
    assert.equal((await store.findMailSignIn(fourth.json().attempt))?.wrongCodes, 5);
    assert.deepEqual((await codeGrant(app, fourth.json().attempt, code4)).json(), INVALID);
    const unknownAttempt = await codeGrant(app, "no-such-attempt", "123456");
    assert.deepEqual([unknownAttempt.statusCode, unknownAttempt.json()], [400, INVALID]);
  });

  test("limits: 429 with Retry-After per address and per client address; wrong codes meet the login limits", async (t) => {
    const base = testConfig();
    const rateLimit = { ...base.rateLimit, enabled: true, mailRequestsPerEmail: 2, mailRequestsPerAddress: 6 };
    const { app, store } = await setup(t, { rateLimit });
    const email = address();
    await createUser(store, email, PASSWORD);
    for (const target of [email, address("unknown")]) {
      assert.equal((await askMail(app, target)).statusCode, 202);
      assert.equal((await askMail(app, target)).statusCode, 202);
      const limited = await askMail(app, target);
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.headers["retry-after"], "900");
      assert.deepEqual(limited.json(), { detail: TOO_MANY_MAIL_REQUESTS });
    }
    // Six asked from this client address: the seventh, for a fresh address, is over its limit.
    const byAddress = await askMail(app, address("fresh"));
    assert.deepEqual(
      [byAddress.statusCode, byAddress.headers["retry-after"], byAddress.json()],
      [429, "900", { detail: TOO_MANY_MAIL_REQUESTS }],
    );
    // Another client address is not limited by this one's requests.
    assert.equal((await askMail(app, address("elsewhere"), {}, "203.0.113.9")).statusCode, 202);

    // Wrong codes count as failed logins of the address from this client: past the limit, 429 even for the right code.
    const { app: app2, store: store2 } = await setup(t, {
      rateLimit: { ...base.rateLimit, enabled: true, loginPerAccountAndAddress: 3 },
    });
    const victim = address("victim");
    await createUser(store2, victim, PASSWORD);
    const asked = await askMail(app2, victim);
    const [mail] = await signInMails(smtp, victim);
    const code = codeOf(mail!);
    for (let i = 0; i < 3; i++) await codeGrant(app2, asked.json().attempt, other(code));
    const limited = await codeGrant(app2, asked.json().attempt, code);
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers["retry-after"]) > 0);
    assert.deepEqual(limited.json(), { detail: TOO_MANY_LOGIN_ATTEMPTS });
  });

  test("pre-hijacking: the mail proves the address; the unproven registrant's password, passkeys, second factors and sessions end", async (t) => {
    const { app, store, clock } = await setup(t);
    const victim = address("victim");
    // The attacker signs up with the victim's address and a password (unverified), signs in, adds an
    // authenticator app and a passkey.
    const squatter = await createUser(store, victim, PASSWORD);
    const login = await requestToken(app, { username: victim, password: PASSWORD });
    assert.equal(login.statusCode, 200);
    await enrolTotp(app, login.json().access_token, clock.now);
    await addTestPasskey(store, squatter.id);
    const refresh_token = login.json().refresh_token as string;

    // The victim signs in by mail: tokens at once (no second factor of the attacker's to pass).
    await askMail(app, victim);
    const [mail] = await signInMails(smtp, victim);
    const signedIn = await codeGrant(app, linkOf(mail!).attempt, codeOf(mail!));
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    assert.deepEqual(claimsOf(signedIn.json().access_token).amr, ["email", "otp"]);

    const account = await store.findById(squatter.id);
    assert.equal(account?.hashedPassword, "");
    assert.notEqual(account?.emailVerifiedAt, null);
    assert.equal(await store.countPasskeys(squatter.id), 0);
    assert.equal(await store.findTotp(squatter.id), undefined);
    const password = await requestToken(app, { username: victim, password: PASSWORD });
    assert.deepEqual([password.statusCode, password.json()], [401, { detail: INCORRECT_EMAIL_OR_PASSWORD }]);
    const refreshed = await requestToken(app, { grant_type: "refresh_token", refresh_token });
    assert.equal(refreshed.statusCode, 401);
    const me = await app.inject({
      method: "GET",
      url: "/me",
      headers: { authorization: `Bearer ${login.json().access_token}` },
    });
    assert.equal(me.statusCode, 401);
    const events = await store.listEvents({ userId: squatter.id, limit: 50 });
    assert.ok(
      events.some((event) => event.outcome === "unproven_ways_ended:password,passkeys,second_factors,sessions"),
      JSON.stringify(events.map((event) => event.outcome)),
    );
    assert.ok(events.some((event) => event.type === "login" && event.outcome === "success_mail_code"));
  });

  test("a second factor of a proven account is still asked for, as after a password", async (t) => {
    const { app, store, clock } = await setup(t);
    const email = address();
    const user = await store.create(await verified(email));
    const login = await requestToken(app, { username: email, password: PASSWORD });
    const secret = await enrolTotp(app, login.json().access_token, clock.now);
    const asked = await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const { attempt, token } = linkOf(mail!);
    const challenged = await linkGrant(app, attempt, token, { cookie: bindingOf(asked) });
    assert.equal(challenged.statusCode, 403);
    const body = challenged.json();
    assert.deepEqual(Object.keys(body).sort(), [
      "detail",
      "error",
      "error_description",
      "expires_in",
      "mfa_factors",
      "mfa_token",
    ]);
    assert.equal(body.error, "mfa_required");
    assert.deepEqual(body.mfa_factors, ["otp", "recovery_code"]);
    assert.equal(challenged.headers["cache-control"], "no-store");
    clock.advanceSeconds(30);
    const second = await requestToken(app, {
      grant_type: MFA_OTP_GRANT,
      mfa_token: body.mfa_token,
      otp: codeAt(secret, clock.now),
    });
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(claimsOf(second.json().access_token).amr, ["email", "otp", "mfa"]);
    assert.equal(await store.findTotp(user.id).then((totp) => totp !== undefined), true);
  });

  test("sign-up closed: no mail and no account for an unknown address; a mail to a since-deleted account creates none", async (t) => {
    const { app, store } = await setup(t, { signupOpen: false });
    const email = address();
    const user = await createUser(store, email, PASSWORD);
    await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    await store.remove(user.id);
    const refused = await codeGrant(app, linkOf(mail!).attempt, codeOf(mail!));
    assert.deepEqual([refused.statusCode, refused.json()], [400, INVALID]);
    assert.equal(await store.findByEmail(email), undefined);
    // Sign-up open: the first redemption creates the account, verified and without a password.
    const { app: open, store: openStore } = await setup(t, { signupOpen: true });
    const newcomer = address("newcomer");
    await askMail(open, newcomer);
    const [welcome] = await signInMails(smtp, newcomer);
    const created = await codeGrant(open, linkOf(welcome!).attempt, codeOf(welcome!));
    assert.equal(created.statusCode, 200, created.body);
    const account = await openStore.findByEmail(newcomer);
    assert.equal(account?.hashedPassword, "");
    assert.notEqual(account?.emailVerifiedAt, null);
  });

  test("an inactive account: no mail; deactivated after the mail, the right code is refused", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    const user = await createUser(store, email, PASSWORD);
    await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    await store.update(user.id, { isActive: false });
    const refused = await codeGrant(app, linkOf(mail!).attempt, codeOf(mail!));
    assert.deepEqual([refused.statusCode, refused.json()], [400, INVALID]);
    const asked = await askMail(app, email);
    assert.equal(asked.statusCode, 202);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await signInMails(smtp, email)).length, 1);
  });

  test("first-party apps only: a registered client is refused (unauthorized_client)", async (t) => {
    const { app, store } = await setup(t);
    const email = address();
    await createUser(store, email, PASSWORD);
    await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const registered = await createClientRegistry(store).register(
      clientMetadata({ client_name: "Billing", grant_types: ["client_credentials"], scope: "invoices:read" }),
      { userId: null, clientAddress: null },
    );
    const basic = `Basic ${Buffer.from(`${registered.client.id}:${registered.secret}`).toString("base64")}`;
    const refused = await codeGrant(app, linkOf(mail!).attempt, codeOf(mail!), { authorization: basic });
    assert.equal(refused.statusCode, 400);
    assert.deepEqual(refused.json(), {
      detail: FIRST_PARTY_ONLY,
      error: "unauthorized_client",
      error_description: FIRST_PARTY_ONLY,
    });
    // The attempt is untouched: the first-party app may still use it.
    assert.equal((await codeGrant(app, linkOf(mail!).attempt, codeOf(mail!))).statusCode, 200);
  });

  test("no usable secret at rest: the row keeps hashes, the outbox keeps the link and code sealed", async (t) => {
    const raw = await rawStore(t, Date.now);
    const { buildApp } = await import("../../src/app.ts");
    const base = testConfig();
    const app = await buildApp({
      config: testConfig({
        mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
        passwordlessMail: "both",
      }),
      store: raw.store,
    });
    t.after(() => app.close());
    const email = address();
    await createUser(raw.store, email, PASSWORD);
    const asked = await askMail(app, email);
    const [mail] = await signInMails(smtp, email);
    const { token } = linkOf(mail!);
    const dump = await raw.dump();
    assert.ok(dump.includes(asked.json().attempt));
    assert.ok(!dump.includes(token), "the link's token is in the database");
    assert.ok(!dump.includes(bindingOf(asked).split("=")[1] as string), "the browser binding is in the database");
    assert.ok(!new RegExp(`"${codeOf(mail!)}"|:${codeOf(mail!)}\\b`).test(dump), "the code is in the database");
  });
});
