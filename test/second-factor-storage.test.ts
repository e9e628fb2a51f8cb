// What a copy of the database gives away about second factors: nothing
// usable. Every table is read raw (and, on SQLite, the database and WAL
// files byte for byte) after an enrolment, a login challenge and recovery
// codes: no TOTP secret, recovery code or mfa_token appears in clear. And the
// encryption keys rotate: secrets sealed under an old key still open while it
// is listed, `reseal` moves them to the first key, and then the old key can go.
import assert from "node:assert/strict";
import { createHmac, hkdfSync } from "node:crypto";
import { describe, type TestContext, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { createRateLimits, MemoryCounterStore } from "../src/auth/rate-limits.ts";
import { createSecondFactors } from "../src/auth/second-factors.ts";
import { MFA_OTP_GRANT, MFA_RECOVERY_CODE_GRANT } from "../src/core/schemas.ts";
import type { UserStore } from "../src/store/store.ts";
import { bearer, createUser, requestToken, TestClock, testConfig } from "./helpers.ts";
import { rawStore } from "./raw-store.ts";
import { codeAt } from "./totp.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";
const OLD_KEY = "the-old-second-factor-key-of-32-bytes-or-more";
const NEW_KEY = "the-new-second-factor-key-of-32-bytes-or-more";

async function appOn(t: TestContext, store: UserStore, clock: TestClock, keys: string[]) {
  const app = await buildApp({
    config: testConfig({ mfa: { encryptionKeys: keys, totpIssuer: "Service Test" } }),
    store,
    clock: clock.read,
  });
  t.after(() => app.close());
  return app;
}

describe("second factors at rest", () => {
  test("the database holds no TOTP secret, recovery code or mfa_token in clear", async (t) => {
    const clock = new TestClock();
    const { store, dump, files } = await rawStore(t, clock.read);
    const app = await appOn(t, store, clock, [NEW_KEY]);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await requestToken(app, { username: EMAIL, password: PASSWORD })).json().access_token;
    const { secret } = (await app.inject({ method: "POST", url: "/me/totp", headers: bearer(token) })).json();
    const confirmed = await app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: bearer(token),
      payload: { code: codeAt(secret, clock.now) },
    });
    const codes: string[] = confirmed.json().recovery_codes;
    assert.equal(codes.length, 10);
    const challenge = await requestToken(app, { username: EMAIL, password: PASSWORD });
    const mfaToken: string = challenge.json().mfa_token;
    assert.ok(mfaToken);

    const secrets = [
      secret,
      secret.toLowerCase(),
      mfaToken,
      ...codes,
      ...codes.map((code) => code.replaceAll("-", "")),
    ];
    const tables = await dump();
    assert.match(tables, /sealed_secret/, "the dump reads the factor's table");
    for (const value of secrets) assert.ok(!tables.includes(value), "a secret is readable in a table");
    for (const bytes of files()) {
      for (const value of secrets) assert.ok(!bytes.includes(value), "a secret is readable in the database file");
    }

    // And the sealed secret still works: the code logs in.
    clock.advanceSeconds(30);
    const granted = await requestToken(app, {
      grant_type: MFA_OTP_GRANT,
      mfa_token: mfaToken,
      otp: codeAt(secret, clock.now),
    });
    assert.equal(granted.statusCode, 200);
  });

  test("recovery codes stored under MFA_ENCRYPTION_KEY by earlier versions keep working (the same HMAC key)", async (t) => {
    const clock = new TestClock();
    const { store } = await rawStore(t, clock.read);
    const app = await appOn(t, store, clock, [OLD_KEY]);
    const user = await createUser(store, EMAIL, PASSWORD);
    const token = (await requestToken(app, { username: EMAIL, password: PASSWORD })).json().access_token;
    const { secret } = (await app.inject({ method: "POST", url: "/me/totp", headers: bearer(token) })).json();
    const code = { code: codeAt(secret, clock.now) };
    await app.inject({ method: "POST", url: "/me/totp/confirm", headers: bearer(token), payload: code });
    // The hash as the service has always made it: HMAC-SHA-256 under HKDF(key, "recovery-code-hash").
    const key = Buffer.from(hkdfSync("sha256", OLD_KEY, "user-token-service", "recovery-code-hash", 32));
    await store.replaceRecoveryCodes(user.id, [createHmac("sha256", key).update("0123abcd4567").digest("base64url")]);
    const mfaToken = (await requestToken(app, { username: EMAIL, password: PASSWORD })).json().mfa_token;
    const used = await requestToken(app, {
      grant_type: MFA_RECOVERY_CODE_GRANT,
      mfa_token: mfaToken,
      recovery_code: "0123-abcd-4567",
    });
    assert.equal(used.statusCode, 200, used.body);
  });

  test("keys rotate: an old key still opens, reseal moves every secret to the first key, then the old key can go", async (t) => {
    const clock = new TestClock();
    const { store } = await rawStore(t, clock.read);
    const before = await appOn(t, store, clock, [OLD_KEY]);
    await createUser(store, EMAIL, PASSWORD);
    const token = (await requestToken(before, { username: EMAIL, password: PASSWORD })).json().access_token;
    const { secret } = (await before.inject({ method: "POST", url: "/me/totp", headers: bearer(token) })).json();
    const codes: string[] = (
      await before.inject({
        method: "POST",
        url: "/me/totp/confirm",
        headers: bearer(token),
        payload: { code: codeAt(secret, clock.now) },
      })
    ).json().recovery_codes;
    const sealedUnderOld = (await store.listTotpSecrets())[0]?.sealedSecret;

    const login = async (app: typeof before, fields: Record<string, string>) => {
      const mfaToken = (await requestToken(app, { username: EMAIL, password: PASSWORD })).json().mfa_token;
      return requestToken(app, { mfa_token: mfaToken, ...fields });
    };
    clock.advanceSeconds(30);
    const both = await appOn(t, store, clock, [NEW_KEY, OLD_KEY]);
    const otp = { grant_type: MFA_OTP_GRANT, otp: codeAt(secret, clock.now) };
    assert.equal((await login(both, otp)).statusCode, 200, "sealed under the old key, opened while it is listed");
    const recovery = { grant_type: MFA_RECOVERY_CODE_GRANT, recovery_code: codes[0] as string };
    assert.equal((await login(both, recovery)).statusCode, 200, "recovery codes hashed under the old key");

    const factors = createSecondFactors({
      store,
      keys: [NEW_KEY, OLD_KEY],
      signingMaterial: [],
      issuer: "Service Test",
      limits: createRateLimits(testConfig().rateLimit, new MemoryCounterStore()),
      clock: clock.read,
    });
    assert.deepEqual(await factors.reseal(), { resealed: 1, unreadable: 0 });
    assert.notEqual((await store.listTotpSecrets())[0]?.sealedSecret, sealedUnderOld);

    clock.advanceSeconds(30);
    const after = await appOn(t, store, clock, [NEW_KEY]);
    assert.equal(
      (await login(after, { grant_type: MFA_OTP_GRANT, otp: codeAt(secret, clock.now) })).statusCode,
      200,
      "resealed: the old key is no longer needed for the secret",
    );
    const onlyOld = createSecondFactors({
      store,
      keys: [OLD_KEY],
      signingMaterial: [],
      issuer: "x",
      limits: createRateLimits(testConfig().rateLimit, new MemoryCounterStore()),
      clock: clock.read,
    });
    assert.deepEqual(await onlyOld.reseal(), { resealed: 0, unreadable: 1 }, "the old key alone opens nothing now");
  });
});
