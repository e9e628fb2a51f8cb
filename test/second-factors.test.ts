// Second factors (issue 14): authenticator-app enrolment and confirmation,
// codes accepted once and within one step of drift, the mfa_required
// challenge on the token endpoint and the mfa-otp / mfa-recovery-code
// grants, brute force refused, recovery codes, turning the app off, the
// admin reset, amr in access tokens and across refreshes, and accounts
// without a factor left exactly as they were. Time is the injected clock.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../src/app.ts";
import { TOO_MANY_SECOND_FACTOR_ATTEMPTS } from "../src/auth/rate-limits.ts";
import {
  AUTHENTICATOR_APPS_OFF,
  INVALID_MFA_TOKEN,
  INVALID_OTP,
  INVALID_RECOVERY_CODE,
  NO_PENDING_TOTP,
  TOTP_ALREADY_ENABLED,
  TOTP_NOT_ENABLED,
} from "../src/auth/second-factors.ts";
import type { Config } from "../src/config.ts";
import { MFA_OTP_GRANT, MFA_RECOVERY_CODE_GRANT } from "../src/core/schemas.ts";
import { MFA_REQUIRED } from "../src/core/token-routes.ts";
import { INCORRECT_CURRENT_PASSWORD, INCORRECT_EMAIL_OR_PASSWORD, NOT_ENOUGH_PRIVILEGES } from "../src/errors.ts";
import { ONE_OF_CODE_OR_RECOVERY_CODE } from "../src/factors/second-factor-routes.ts";
import { bearer, buildTestApp, createUser, requestToken, type TestApp, testConfig } from "./helpers.ts";
import { codeAt } from "./totp.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

function claimsOf(accessToken: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(accessToken.split(".")[1] as string, "base64url").toString("utf8"));
}

function post(app: FastifyInstance, url: string, token: string, payload?: object) {
  return app.inject({ method: "POST", url, headers: bearer(token), ...(payload ? { payload } : {}) });
}

async function passwordLogin(app: FastifyInstance, password = PASSWORD) {
  return requestToken(app, { username: EMAIL, password });
}

interface Enabled extends TestApp {
  secret: string;
  recoveryCodes: string[];
  /** An access token from before the factor was turned on. */
  token: string;
  /** Password step: the mfa_token of a fresh 403 challenge. */
  challenge(): Promise<string>;
  otpGrant(mfaToken: string, otp: string): ReturnType<typeof requestToken>;
  recoveryGrant(mfaToken: string, code: string): ReturnType<typeof requestToken>;
  code(offsetSteps?: number): string;
}

/** Ada with a confirmed authenticator app; the clock then moves past the confirming code's step. */
async function withTotp(t: TestContext, config: Partial<Config> = {}): Promise<Enabled> {
  const testApp = await buildTestApp(t, config);
  const { app, clock } = testApp;
  await createUser(testApp.store, EMAIL, PASSWORD);
  const login = await passwordLogin(app);
  assert.equal(login.statusCode, 200, login.body);
  const token = login.json().access_token as string;
  const enrolment = await post(app, "/me/totp", token);
  assert.equal(enrolment.statusCode, 201, enrolment.body);
  const { secret } = enrolment.json();
  const confirmed = await post(app, "/me/totp/confirm", token, { code: codeAt(secret, clock.now) });
  assert.equal(confirmed.statusCode, 200, confirmed.body);
  clock.advanceSeconds(90);
  const code = (offsetSteps = 0) => codeAt(secret, clock.now + offsetSteps * 30_000);
  const challenge = async () => {
    const response = await passwordLogin(app);
    assert.equal(response.statusCode, 403, response.body);
    return response.json().mfa_token as string;
  };
  const otpGrant = (mfaToken: string, otp: string) =>
    requestToken(app, { grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp });
  const recoveryGrant = (mfaToken: string, recoveryCode: string) =>
    requestToken(app, { grant_type: MFA_RECOVERY_CODE_GRANT, mfa_token: mfaToken, recovery_code: recoveryCode });
  return {
    ...testApp,
    secret,
    recoveryCodes: confirmed.json().recovery_codes,
    token,
    challenge,
    otpGrant,
    recoveryGrant,
    code,
  };
}

