// GET /me and the spec's token check for protected endpoints, rule by rule,
// with forged and altered tokens minted by the test itself.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { COULD_NOT_VALIDATE_CREDENTIALS, NOT_AUTHENTICATED } from "../src/errors.ts";
import { base64url, bearer, buildTestApp, createUser, loginToken, mintToken, type TestApp } from "./helpers.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

async function withUser(t: Parameters<typeof buildTestApp>[0]) {
  const testApp = await buildTestApp(t);
  const user = await createUser(testApp.store, EMAIL, PASSWORD);
  return { ...testApp, user };
}

function getMe(testApp: TestApp, headers: Record<string, string> = {}, url = "/me") {
  return testApp.app.inject({ method: "GET", url, headers });
}

function assertRefused(response: Awaited<ReturnType<typeof getMe>>, detail = COULD_NOT_VALIDATE_CREDENTIALS) {
  assert.equal(response.statusCode, 401);
  assert.deepEqual(response.json(), { detail });
  assert.equal(response.headers["www-authenticate"], "Bearer");
}

describe("GET /me", () => {
  test("returns 200 with the caller's id and email for a token from /auth/token", async (t) => {
    const testApp = await withUser(t);
    const token = await loginToken(testApp.app, EMAIL, PASSWORD);
    const response = await getMe(testApp, bearer(token));
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.id, testApp.user.id);
    assert.equal(body.email, EMAIL);
    assert.match(testApp.user.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test("never returns the password hash and is not cacheable", async (t) => {
    const testApp = await withUser(t);
    const response = await getMe(testApp, bearer(await loginToken(testApp.app, EMAIL, PASSWORD)));
    assert.doesNotMatch(response.body, /hashed_password|argon2/);
    assert.equal(response.headers["cache-control"], "no-store");
  });

  test("accepts the scheme name Bearer in any letter case (RFC 9110 section 11.1)", async (t) => {
    const testApp = await withUser(t);
    const token = await loginToken(testApp.app, EMAIL, PASSWORD);
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      assert.equal((await getMe(testApp, { authorization: `${scheme} ${token}` })).statusCode, 200, scheme);
    }
  });

  test("accepts a token until the end of its 30 minutes and refuses it after (expired)", async (t) => {
    const testApp = await withUser(t);
    const token = await loginToken(testApp.app, EMAIL, PASSWORD);
    testApp.clock.advanceSeconds(30 * 60 - 1);
    assert.equal((await getMe(testApp, bearer(token))).statusCode, 200);
    testApp.clock.advanceSeconds(1);
    assertRefused(await getMe(testApp, bearer(token)));
  });
});

describe("token check on protected endpoints", () => {
  test("answers 401 Not authenticated with WWW-Authenticate when the Authorization header is absent", async (t) => {
    const testApp = await withUser(t);
    assertRefused(await getMe(testApp), NOT_AUTHENTICATED);
  });

  for (const authorization of ["", "Bearer", "Bearer ", "Basic YWRhOnB3", "Token abc", "Bearer a b"]) {
    test(`answers 401 Not authenticated for a header that is not a bearer token: ${JSON.stringify(authorization)}`, async (t) => {
      const testApp = await withUser(t);
      assertRefused(await getMe(testApp, { authorization }), NOT_AUTHENTICATED);
    });
  }

  test("never reads a token from the query string", async (t) => {
    const testApp = await withUser(t);
    const token = await loginToken(testApp.app, EMAIL, PASSWORD);
    assertRefused(await getMe(testApp, {}, `/me?access_token=${token}`), NOT_AUTHENTICATED);
    assertRefused(await getMe(testApp, {}, `/me?token=${token}`), NOT_AUTHENTICATED);
  });

  // Each maker gets the test clock's current time in seconds and the user's credential stamp, so
  // that every token below has exactly one flaw.
  const valid = (now: number, stamp: string) => ({ sub: EMAIL, iat: now, exp: now + 600, stamp });

  const forged: [string, (now: number, stamp: string) => string][] = [
    [
      "signed with the wrong secret",
      (now, stamp) => mintToken(valid(now, stamp), { secret: "another-secret-of-at-least-32-bytes!!" }),
    ],
    ["alg none with no signature", (now, stamp) => mintToken(valid(now, stamp), { header: { alg: "none" } })],
    [
      "alg none carrying a signature",
      (now, stamp) =>
        `${mintToken(valid(now, stamp), { header: { alg: "none" } })}${mintToken(valid(now, stamp)).split(".")[2]}`,
    ],
    ["HS384 with the right secret", (now, stamp) => mintToken(valid(now, stamp), { header: { alg: "HS384" } })],
    ["HS512 with the right secret", (now, stamp) => mintToken(valid(now, stamp), { header: { alg: "HS512" } })],
    [
      "RS256 header over an HMAC signature (algorithm confusion)",
      (now, stamp) => mintToken(valid(now, stamp), { header: { alg: "RS256" } }),
    ],
    ["expired", (now, stamp) => mintToken({ sub: EMAIL, stamp, iat: now - 3600, exp: now - 1 })],
    ["expiring exactly now", (now, stamp) => mintToken({ sub: EMAIL, stamp, iat: now - 1800, exp: now })],
    ["without exp", (now, stamp) => mintToken({ sub: EMAIL, stamp, iat: now })],
    ["without iat", (now, stamp) => mintToken({ sub: EMAIL, stamp, exp: now + 600 })],
    [
      "issued to an earlier holder of the e-mail (another account's credential stamp)",
      (now) => mintToken({ sub: EMAIL, iat: now - 3600, exp: now + 600, stamp: "an-earlier-account" }),
    ],
    ["without the credential stamp", (now) => mintToken({ sub: EMAIL, iat: now, exp: now + 600 })],
    [
      "with an outdated credential stamp (issued before a password change)",
      (now, stamp) => mintToken({ ...valid(now, stamp), stamp: `${stamp}-old` }),
    ],
    ["with a non-numeric exp", (now, stamp) => mintToken({ sub: EMAIL, stamp, exp: String(now + 600) })],
    ["without sub", (now, stamp) => mintToken({ iat: now, exp: now + 600, stamp })],
    ["with an empty sub", (now, stamp) => mintToken({ sub: "", iat: now, exp: now + 600, stamp })],
    ["with a non-string sub", (now, stamp) => mintToken({ sub: 42, iat: now, exp: now + 600, stamp })],
    ["whose sub is no user", (now, stamp) => mintToken({ sub: "ghost@example.com", iat: now, exp: now + 600, stamp })],
    ["not yet valid (nbf in the future)", (now, stamp) => mintToken({ ...valid(now, stamp), nbf: now + 60 })],
    ["issued in the future (iat)", (now, stamp) => mintToken({ ...valid(now, stamp), iat: now + 60 })],
    ["without the at+jwt typ header", (now, stamp) => mintToken(valid(now, stamp), { header: { typ: "JWT" } })],
    [
      "with an unknown crit header",
      (now, stamp) => mintToken(valid(now, stamp), { header: { crit: ["exp2"], exp2: 1 } }),
    ],
    [
      "with a tampered payload (sub changed after signing)",
      (now, stamp) => {
        const [header, , signature] = mintToken({ ...valid(now, stamp), sub: "eve@example.com" }).split(".");
        return `${header}.${base64url(valid(now, stamp))}.${signature}`;
      },
    ],
    [
      "with its signature stripped",
      (now, stamp) => `${mintToken(valid(now, stamp)).split(".").slice(0, 2).join(".")}.`,
    ],
    ["with no signature segment", (now, stamp) => mintToken(valid(now, stamp)).split(".").slice(0, 2).join(".")],
    [
      "with an altered signature",
      (now, stamp) => {
        const token = mintToken(valid(now, stamp));
        return token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA");
      },
    ],
    ["that is not a JWT at all", () => "not-a-token"],
    ["with garbage segments", () => "e30.e30.e30"],
    ["that is far too long", (now, stamp) => mintToken({ ...valid(now, stamp), pad: "x".repeat(10_000) })],
  ];

  for (const [name, makeToken] of forged) {
    test(`answers 401 Could not validate credentials for a token ${name}`, async (t) => {
      const testApp = await withUser(t);
      assertRefused(await getMe(testApp, bearer(makeToken(testApp.clock.seconds, testApp.user.credentialStamp))));
    });
  }

  test("accepts a hand-minted token with the right secret, HS256, sub, exp and credential stamp (the control for the table above)", async (t) => {
    const testApp = await withUser(t);
    const response = await getMe(
      testApp,
      bearer(mintToken(valid(testApp.clock.seconds, testApp.user.credentialStamp))),
    );
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().email, EMAIL);
  });

  test("looks the sub up without regard to letter case, as login does", async (t) => {
    const testApp = await withUser(t);
    assert.equal(
      (
        await getMe(
          testApp,
          bearer(mintToken({ ...valid(testApp.clock.seconds, testApp.user.credentialStamp), sub: "ADA@example.com" })),
        )
      ).statusCode,
      200,
    );
  });
});
