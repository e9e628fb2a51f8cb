// Attack: guessing passwords. Failed logins are limited per (account,
// address), per account and per address; the refusal is 429 with
// Retry-After and the same for unknown accounts; success clears the count;
// the window expires; the proxy header counts only when trusted.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { TOO_MANY_LOGIN_ATTEMPTS, TOO_MANY_SIGNUPS } from "../../src/auth/rate-limits.ts";
import type { Config } from "../../src/config.ts";
import { buildTestApp, createUser, testConfig } from "../helpers.ts";

const PASSWORD = "correct horse battery";
const limits = (overrides: Partial<Config["rateLimit"]> = {}): Partial<Config> => ({
  rateLimit: {
    ...testConfig().rateLimit,
    enabled: true,
    loginPerAccountAndAddress: 3,
    loginPerAccount: 6,
    loginPerAddress: 8,
    signupPerAddress: 2,
    windowSeconds: 60,
    ...overrides,
  },
});

async function limited(t: TestContext, overrides: Partial<Config> = {}) {
  const testApp = await buildTestApp(t, { ...limits(), ...overrides });
  await createUser(testApp.store, "ada@example.com", PASSWORD);
  const login = (username: string, password: string, address = "192.0.2.1", headers: Record<string, string> = {}) =>
    testApp.app.inject({
      method: "POST",
      url: "/auth/token",
      remoteAddress: address,
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      payload: new URLSearchParams({ username, password }).toString(),
    });
  return { ...testApp, login };
}

describe("brute force on POST /auth/token", () => {
  test("refuses the fourth try for one account from one address with 429, Retry-After and the error shape", async (t) => {
    const { login } = await limited(t);
    for (let i = 0; i < 3; i++) assert.equal((await login("ada@example.com", "wrong")).statusCode, 401);
    const refused = await login("ada@example.com", PASSWORD);
    assert.equal(refused.statusCode, 429, "even the right password waits out the window");
    assert.deepEqual(refused.json(), { detail: TOO_MANY_LOGIN_ATTEMPTS });
    const retryAfter = Number(refused.headers["retry-after"]);
    assert.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  });

  test("limits an unknown account exactly like a real one, so the limit reveals nothing", async (t) => {
    const { login } = await limited(t);
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 4; i++) known.push((await login("ada@example.com", "wrong", "192.0.2.1")).statusCode);
    for (let i = 0; i < 4; i++) unknown.push((await login("ghost@example.com", "wrong", "192.0.2.2")).statusCode);
    assert.deepEqual(known, [401, 401, 401, 429]);
    assert.deepEqual(unknown, known);
  });

  test("lets the owner in from another address while one address is locked out of the account", async (t) => {
    const { login } = await limited(t);
    for (let i = 0; i < 3; i++) await login("ada@example.com", "wrong", "198.51.100.7");
    assert.equal((await login("ada@example.com", "wrong", "198.51.100.7")).statusCode, 429);
    assert.equal((await login("ada@example.com", PASSWORD, "192.0.2.50")).statusCode, 200);
  });

  test("caps failures for one account over all addresses (a distributed guess)", async (t) => {
    const { login } = await limited(t);
    for (let i = 0; i < 6; i++)
      assert.equal((await login("ada@example.com", "wrong", `203.0.113.${i}`)).statusCode, 401);
    assert.equal((await login("ada@example.com", "wrong", "203.0.113.99")).statusCode, 429);
  });

  test("caps failures from one address over many accounts (password spraying)", async (t) => {
    const { login } = await limited(t);
    for (let i = 0; i < 8; i++)
      assert.equal((await login(`user${i}@example.com`, "wrong", "192.0.2.9")).statusCode, 401);
    assert.equal((await login("someone-else@example.com", "wrong", "192.0.2.9")).statusCode, 429);
  });

  test("clears the account's count after a successful login", async (t) => {
    const { login } = await limited(t);
    for (let i = 0; i < 2; i++) await login("ada@example.com", "wrong");
    assert.equal((await login("ada@example.com", PASSWORD)).statusCode, 200);
    for (let i = 0; i < 2; i++) assert.equal((await login("ada@example.com", "wrong")).statusCode, 401);
    assert.equal((await login("ada@example.com", PASSWORD)).statusCode, 200);
  });

  test("opens again when the window has passed", async (t) => {
    const { login, clock } = await limited(t);
    for (let i = 0; i < 3; i++) await login("ada@example.com", "wrong");
    assert.equal((await login("ada@example.com", PASSWORD)).statusCode, 429);
    clock.advanceSeconds(61);
    assert.equal((await login("ada@example.com", PASSWORD)).statusCode, 200);
  });

  test("ignores X-Forwarded-For unless TRUST_PROXY says so", async (t) => {
    const untrusted = await limited(t);
    for (let i = 0; i < 3; i++)
      await untrusted.login("ada@example.com", "wrong", "192.0.2.1", { "x-forwarded-for": `203.0.113.${i}` });
    const spoofed = await untrusted.login("ada@example.com", "wrong", "192.0.2.1", {
      "x-forwarded-for": "203.0.113.200",
    });
    assert.equal(spoofed.statusCode, 429, "a forged header does not reset the count");

    const trusted = await limited(t, { trustProxy: true });
    for (let i = 0; i < 3; i++)
      await trusted.login("ada@example.com", "wrong", "10.0.0.1", { "x-forwarded-for": "203.0.113.1" });
    assert.equal(
      (await trusted.login("ada@example.com", "wrong", "10.0.0.1", { "x-forwarded-for": "203.0.113.1" })).statusCode,
      429,
    );
    const otherClient = await trusted.login("ada@example.com", PASSWORD, "10.0.0.1", {
      "x-forwarded-for": "203.0.113.2",
    });
    assert.equal(otherClient.statusCode, 200, "behind a trusted proxy, clients are told apart by the header");
  });

  test("is off with RATE_LIMIT=off", async (t) => {
    const { login } = await limited(t, limits({ enabled: false }));
    for (let i = 0; i < 10; i++) assert.equal((await login("ada@example.com", "wrong")).statusCode, 401);
  });
});

describe("brute force on POST /users", () => {
  test("limits sign-ups per address with 429 and Retry-After; other addresses are unaffected", async (t) => {
    const { app } = await limited(t);
    const signUp = (email: string, address: string) =>
      app.inject({ method: "POST", url: "/users", remoteAddress: address, payload: { email, password: PASSWORD } });
    assert.equal((await signUp("a@example.com", "192.0.2.1")).statusCode, 201);
    assert.equal((await signUp("b@example.com", "192.0.2.1")).statusCode, 201);
    const refused = await signUp("c@example.com", "192.0.2.1");
    assert.equal(refused.statusCode, 429);
    assert.deepEqual(refused.json(), { detail: TOO_MANY_SIGNUPS });
    assert.ok(Number(refused.headers["retry-after"]) > 0);
    assert.equal((await signUp("c@example.com", "192.0.2.2")).statusCode, 201);
  });
});