describe("authenticator app enrolment", () => {
  test("gives a secret, an otpauth URI and a QR code; a valid code confirms it and shows ten recovery codes once", async (t) => {
    const { app, store, clock } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await passwordLogin(app)).json().access_token as string;

    const status = () => app.inject({ method: "GET", url: "/me/mfa", headers: bearer(token) });
    assert.deepEqual((await status()).json(), { totp_enabled: false, recovery_codes_remaining: 0, passkeys: 0 });

    const enrolment = await post(app, "/me/totp", token);
    assert.equal(enrolment.statusCode, 201);
    const { secret, otpauth_uri, qr_code } = enrolment.json();
    assert.match(secret, /^[A-Z2-7]{32}$/, "160 bits in base32");
    const uri = new URL(otpauth_uri);
    assert.equal(uri.protocol, "otpauth:");
    assert.equal(uri.host, "totp");
    assert.equal(decodeURIComponent(uri.pathname), "/Service Test:ada@example.com");
    assert.equal(uri.searchParams.get("issuer"), "Service Test");
    assert.equal(uri.searchParams.get("secret"), secret);
    assert.equal(uri.searchParams.get("digits"), "6");
    assert.equal(uri.searchParams.get("period"), "30");
    assert.match(qr_code, /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    assert.ok(Buffer.from(qr_code.split(",")[1], "base64").subarray(1, 4).equals(Buffer.from("PNG")));

    // Pending: nothing changes at login yet.
    assert.deepEqual((await status()).json(), { totp_enabled: false, recovery_codes_remaining: 0, passkeys: 0 });
    assert.equal((await passwordLogin(app)).statusCode, 200);

    const wrong = await post(app, "/me/totp/confirm", token, { code: codeAt(secret, clock.now + 5 * 30_000) });
    assert.equal(wrong.statusCode, 400);
    assert.deepEqual(wrong.json(), { detail: INVALID_OTP });
    const malformed = await post(app, "/me/totp/confirm", token, { code: "12345" });
    assert.equal(malformed.statusCode, 422);

    const confirmed = await post(app, "/me/totp/confirm", token, { code: codeAt(secret, clock.now) });
    assert.equal(confirmed.statusCode, 200);
    const codes: string[] = confirmed.json().recovery_codes;
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    for (const code of codes) assert.match(code, /^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/);
    assert.deepEqual((await status()).json(), { totp_enabled: true, recovery_codes_remaining: 10, passkeys: 0 });

    const again = await post(app, "/me/totp", token);
    assert.equal(again.statusCode, 409);
    assert.deepEqual(again.json(), { detail: TOTP_ALREADY_ENABLED });
    assert.equal((await post(app, "/me/totp/confirm", token, { code: codeAt(secret, clock.now) })).statusCode, 409);
    assert.equal((await passwordLogin(app)).statusCode, 403);
    const events = await store.listEvents({ userId: (await store.findByEmail(EMAIL))!.id, limit: 50 });
    const outcomes = events.filter((event) => event.type === "second_factor").map((event) => event.outcome);
    assert.deepEqual(outcomes, ["otp_failed", "totp_added", "recovery_codes_generated"]);
  });

  test("confirming with nothing pending is a 409; starting over replaces the pending secret", async (t) => {
    const { app, store, clock } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await passwordLogin(app)).json().access_token as string;
    const none = await post(app, "/me/totp/confirm", token, { code: "123456" });
    assert.equal(none.statusCode, 409);
    assert.deepEqual(none.json(), { detail: NO_PENDING_TOTP });
    const first = (await post(app, "/me/totp", token)).json().secret;
    const second = (await post(app, "/me/totp", token, {})).json().secret;
    assert.notEqual(first, second);
    assert.equal((await post(app, "/me/totp", token, { secret: "mine" })).statusCode, 422);
    assert.equal((await post(app, "/me/totp/confirm", token, { code: codeAt(first, clock.now) })).statusCode, 400);
    assert.equal((await post(app, "/me/totp/confirm", token, { code: codeAt(second, clock.now) })).statusCode, 200);
  });
});

