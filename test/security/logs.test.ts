// Attack: reading secrets out of logs. The whole flow runs at the most
// verbose level (trace) with every request logged, including failures and a
// 500, and the captured log must hold no password, token, hash or secret.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { buildApp } from "../../src/app.ts";
import { generatePrivateKeyPem } from "../../src/auth/keys.ts";
import { WEBAUTHN_GRANT } from "../../src/auth/passkeys.ts";
import { MFA_OTP_GRANT, MFA_RECOVERY_CODE_GRANT, MFA_WEBAUTHN_GRANT } from "../../src/core/schemas.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { requestToken, TEST_MFA_KEY, TEST_SECRET, TestClock, testConfig } from "../helpers.ts";
import { MailServer, tokenIn } from "../mail-server.ts";
import { SoftAuthenticator } from "../soft-authenticator.ts";
import { codeAt } from "../totp.ts";

const PASSWORD = "correct horse battery staple";
const NEW_PASSWORD = "an entirely new passphrase";
const WRONG_PASSWORD = "guessing-attempt-123";

/** A log destination that keeps every line, for the test to search. */
function captureLog(): { stream: Writable; text: () => string } {
  let log = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      log += chunk.toString();
      done();
    },
  });
  return { stream, text: () => log };
}

/** A form post to the token endpoint, for app.inject. */
function form(fields: Record<string, string>) {
  return {
    method: "POST" as const,
    url: "/auth/token",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams(fields).toString(),
  };
}

