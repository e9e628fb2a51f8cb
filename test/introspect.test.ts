// POST /auth/introspect (RFC 7662): only configured resource servers (HTTP
// Basic) and admins may ask; the answer is active with the token's claims
// for a token that opens protected routes now, and {"active": false} alone
// for everything else, including what a local JWT check cannot see: a
// logged-out session, a deactivated or deleted user, a password change.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import {
  bearer,
  buildTestApp,
  createUser,
  loginToken,
  mintToken,
  requestToken,
  TEST_AUDIENCE,
  TEST_ISSUER,
} from "./helpers.ts";

const PASSWORD = "correct horse battery";
const CLIENT = { id: "orders-api", secret: "a-resource-server-secret-of-32-bytes-or-more" };

function basic(id: string, secret: string): { authorization: string } {
  return { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` };
}

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t, { introspectionClients: [CLIENT] });
  const ada = await createUser(testApp.store, "ada@example.com", PASSWORD);
  const root = await testApp.store.create({
    email: "root@example.com",
    hashedPassword: ada.hashedPassword,
    isAdmin: true,
  });
  const introspect = (token: string, headers: Record<string, string> = basic(CLIENT.id, CLIENT.secret)) =>
    testApp.app.inject({
      method: "POST",
      url: "/auth/introspect",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      payload: new URLSearchParams({ token }).toString(),
    });
  return { ...testApp, ada, root, introspect };
}

describe("POST /auth/introspect", () => {
  test("answers active with the token's claims to a configured resource server", async (t) => {
    const { app, ada, introspect, clock } = await setup(t);
    const login = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();
    const response = await introspect(login.access_token);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["cache-control"], "no-store");
    const body = response.json();
    assert.deepEqual(body, {
      active: true,
      token_type: "Bearer",
      sub: "ada@example.com",
      username: "ada@example.com",
      user_id: ada.id,
      iss: TEST_ISSUER,
      aud: TEST_AUDIENCE,
      iat: clock.seconds,
      exp: clock.seconds + 1800,
      sid: body.sid,
      amr: ["pwd"],
    });
    assert.match(body.sid, /^[0-9a-f-]{36}$/);
  });

  test("answers an admin's bearer token too", async (t) => {
    const { app, introspect } = await setup(t);
    const adaToken = await loginToken(app, "ada@example.com", PASSWORD);
    const rootToken = await loginToken(app, "root@example.com", PASSWORD);
    const response = await introspect(adaToken, bearer(rootToken));
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().active, true);
  });

  test("refuses callers that are not configured: no credentials, wrong secret, unknown client (401), non-admin (403)", async (t) => {
    const { app, introspect } = await setup(t);
    const adaToken = await loginToken(app, "ada@example.com", PASSWORD);
    for (const headers of [{}, basic(CLIENT.id, "wrong-secret"), basic("stranger", CLIENT.secret), bearer("x.y.z")]) {
      const response = await introspect(adaToken, headers as Record<string, string>);
      assert.equal(response.statusCode, 401, JSON.stringify(headers));
      assert.equal(response.headers["www-authenticate"], "Bearer");
      assert.equal(typeof response.json().detail, "string");
      assert.equal(response.json().active, undefined);
    }
    const notAdmin = await introspect(adaToken, bearer(adaToken));
    assert.equal(notAdmin.statusCode, 403);
    // A stranger learns nothing about the form either: 401 comes before validation.
    const empty = await app.inject({
      method: "POST",
      url: "/auth/introspect",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "",
    });
    assert.equal(empty.statusCode, 401);
  });

  test('answers {"active": false} alone for forged, expired, refresh and malformed tokens', async (t) => {
    const { app, introspect, clock, ada } = await setup(t);
    const login = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();
    const claims = { sub: "ada@example.com", iat: clock.seconds, exp: clock.seconds + 600, stamp: ada.credentialStamp };
    const tokens = {
      forged: mintToken(claims, { secret: "another-secret-of-at-least-32-bytes-long!" }),
      unknownUser: mintToken({ ...claims, sub: "nobody@example.com" }),
      wrongAudience: mintToken({ ...claims, aud: "https://other.example" }),
      refresh: login.refresh_token,
      garbage: "not-a-token",
      junkSegments: "abc.def.ghi",
      emptyObjects: "e30.e30.e30",
      clientShapedJunk: `${Buffer.from('{"alg":"HS256"}').toString("base64url")}.${Buffer.from('{"client_id":"x"}').toString("base64url")}.sig`,
    };
    assert.equal((await introspect(mintToken(claims))).json().active, true, "the test's own minting is sound");
    for (const [name, token] of Object.entries(tokens)) {
      const response = await introspect(token);
      assert.equal(response.statusCode, 200, name);
      assert.deepEqual(response.json(), { active: false }, name);
    }
    clock.advanceSeconds(1801);
    assert.deepEqual((await introspect(login.access_token)).json(), { active: false }, "expired");
  });

  test("sees what a local JWT check cannot: a logged-out session, a password change, a deactivated or deleted user", async (t) => {
    const { app, store, ada, introspect, clock } = await setup(t);
    const login = async () => (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();

    const loggedOut = await login();
    await app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token: loggedOut.refresh_token }).toString(),
    });
    assert.deepEqual((await introspect(loggedOut.access_token)).json(), { active: false }, "session ended");

    const other = await login();
    assert.equal((await introspect(other.access_token)).json().active, true, "other sessions are untouched");

    clock.advanceSeconds(2);
    await store.update(ada.id, { isActive: false });
    assert.deepEqual((await introspect(other.access_token)).json(), { active: false }, "deactivated");
    await store.update(ada.id, { isActive: true });
    assert.equal((await introspect(other.access_token)).json().active, true);
    await store.remove(ada.id);
    assert.deepEqual((await introspect(other.access_token)).json(), { active: false }, "deleted");
  });
});