describe("the second-factor challenge on the token endpoint", () => {
  test("password -> 403 mfa_required with a single-use mfa_token -> mfa-otp grant -> the usual token response", async (t) => {
    const ada = await withTotp(t);
    const response = await passwordLogin(ada.app);
    assert.equal(response.statusCode, 403);
    assert.equal(response.headers["cache-control"], "no-store");
    assert.equal(response.headers.pragma, "no-cache");
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), [
      "detail",
      "error",
      "error_description",
      "expires_in",
      "mfa_factors",
      "mfa_token",
    ]);
    assert.equal(body.error, "mfa_required");
    assert.equal(body.detail, MFA_REQUIRED);
    assert.equal(body.error_description, MFA_REQUIRED);
    assert.deepEqual(body.mfa_factors, ["otp", "recovery_code"]);
    assert.equal(body.expires_in, 300);
    assert.match(body.mfa_token, /^[\w-]{43}$/);

    // A wrong password is still the spec's 401, whatever the factors.
    const wrong = await passwordLogin(ada.app, "not the password");
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.json().detail, INCORRECT_EMAIL_OR_PASSWORD);

    const granted = await ada.otpGrant(body.mfa_token, ada.code());
    assert.equal(granted.statusCode, 200, granted.body);
    assert.equal(granted.headers["cache-control"], "no-store");
    const tokens = granted.json();
    assert.deepEqual(Object.keys(tokens).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
    assert.equal(tokens.token_type, "bearer");
    assert.deepEqual(claimsOf(tokens.access_token).amr, ["pwd", "otp", "mfa"]);
    const me = await ada.app.inject({ method: "GET", url: "/me", headers: bearer(tokens.access_token) });
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().email, EMAIL);

    // The mfa_token is spent, even with another good code.
    ada.clock.advanceSeconds(30);
    const spent = await ada.otpGrant(body.mfa_token, ada.code());
    assert.equal(spent.statusCode, 401);
    assert.deepEqual(spent.json(), { detail: INVALID_MFA_TOKEN });
    assert.equal(spent.headers["www-authenticate"], "Bearer");

    const events = await ada.store.listEvents({ userId: (await ada.store.findByEmail(EMAIL))!.id, limit: 50 });
    const trail = events.map((event) => `${event.type}:${event.outcome}`);
    // The password step, the wrong password, the code's use and the login; the spent mfa_token got nowhere.
    assert.deepEqual(trail.slice(-4), [
      "login:mfa_required",
      "login:failure",
      "second_factor:otp_used",
      "login:success",
    ]);
  });

  test("an expired mfa_token is refused; an unknown one too", async (t) => {
    const ada = await withTotp(t);
    const mfaToken = await ada.challenge();
    ada.clock.advanceSeconds(301);
    const expired = await ada.otpGrant(mfaToken, ada.code());
    assert.equal(expired.statusCode, 401);
    assert.equal(expired.json().detail, INVALID_MFA_TOKEN);
    const unknown = await ada.otpGrant("x".repeat(43), ada.code());
    assert.equal(unknown.statusCode, 401);
    assert.equal(unknown.json().detail, INVALID_MFA_TOKEN);
  });

  test("missing grant fields answer 422 like the other grants", async (t) => {
    const ada = await withTotp(t);
    const mfaToken = await ada.challenge();
    for (const [fields, detail] of [
      [{ grant_type: MFA_OTP_GRANT, otp: "123456" }, "body.mfa_token: field required"],
      [{ grant_type: MFA_OTP_GRANT, mfa_token: mfaToken }, "body.otp: field required"],
      [{ grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp: "" }, "body.otp: field required"],
      [{ grant_type: MFA_RECOVERY_CODE_GRANT, mfa_token: mfaToken }, "body.recovery_code: field required"],
      [{ grant_type: MFA_RECOVERY_CODE_GRANT, recovery_code: "abcd" }, "body.mfa_token: field required"],
    ] as const) {
      const response = await requestToken(ada.app, fields);
      assert.equal(response.statusCode, 422, JSON.stringify(fields));
      assert.deepEqual(response.json(), { detail });
    }
    // The challenge is still good after all that.
    assert.equal((await ada.otpGrant(mfaToken, ada.code())).statusCode, 200);
  });

  test("a code is accepted once: the confirming code and a used code are refused as replays", async (t) => {
    const testApp = await buildTestApp(t);
    const { app, clock, store } = testApp;
    await createUser(store, EMAIL, PASSWORD);
    const token = (await passwordLogin(app)).json().access_token as string;
    const { secret } = (await post(app, "/me/totp", token)).json();
    const confirmingCode = codeAt(secret, clock.now);
    assert.equal((await post(app, "/me/totp/confirm", token, { code: confirmingCode })).statusCode, 200);
    const grant = async (otp: string) => {
      const mfaToken = (await passwordLogin(app)).json().mfa_token as string;
      return requestToken(app, { grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp });
    };
    const replayOfConfirmation = await grant(confirmingCode);
    assert.equal(replayOfConfirmation.statusCode, 401);
    assert.equal(replayOfConfirmation.json().detail, INVALID_OTP);

    clock.advanceSeconds(30);
    const fresh = codeAt(secret, clock.now);
    assert.equal((await grant(fresh)).statusCode, 200);
    assert.equal((await grant(fresh)).statusCode, 401, "the same code again, within its step");
    clock.advanceSeconds(10);
    assert.equal((await grant(fresh)).statusCode, 401, "and still within the drift window");
  });

  test("one step of drift either way is accepted, two are not", async (t) => {
    const ada = await withTotp(t);
    for (const offset of [-2, 2]) {
      const response = await ada.otpGrant(await ada.challenge(), ada.code(offset));
      assert.equal(response.statusCode, 401, `offset ${offset}`);
      assert.equal(response.json().detail, INVALID_OTP);
    }
    for (const offset of [-1, 1]) {
      const response = await ada.otpGrant(await ada.challenge(), ada.code(offset));
      assert.equal(response.statusCode, 200, `offset ${offset}: ${response.body}`);
    }
  });

  test("brute force: wrong codes for one account meet a 429 with Retry-After, even with the right code then", async (t) => {
    const rateLimit = { ...testConfig().rateLimit, enabled: true, secondFactorPerAccount: 5 };
    const ada = await withTotp(t, { rateLimit });
    // Taken before the limit: from then on the password step answers 429 too (next test).
    const [first, second] = [await ada.challenge(), await ada.challenge()];
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const wrong = await ada.otpGrant(await ada.challenge(), "000000" === ada.code() ? "111111" : "000000");
      assert.equal(wrong.statusCode, 401, `attempt ${attempt}`);
    }
    const refused = await ada.otpGrant(first, ada.code());
    assert.equal(refused.statusCode, 429);
    assert.deepEqual(refused.json(), { detail: TOO_MANY_SECOND_FACTOR_ATTEMPTS });
    assert.ok(Number(refused.headers["retry-after"]) > 0);
    const recovery = await ada.recoveryGrant(second, ada.recoveryCodes[0] as string);
    assert.equal(recovery.statusCode, 429, "recovery codes share the limit");

    ada.clock.advanceSeconds(901);
    assert.equal((await ada.otpGrant(await ada.challenge(), ada.code())).statusCode, 200, "the window has passed");
  });

  test("at the second-factor limit the password step answers the same 429, right or wrong password, and no mfa_token", async (t) => {
    const rateLimit = { ...testConfig().rateLimit, enabled: true, secondFactorPerAccount: 5 };
    const ada = await withTotp(t, { rateLimit });
    const spare = await ada.challenge();
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const wrong = await ada.otpGrant(await ada.challenge(), "000000" === ada.code() ? "111111" : "000000");
      assert.equal(wrong.statusCode, 401, `attempt ${attempt}`);
    }
    ada.clock.advanceSeconds(60);
    const secondStep = await ada.otpGrant(spare, ada.code());
    const limited = { detail: TOO_MANY_SECOND_FACTOR_ATTEMPTS };
    const retryAfter = String(900 - 60);
    assert.equal(secondStep.statusCode, 429);
    assert.deepEqual(secondStep.json(), limited);
    assert.equal(secondStep.headers["retry-after"], retryAfter);

    // The account's limit is checked before the password, so the 429 says nothing about the password.
    for (const password of [PASSWORD, "not the password"]) {
      const passwordStep = await passwordLogin(ada.app, password);
      assert.equal(passwordStep.statusCode, 429, password);
      assert.deepEqual(passwordStep.json(), limited);
      assert.equal(passwordStep.headers["retry-after"], retryAfter);
    }
    const events = await ada.store.listEvents({ userId: (await ada.store.findByEmail(EMAIL))!.id, limit: 50 });
    assert.equal(events.at(-1)?.outcome, "otp_failed", "no challenge was made after the limit");
    // Another account is not limited by Ada's count.
    await createUser(ada.store, "bob@example.com", PASSWORD);
    assert.equal((await requestToken(ada.app, { username: "bob@example.com", password: PASSWORD })).statusCode, 200);

    ada.clock.advanceSeconds(841);
    assert.equal((await passwordLogin(ada.app)).statusCode, 403, "the window has passed");
  });

  test("a few wrong codes spend the mfa_token itself", async (t) => {
    const ada = await withTotp(t);
    const mfaToken = await ada.challenge();
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const wrong = await ada.otpGrant(mfaToken, "000000" === ada.code() ? "111111" : "000000");
      assert.equal(wrong.statusCode, 401);
    }
    const after = await ada.otpGrant(mfaToken, ada.code());
    assert.equal(after.statusCode, 401);
    assert.equal(after.json().detail, INVALID_MFA_TOKEN);
  });

  test("a password change ends pending challenges with the sessions", async (t) => {
    const ada = await withTotp(t);
    const pending = await ada.challenge();
    const changed = await ada.app.inject({
      method: "PUT",
      url: "/me/password",
      headers: bearer(ada.token),
      payload: { current_password: PASSWORD, new_password: "an entirely new passphrase" },
    });
    assert.equal(changed.statusCode, 204);
    const refused = await ada.otpGrant(pending, ada.code());
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().detail, INVALID_MFA_TOKEN);
  });

  test("refresh keeps the session's amr; a password-only login says pwd", async (t) => {
    const ada = await withTotp(t);
    const tokens = (await ada.otpGrant(await ada.challenge(), ada.code())).json();
    ada.clock.advanceSeconds(60);
    const refreshed = await requestToken(ada.app, { grant_type: "refresh_token", refresh_token: tokens.refresh_token });
    assert.equal(refreshed.statusCode, 200);
    assert.deepEqual(claimsOf(refreshed.json().access_token).amr, ["pwd", "otp", "mfa"]);

    await createUser(ada.store, "bob@example.com", PASSWORD);
    const bob = await requestToken(ada.app, { username: "bob@example.com", password: PASSWORD });
    assert.deepEqual(claimsOf(bob.json().access_token).amr, ["pwd"]);
    const bobRefreshed = await requestToken(ada.app, {
      grant_type: "refresh_token",
      refresh_token: bob.json().refresh_token,
    });
    assert.deepEqual(claimsOf(bobRefreshed.json().access_token).amr, ["pwd"]);
  });

  test("accounts without a factor get the spec's answers, unchanged", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const ok = await passwordLogin(app);
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(Object.keys(ok.json()).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
    const wrong = await passwordLogin(app, "not the password");
    assert.equal(wrong.statusCode, 401);
    assert.deepEqual(wrong.json(), { detail: INCORRECT_EMAIL_OR_PASSWORD });
    assert.equal(wrong.headers["www-authenticate"], "Bearer");
    // A second-factor grant for an account without one has no mfa_token to offer.
    const grant = await requestToken(app, { grant_type: MFA_OTP_GRANT, mfa_token: "x".repeat(43), otp: "123456" });
    assert.equal(grant.statusCode, 401);
  });
});