describe("logs never leak", () => {
  test("hold no password, token, hash or signing secret after a full flow at trace level", async (t) => {
    const { stream, text } = captureLog();
    const store = openSqliteStore(":memory:");
    const app = await buildApp({ config: testConfig({ logLevel: "trace" }), store, logStream: stream });
    t.after(async () => {
      await app.close();
      await store.close();
    });

    await app.inject({ method: "POST", url: "/users", payload: { email: "ada@example.com", password: PASSWORD } });
    await app.inject({ method: "POST", url: "/users", payload: { email: "bad", password: PASSWORD } });
    await app.inject(form({ username: "ada@example.com", password: WRONG_PASSWORD }));
    await app.inject(form({ username: "nobody@example.com", password: WRONG_PASSWORD }));
    const token = (await app.inject(form({ username: "ada@example.com", password: PASSWORD }))).json()
      .access_token as string;
    const auth = { authorization: `Bearer ${token}` };
    await app.inject({ method: "GET", url: "/me", headers: auth });
    await app.inject({ method: "GET", url: `/me?access_token=${token}` });
    await app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${token}x` } });
    await app.inject({
      method: "PUT",
      url: "/me/password",
      headers: auth,
      payload: { current_password: WRONG_PASSWORD, new_password: NEW_PASSWORD },
    });
    await app.inject({
      method: "PUT",
      url: "/me/password",
      headers: auth,
      payload: { current_password: PASSWORD, new_password: NEW_PASSWORD },
    });
    const hash = (await store.findByEmail("ada@example.com"))!.hashedPassword;

    const log = text();
    const completed = log.split("\n").filter((line) => line.includes('"msg":"request completed"'));
    assert.equal(completed.length, 10, "every request of the flow was logged");
    const [, payload, signature] = token.split(".");
    const secrets: [string, string][] = [
      ["password", PASSWORD],
      ["new password", NEW_PASSWORD],
      ["wrong password", WRONG_PASSWORD],
      ["token payload", payload!],
      ["token signature", signature!],
      ["password hash", hash.split("$").at(-1)!],
      ["signing secret", TEST_SECRET],
    ];
    for (const [name, value] of secrets) assert.ok(!log.includes(value), `the log holds the ${name}`);
    assert.doesNotMatch(log, /\$argon2id\$/);
  });

  test("hold no TOTP secret, one-time code, recovery code, mfa_token or encryption key after the second-factor flow", async (t) => {
    const { stream, text } = captureLog();
    const clock = new TestClock();
    const store = openSqliteStore(":memory:", clock.read);
    const app = await buildApp({
      config: testConfig({ logLevel: "trace" }),
      store,
      logStream: stream,
      clock: clock.read,
    });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await app.inject({ method: "POST", url: "/users", payload: { email: "ada@example.com", password: PASSWORD } });
    const login = { username: "ada@example.com", password: PASSWORD };
    const token = (await app.inject(form(login))).json().access_token as string;
    const auth = { authorization: `Bearer ${token}` };
    const { secret } = (await app.inject({ method: "POST", url: "/me/totp", headers: auth })).json();
    const confirmCode = codeAt(secret, clock.now);
    await app.inject({ method: "POST", url: "/me/totp/confirm", headers: auth, payload: { code: "000000" } });
    const codes: string[] = (
      await app.inject({ method: "POST", url: "/me/totp/confirm", headers: auth, payload: { code: confirmCode } })
    ).json().recovery_codes;
    clock.advanceSeconds(30);
    const mfaToken = (await app.inject(form(login))).json().mfa_token as string;
    const otp = codeAt(secret, clock.now);
    await app.inject(form({ grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp: "123456" }));
    await app.inject(form({ grant_type: MFA_OTP_GRANT, mfa_token: mfaToken, otp }));
    const second = (await app.inject(form(login))).json().mfa_token as string;
    await app.inject(form({ grant_type: MFA_RECOVERY_CODE_GRANT, mfa_token: second, recovery_code: codes[0]! }));
    const fresh: string[] = (
      await app.inject({ method: "POST", url: "/me/recovery-codes", headers: auth, payload: { password: PASSWORD } })
    ).json().recovery_codes;
    await app.inject({
      method: "POST",
      url: "/me/totp/disable",
      headers: auth,
      payload: { password: PASSWORD, recovery_code: fresh[0] },
    });

    const log = text();
    assert.ok(log.split("\n").filter((line) => line.includes('"msg":"request completed"')).length >= 11);
    const secrets: [string, string][] = [
      ["TOTP secret", secret],
      // Six digits could occur inside a timestamp by chance: look for them as a value.
      ["confirming code", `"${confirmCode}"`],
      ["confirming code", `=${confirmCode}`],
      ["login code", `"${otp}"`],
      ["login code", `=${otp}`],
      ["mfa_token", mfaToken],
      ["second mfa_token", second],
      ["MFA encryption key", TEST_MFA_KEY],
      ...codes.map((code): [string, string] => ["recovery code", code]),
      ...fresh.map((code): [string, string] => ["new recovery code", code]),
    ];
    for (const [name, value] of secrets) assert.ok(!log.includes(value), `the log holds the ${name}`);
  });

  test("hold no WebAuthn challenge, signature, mfa_token or token after the passkey flows, refusals included", async (t) => {
    const { stream, text } = captureLog();
    const origin = "https://id.test.example";
    const store = openSqliteStore(":memory:");
    const app = await buildApp({
      config: testConfig({ logLevel: "trace", publicUrl: origin }),
      store,
      logStream: stream,
    });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await app.inject({ method: "POST", url: "/users", payload: { email: "ada@example.com", password: PASSWORD } });
    const login = { username: "ada@example.com", password: PASSWORD };
    const token = (await requestToken(app, login)).json().access_token as string;
    const auth = { authorization: `Bearer ${token}` };
    const authenticator = new SoftAuthenticator(origin);
    const begun = (
      await app.inject({ method: "POST", url: "/me/passkeys/registration-options", headers: auth })
    ).json();
    const registration = authenticator.register(begun.options);
    await app.inject({
      method: "POST",
      url: "/me/passkeys",
      headers: auth,
      payload: { challenge_id: begun.challenge_id, name: "Laptop", response: registration },
    });
    const options = (
      await app.inject({ method: "POST", url: "/auth/webauthn/authentication-options", payload: {} })
    ).json();
    const refused = authenticator.assert(options.options, { origin: "https://evil.example" });
    const alone = authenticator.assert(options.options);
    await requestToken(app, {
      grant_type: WEBAUTHN_GRANT,
      challenge_id: options.challenge_id,
      webauthn_response: JSON.stringify(refused),
    });
    const again = (
      await app.inject({ method: "POST", url: "/auth/webauthn/authentication-options", payload: {} })
    ).json();
    const signedIn = authenticator.assert(again.options);
    const tokens = (
      await requestToken(app, {
        grant_type: WEBAUTHN_GRANT,
        challenge_id: again.challenge_id,
        webauthn_response: JSON.stringify(signedIn),
      })
    ).json();
    const mfaToken = (await requestToken(app, login)).json().mfa_token as string;
    const second = (
      await app.inject({
        method: "POST",
        url: "/auth/webauthn/authentication-options",
        payload: { mfa_token: mfaToken },
      })
    ).json();
    const factor = authenticator.assert(second.options);
    await requestToken(app, {
      grant_type: MFA_WEBAUTHN_GRANT,
      mfa_token: mfaToken,
      webauthn_response: JSON.stringify(factor),
    });

    const log = text();
    assert.match(log, /passkey assertion refused/);
    const signature = (answer: Record<string, unknown>) => (answer.response as { signature: string }).signature;
    const secrets: [string, string][] = [
      ["registration challenge", begun.options.challenge],
      ["sign-in challenge", options.options.challenge],
      ["second sign-in challenge", again.options.challenge],
      ["second-factor challenge", second.options.challenge],
      ["attestation", (registration.response as { attestationObject: string }).attestationObject],
      ["refused signature", signature(refused)],
      ["unused signature", signature(alone)],
      ["signature", signature(signedIn)],
      ["second-factor signature", signature(factor)],
      ["mfa_token", mfaToken],
      ["access token", tokens.access_token],
      ["refresh token", tokens.refresh_token],
    ];
    for (const [name, value] of secrets) assert.ok(!log.includes(value), `the log holds the ${name}`);
  });

  test("hold no reset token, new password or SMTP password, with mail delivered and with SMTP failing", async (t) => {
    let log = "";
    const stream = new Writable({
      write(chunk, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    const smtp = new MailServer();
    await smtp.start();
    t.after(() => smtp.stop());
    const base = testConfig({ logLevel: "trace" });
    const build = async (url: string) => {
      const store = openSqliteStore(":memory:");
      const mail = { ...base.mail, transport: { kind: "smtp" as const, url }, pollIntervalMs: 50 };
      const app = await buildApp({ config: { ...base, mail }, store, logStream: stream });
      t.after(async () => {
        await app.close();
        await store.close();
      });
      return app;
    };
    const app = await build(smtp.url);
    await app.inject({ method: "POST", url: "/users", payload: { email: "ada@example.com", password: PASSWORD } });
    await app.inject({ method: "POST", url: "/auth/password-reset-requests", payload: { email: "ada@example.com" } });
    await smtp.waitFor(2);
    const token = tokenIn(smtp.lastTo("ada@example.com")!);
    const reset = { method: "POST" as const, url: "/auth/password-resets" };
    await app.inject({ ...reset, payload: { token, new_password: "password123" } });
    await app.inject({ ...reset, payload: { token, new_password: NEW_PASSWORD } });
    await app.inject({ ...reset, payload: { token, new_password: NEW_PASSWORD } });

    // An SMTP server that refuses connections, reached with a password in MAIL_URL.
    const down = new MailServer();
    await down.start();
    await down.stop();
    const failing = await build(`smtp://mailer:smtp-pass-hunter2@127.0.0.1:${down.port}`);
    await failing.inject({ method: "POST", url: "/users", payload: { email: "bo@example.com", password: PASSWORD } });
    const deadline = Date.now() + 5000;
    while (!log.includes("mail delivery failed") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.match(log, /mail delivery failed; will retry/);
    assert.ok(!log.includes(token), "the log holds the reset token");
    assert.ok(!log.includes(NEW_PASSWORD), "the log holds the new password");
    assert.ok(!log.includes("smtp-pass-hunter2"), "the log holds the SMTP password");
  });

  test("hold no private key, introspection secret or introspected token at trace level", async (t) => {
    const { stream, text } = captureLog();
    const pem = generatePrivateKeyPem("EdDSA");
    const client = { id: "orders-api", secret: "an-introspection-secret-of-32-bytes-or-more" };
    const store = openSqliteStore(":memory:");
    const config = testConfig({
      logLevel: "trace",
      signingAlgorithm: "EdDSA",
      signingSecrets: [],
      signingKeys: [pem],
      introspectionClients: [client],
    });
    const app = await buildApp({ config, store, logStream: stream });
    t.after(async () => {
      await app.close();
      await store.close();
    });
    await app.inject({ method: "POST", url: "/users", payload: { email: "ada@example.com", password: PASSWORD } });
    const token = (
      await app.inject({
        method: "POST",
        url: "/auth/token",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ username: "ada@example.com", password: PASSWORD }).toString(),
      })
    ).json().access_token as string;
    const basic = Buffer.from(`${client.id}:${client.secret}`).toString("base64");
    for (const secret of [client.secret, "a-wrong-secret"]) {
      await app.inject({
        method: "POST",
        url: "/auth/introspect",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${client.id}:${secret}`).toString("base64")}`,
        },
        payload: new URLSearchParams({ token }).toString(),
      });
    }
    await app.inject({ method: "GET", url: "/.well-known/jwks.json" });
    const log = text();
    assert.equal(log.split("\n").filter((line) => line.includes('"msg":"request completed"')).length, 5);
    const [, payload, signature] = token.split(".");
    const keyBody = pem.split("\n").filter((line) => line !== "" && !line.startsWith("-----"));
    const secrets: [string, string][] = [
      ["token payload", payload!],
      ["token signature", signature!],
      ["introspection secret", client.secret],
      ["Basic credentials", basic],
      ...keyBody.map((line): [string, string] => ["private key", line]),
    ];
    for (const [name, value] of secrets) assert.ok(!log.includes(value), `the log holds the ${name}`);
    assert.doesNotMatch(log, /PRIVATE KEY/);
  });
});