describe("recovery codes", () => {
  test("each works once in place of a code; dashes and case do not matter", async (t) => {
    const ada = await withTotp(t);
    const [first, second] = ada.recoveryCodes as [string, string];
    const used = await ada.recoveryGrant(await ada.challenge(), first);
    assert.equal(used.statusCode, 200, used.body);
    assert.deepEqual(claimsOf(used.json().access_token).amr, ["pwd", "mfa"]);
    const again = await ada.recoveryGrant(await ada.challenge(), first);
    assert.equal(again.statusCode, 401);
    assert.deepEqual(again.json(), { detail: INVALID_RECOVERY_CODE });
    const loose = await ada.recoveryGrant(await ada.challenge(), second.replaceAll("-", "").toUpperCase());
    assert.equal(loose.statusCode, 200);
    const status = await ada.app.inject({ method: "GET", url: "/me/mfa", headers: bearer(ada.token) });
    assert.deepEqual(status.json(), { totp_enabled: true, recovery_codes_remaining: 8, passkeys: 0 });
  });

  test("regenerating needs the password and replaces every code", async (t) => {
    const ada = await withTotp(t);
    const wrong = await post(ada.app, "/me/recovery-codes", ada.token, { password: "not the password" });
    assert.equal(wrong.statusCode, 400);
    assert.deepEqual(wrong.json(), { detail: INCORRECT_CURRENT_PASSWORD });
    assert.equal((await post(ada.app, "/me/recovery-codes", ada.token, {})).statusCode, 422);
    const fresh = await post(ada.app, "/me/recovery-codes", ada.token, { password: PASSWORD });
    assert.equal(fresh.statusCode, 200);
    const codes: string[] = fresh.json().recovery_codes;
    assert.equal(codes.length, 10);
    assert.ok(codes.every((code) => !ada.recoveryCodes.includes(code)));
    assert.equal((await ada.recoveryGrant(await ada.challenge(), ada.recoveryCodes[0] as string)).statusCode, 401);
    assert.equal((await ada.recoveryGrant(await ada.challenge(), codes[0] as string)).statusCode, 200);
  });

  test("without a second factor there are none to make", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await passwordLogin(app)).json().access_token as string;
    assert.equal((await post(app, "/me/recovery-codes", token, { password: PASSWORD })).statusCode, 409);
  });
});

describe("turning the authenticator app off", () => {
  test("needs the password and a code (or a recovery code); then the password alone logs in again", async (t) => {
    const ada = await withTotp(t);
    const disable = (payload: object) => post(ada.app, "/me/totp/disable", ada.token, payload);
    const neither = await disable({ password: PASSWORD });
    assert.equal(neither.statusCode, 422);
    assert.deepEqual(neither.json(), { detail: ONE_OF_CODE_OR_RECOVERY_CODE });
    assert.equal((await disable({ password: PASSWORD, code: ada.code(), recovery_code: "x" })).statusCode, 422);
    assert.equal((await disable({ code: ada.code() })).statusCode, 422, "no password");
    const badPassword = await disable({ password: "not the password", code: ada.code() });
    assert.equal(badPassword.statusCode, 400);
    assert.deepEqual(badPassword.json(), { detail: INCORRECT_CURRENT_PASSWORD });
    const badCode = await disable({ password: PASSWORD, code: ada.code(3) });
    assert.equal(badCode.statusCode, 400);
    assert.deepEqual(badCode.json(), { detail: INVALID_OTP });
    assert.equal((await passwordLogin(ada.app)).statusCode, 403, "still on");

    const off = await disable({ password: PASSWORD, code: ada.code() });
    assert.equal(off.statusCode, 204);
    assert.equal(off.body, "");
    const status = await ada.app.inject({ method: "GET", url: "/me/mfa", headers: bearer(ada.token) });
    assert.deepEqual(status.json(), { totp_enabled: false, recovery_codes_remaining: 0, passkeys: 0 });
    assert.equal((await passwordLogin(ada.app)).statusCode, 200);
    const none = await disable({ password: PASSWORD, code: ada.code() });
    assert.equal(none.statusCode, 409);
    assert.deepEqual(none.json(), { detail: TOTP_NOT_ENABLED });
  });

  test("a recovery code instead of the app's code", async (t) => {
    const ada = await withTotp(t);
    const off = await post(ada.app, "/me/totp/disable", ada.token, {
      password: PASSWORD,
      recovery_code: ada.recoveryCodes[3],
    });
    assert.equal(off.statusCode, 204);
    assert.equal((await passwordLogin(ada.app)).statusCode, 200);
  });
});

describe("the admin reset", () => {
  /** An admin (with Ada's password) and an access token of theirs. */
  async function adminToken(ada: TestApp): Promise<string> {
    const { hashedPassword } = (await ada.store.findByEmail(EMAIL))!;
    await ada.store.create({ email: "root@example.com", hashedPassword, isAdmin: true });
    const login = await requestToken(ada.app, { username: "root@example.com", password: PASSWORD });
    return login.json().access_token as string;
  }

  test("lifts the account's second-factor limit with the factors: the password alone logs in at once", async (t) => {
    const rateLimit = { ...testConfig().rateLimit, enabled: true, secondFactorPerAccount: 5 };
    const ada = await withTotp(t, { rateLimit });
    const admin = await adminToken(ada);
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      await ada.otpGrant(await ada.challenge(), "000000" === ada.code() ? "111111" : "000000");
    }
    assert.equal((await passwordLogin(ada.app)).statusCode, 429);
    const adaId = (await ada.store.findByEmail(EMAIL))!.id;
    const reset = await ada.app.inject({ method: "DELETE", url: `/users/${adaId}/mfa`, headers: bearer(admin) });
    assert.equal(reset.statusCode, 204);
    const login = await passwordLogin(ada.app);
    assert.equal(login.statusCode, 200, login.body);
  });

  test("DELETE /users/{id}/mfa: admins only, audited; the password alone logs in again", async (t) => {
    const ada = await withTotp(t);
    const adaId = (await ada.store.findByEmail(EMAIL))!.id;
    const admin = await adminToken(ada);
    const reset = (token: string, id = adaId) =>
      ada.app.inject({ method: "DELETE", url: `/users/${id}/mfa`, headers: bearer(token) });

    const byAda = await reset(ada.token);
    assert.equal(byAda.statusCode, 403);
    assert.deepEqual(byAda.json(), { detail: NOT_ENOUGH_PRIVILEGES });
    assert.equal((await ada.app.inject({ method: "DELETE", url: `/users/${adaId}/mfa` })).statusCode, 401);
    assert.equal((await reset(admin, "01900000-0000-7000-8000-000000000000")).statusCode, 404);
    const pending = await ada.challenge();

    const done = await reset(admin);
    assert.equal(done.statusCode, 204);
    assert.equal(done.body, "");
    assert.equal((await ada.otpGrant(pending, ada.code())).statusCode, 401, "pending challenges end too");
    assert.equal((await passwordLogin(ada.app)).statusCode, 200);
    const events = await ada.store.listEvents({ userId: adaId, limit: 50, type: "second_factor" });
    assert.equal(events.at(-1)?.outcome, "reset_by_admin");
  });
});

describe("without MFA_ENCRYPTION_KEY (possible with PostgreSQL)", () => {
  const keyless = { mfa: { encryptionKeys: [], totpIssuer: "Service Test" } };

  test("authenticator apps are off: an enrolment answers 403 naming the setting; logins are as they were", async (t) => {
    const { app, store } = await buildTestApp(t, keyless);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await passwordLogin(app)).json().access_token as string;
    const enrolment = await post(app, "/me/totp", token);
    assert.equal(enrolment.statusCode, 403);
    assert.deepEqual(enrolment.json(), {
      detail: "Authenticator apps are off on this service until its operator sets MFA_ENCRYPTION_KEY",
    });
    const status = await app.inject({ method: "GET", url: "/me/mfa", headers: bearer(token) });
    assert.deepEqual(status.json(), { totp_enabled: false, recovery_codes_remaining: 0, passkeys: 0 });
    const confirm = await post(app, "/me/totp/confirm", token, { code: "123456" });
    assert.deepEqual([confirm.statusCode, confirm.json()], [409, { detail: NO_PENDING_TOTP }]);
    assert.equal((await passwordLogin(app)).statusCode, 200);
  });

  test("an app set up before the key was taken away answers 403 naming it, never a 500", async (t) => {
    const ada = await withTotp(t);
    const app = await buildApp({ config: testConfig(keyless), store: ada.store, clock: ada.clock.read });
    t.after(() => app.close());
    const mfaToken = (await passwordLogin(app)).json().mfa_token as string;
    const grant = await requestToken(app, { grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp: ada.code() });
    assert.equal(grant.statusCode, 403);
    assert.deepEqual(grant.json(), { detail: AUTHENTICATOR_APPS_OFF });
    const disable = await post(app, "/me/totp/disable", ada.token, { password: PASSWORD, code: ada.code() });
    assert.equal(disable.statusCode, 403);
    assert.deepEqual(disable.json(), { detail: AUTHENTICATOR_APPS_OFF });
  });
});
