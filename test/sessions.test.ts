// Refresh tokens and sessions: issue, refresh, rotation, reuse detection,
// idle and absolute expiry (on the injected clock), concurrent refreshes,
// revocation (RFC 7009), logout of one session, and credential changes
// ending every session and every access token issued before them.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { INVALID_REFRESH_TOKEN, parseRefreshToken } from "../src/auth/sessions.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS } from "../src/errors.ts";
import { bearer, buildTestApp, createUser, requestToken, type TestApp } from "./helpers.ts";

const PASSWORD = "correct horse battery";
const IDLE = 3600;
const ABSOLUTE = 4 * 3600;

interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t, {
    sessions: { idleSeconds: IDLE, absoluteSeconds: ABSOLUTE, reuseGraceSeconds: 10, maxPerUser: 50 },
  });
  const ada = await createUser(testApp.store, "ada@example.com", PASSWORD);
  const login = async (userAgent = "test-agent") => {
    const response = await requestToken(
      testApp.app,
      { username: "ada@example.com", password: PASSWORD },
      { "user-agent": userAgent },
    );
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Tokens;
  };
  const refresh = (refreshToken: string) =>
    requestToken(testApp.app, { grant_type: "refresh_token", refresh_token: refreshToken });
  const me = (accessToken: string) => testApp.app.inject({ method: "GET", url: "/me", headers: bearer(accessToken) });
  return { ...testApp, ada, login, refresh, me };
}

function assertInvalidGrant(response: Awaited<ReturnType<TestApp["app"]["inject"]>>): void {
  assert.equal(response.statusCode, 401, response.body);
  assert.deepEqual(response.json(), { detail: INVALID_REFRESH_TOKEN });
  assert.equal(response.headers["www-authenticate"], "Bearer");
}

describe("refresh tokens", () => {
  test("the password grant also returns a refresh token of 256 random bits naming its session and generation, and expires_in; only its hash is stored", async (t) => {
    const { login, store, ada, clock } = await setup(t);
    const tokens = await login();
    assert.equal(tokens.expires_in, 1800);
    const [sessionId, generation, secret] = tokens.refresh_token.split(".");
    assert.match(secret ?? "", /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
    assert.equal(generation, "0");
    assert.notEqual((await login()).refresh_token, tokens.refresh_token);
    const sessions = await store.listSessions(ada.id, new Date(clock.now).toISOString(), { limit: 10 });
    assert.equal(sessions.length, 2);
    assert.ok(sessions.some((session) => session.id === sessionId));
    const now = new Date(clock.now).toISOString();
    const plain = { sessionId: sessionId as string, generation: 0, tokenHash: tokens.refresh_token };
    assert.equal(await store.revokeSessionByToken(plain, now), undefined, "the plain token is not what is stored");
    const hashed = parseRefreshToken(tokens.refresh_token);
    assert.equal(await store.revokeSessionByToken(hashed!, now), ada.id, "its SHA-256 is");
  });

  test("grant_type=refresh_token returns a new access token and a new refresh token; the access token works", async (t) => {
    const { login, refresh, me, clock } = await setup(t);
    const first = await login();
    clock.advanceSeconds(60);
    const response = await refresh(first.refresh_token);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers["cache-control"], "no-store");
    const second = response.json() as Tokens;
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.notEqual(second.access_token, first.access_token);
    assert.equal((await me(second.access_token)).statusCode, 200);
  });

  test("rotation: the old refresh token is refused once spent", async (t) => {
    const { login, refresh, clock } = await setup(t);
    const first = await login();
    assert.equal((await refresh(first.refresh_token)).statusCode, 200);
    clock.advanceSeconds(1);
    assertInvalidGrant(await refresh(first.refresh_token));
  });

  test("reuse after the grace window revokes the whole session: the thief and the owner are both signed out", async (t) => {
    const { login, refresh, clock } = await setup(t);
    const stolen = await login();
    const ownerNext = (await refresh(stolen.refresh_token)).json() as Tokens;
    clock.advanceSeconds(11);
    assertInvalidGrant(await refresh(stolen.refresh_token));
    assertInvalidGrant(await refresh(ownerNext.refresh_token));
  });

  test("concurrent refreshes of one token: exactly one wins; the others are refused without ending the session", async (t) => {
    const { login, refresh } = await setup(t);
    const tokens = await login();
    const responses = await Promise.all(Array.from({ length: 5 }, () => refresh(tokens.refresh_token)));
    const winners = responses.filter((response) => response.statusCode === 200);
    assert.equal(winners.length, 1);
    for (const loser of responses.filter((response) => response.statusCode !== 200)) assertInvalidGrant(loser);
    const next = (winners[0]!.json() as Tokens).refresh_token;
    assert.equal((await refresh(next)).statusCode, 200, "within the grace window the session lives on");
  });

  test("expires after the idle lifetime without refreshes", async (t) => {
    const { login, refresh, clock } = await setup(t);
    const tokens = await login();
    clock.advanceSeconds(IDLE - 1);
    const next = (await refresh(tokens.refresh_token)).json() as Tokens;
    clock.advanceSeconds(IDLE);
    assertInvalidGrant(await refresh(next.refresh_token));
  });

  test("expires at the absolute lifetime even when refreshed all along", async (t) => {
    const { login, refresh, clock } = await setup(t);
    let token = (await login()).refresh_token;
    for (let elapsed = 0; elapsed + 3000 < ABSOLUTE; elapsed += 3000) {
      clock.advanceSeconds(3000);
      const response = await refresh(token);
      assert.equal(response.statusCode, 200, `refresh at ${elapsed + 3000} s`);
      token = (response.json() as Tokens).refresh_token;
    }
    clock.advanceSeconds(3000);
    assertInvalidGrant(await refresh(token));
  });

  test("answers 401 for an unknown refresh token and 422 when refresh_token is missing", async (t) => {
    const { refresh, app } = await setup(t);
    assertInvalidGrant(await refresh("not-a-token-we-issued"));
    const missing = await requestToken(app, { grant_type: "refresh_token" });
    assert.equal(missing.statusCode, 422);
    assert.deepEqual(missing.json(), { detail: "body.refresh_token: field required" });
  });

  test("stops refreshing for a deactivated or deleted user", async (t) => {
    const { login, refresh, store, ada, clock } = await setup(t);
    const tokens = await login();
    await store.update(ada.id, { isActive: false });
    assertInvalidGrant(await refresh(tokens.refresh_token));
    await store.update(ada.id, { isActive: true });
    clock.advanceSeconds(1);
    const again = await login();
    await store.remove(ada.id);
    assertInvalidGrant(await refresh(again.refresh_token));
  });
});

describe("bounded growth", () => {
  test("a refresh token forged for the current generation is refused and leaves the session alive", async (t) => {
    const { login, refresh } = await setup(t);
    const tokens = await login();
    const [sessionId, generation] = tokens.refresh_token.split(".");
    assertInvalidGrant(await refresh(`${sessionId}.${generation}.${"A".repeat(43)}`));
    assertInvalidGrant(await refresh(`${sessionId}.7.${"A".repeat(43)}`));
    assert.equal((await refresh(tokens.refresh_token)).statusCode, 200, "not a reuse: nothing was ended");
  });

  test("older generations are recognised as reuse even though only the current hash is stored", async (t) => {
    const { login, refresh, clock } = await setup(t);
    let tokens = await login();
    const first = tokens.refresh_token;
    for (let i = 0; i < 3; i++) tokens = (await refresh(tokens.refresh_token)).json() as Tokens;
    assert.match(tokens.refresh_token, /\.3\./, "the fourth generation");
    clock.advanceSeconds(11);
    assertInvalidGrant(await refresh(first));
    // The reuse of generation 0 ended the session, so its current token is refused too.
    assertInvalidGrant(await refresh(tokens.refresh_token));
  });

  test("a user holds at most MAX_SESSIONS_PER_USER live sessions: a new login ends the oldest, audited", async (t) => {
    const testApp = await buildTestApp(t, {
      sessions: { idleSeconds: IDLE, absoluteSeconds: ABSOLUTE, reuseGraceSeconds: 10, maxPerUser: 3 },
    });
    const ada = await createUser(testApp.store, "ada@example.com", PASSWORD);
    const logins: Tokens[] = [];
    for (let i = 0; i < 5; i++) {
      testApp.clock.advanceSeconds(1);
      const response = await requestToken(testApp.app, { username: "ada@example.com", password: PASSWORD });
      logins.push(response.json() as Tokens);
    }
    const refresh = (token: string) => requestToken(testApp.app, { grant_type: "refresh_token", refresh_token: token });
    assertInvalidGrant(await refresh(logins[0]!.refresh_token));
    assertInvalidGrant(await refresh(logins[1]!.refresh_token));
    for (const tokens of logins.slice(2)) assert.equal((await refresh(tokens.refresh_token)).statusCode, 200);
    const now = new Date(testApp.clock.now).toISOString();
    assert.equal((await testApp.store.listSessions(ada.id, now, { limit: 100 })).length, 3);
    const events = await testApp.store.listEvents({ userId: ada.id, limit: 100, type: "session_revocation" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["session_limit", "session_limit"],
    );
  });

  test("GET /me/sessions is paginated like /users: limit, next_cursor and next, newest first", async (t) => {
    const { login, app, clock } = await setup(t);
    const logins: Tokens[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advanceSeconds(1);
      logins.push(await login(`agent-${i}`));
    }
    const token = logins[4]!.access_token;
    const seen: string[] = [];
    let url: string | null = "/me/sessions?limit=2";
    let pages = 0;
    while (url) {
      const response: Awaited<ReturnType<typeof app.inject>> = await app.inject({
        method: "GET",
        url,
        headers: bearer(token),
      });
      assert.equal(response.statusCode, 200, response.body);
      const page = response.json() as { items: { user_agent: string }[]; next: string | null; next_cursor: string };
      assert.ok(page.items.length <= 2);
      seen.push(...page.items.map((item) => item.user_agent));
      url = page.next;
      pages += 1;
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, ["agent-4", "agent-3", "agent-2", "agent-1", "agent-0"]);
    const tooMany = await app.inject({ method: "GET", url: "/me/sessions?limit=101", headers: bearer(token) });
    assert.equal(tooMany.statusCode, 422);
  });
});

describe("revocation and logout", () => {
  test("POST /auth/revoke with a refresh token ends its session and answers 200 with an empty JSON object", async (t) => {
    const { login, refresh, app } = await setup(t);
    const tokens = await login();
    const response = await app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ token: tokens.refresh_token, token_type_hint: "refresh_token" }).toString(),
    });
    assert.equal(response.statusCode, 200);
    // RFC 7009 defines no body; clients that parse one as JSON get {} (issue 12).
    assert.equal(response.body, "{}");
    assert.match(response.headers["content-type"] as string, /^application\/json/);
    assertInvalidGrant(await refresh(tokens.refresh_token));
  });

  test("POST /auth/revoke with an access token ends the session it was issued in", async (t) => {
    const { login, refresh, app } = await setup(t);
    const tokens = await login();
    const response = await app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `token=${tokens.access_token}`,
    });
    assert.equal(response.statusCode, 200);
    assertInvalidGrant(await refresh(tokens.refresh_token));
  });

  test("POST /auth/revoke answers 200 for unknown and malformed tokens, and 422 without a token", async (t) => {
    const { app } = await setup(t);
    const revoke = (payload: string) =>
      app.inject({
        method: "POST",
        url: "/auth/revoke",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload,
      });
    for (const token of ["unknown", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
      assert.equal((await revoke(`token=${token}`)).statusCode, 200, token);
    const missing = await revoke("token_type_hint=refresh_token");
    assert.equal(missing.statusCode, 422);
  });

  test("GET /me/sessions lists the caller's sessions with created, last used, address, agent and which one is current", async (t) => {
    const { login, app } = await setup(t);
    await login("phone");
    const laptop = await login("laptop");
    const response = await app.inject({ method: "GET", url: "/me/sessions", headers: bearer(laptop.access_token) });
    assert.equal(response.statusCode, 200);
    const { items } = response.json() as {
      items: {
        user_agent: string;
        current: boolean;
        client_address: string;
        created_at: string;
        last_used_at: string;
      }[];
    };
    assert.deepEqual(
      items.map((item) => [item.user_agent, item.current]),
      [
        ["laptop", true],
        ["phone", false],
      ],
    );
    assert.equal(items[0]?.client_address, "127.0.0.1");
    assert.ok(items[0]?.created_at && items[0]?.last_used_at);
  });

  test("DELETE /me/sessions/{id} logs out one session (204) and leaves the others; someone else's id is 404", async (t) => {
    const { login, refresh, app, store } = await setup(t);
    const phone = await login("phone");
    const laptop = await login("laptop");
    const list = (
      await app.inject({ method: "GET", url: "/me/sessions", headers: bearer(laptop.access_token) })
    ).json();
    const phoneId = list.items.find((item: { user_agent: string }) => item.user_agent === "phone").id;
    const response = await app.inject({
      method: "DELETE",
      url: `/me/sessions/${phoneId}`,
      headers: bearer(laptop.access_token),
    });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, "");
    assertInvalidGrant(await refresh(phone.refresh_token));
    assert.equal((await refresh(laptop.refresh_token)).statusCode, 200, "the other session lives on");

    await createUser(store, "eve@example.com", PASSWORD);
    const eve = (await requestToken(app, { username: "eve@example.com", password: PASSWORD })).json() as Tokens;
    const stealing = await app.inject({
      method: "DELETE",
      url: `/me/sessions/${phoneId}`,
      headers: bearer(eve.access_token),
    });
    assert.equal(stealing.statusCode, 404);
    const unknown = await app.inject({
      method: "DELETE",
      url: "/me/sessions/01900000-0000-7000-8000-000000000000",
      headers: bearer(eve.access_token),
    });
    assert.equal(unknown.statusCode, 404);
  });
});

describe("credential changes end sessions", () => {
  test("a password change revokes every refresh token and every access token issued before it", async (t) => {
    const { login, refresh, me, app, clock } = await setup(t);
    const phone = await login("phone");
    const laptop = await login("laptop");
    clock.advanceSeconds(1);
    const response = await app.inject({
      method: "PUT",
      url: "/me/password",
      headers: bearer(laptop.access_token),
      payload: { current_password: PASSWORD, new_password: "a brand new passphrase" },
    });
    assert.equal(response.statusCode, 204);
    for (const tokens of [phone, laptop]) {
      assertInvalidGrant(await refresh(tokens.refresh_token));
      const old = await me(tokens.access_token);
      assert.equal(old.statusCode, 401);
      assert.equal(old.json().detail, COULD_NOT_VALIDATE_CREDENTIALS);
    }
    clock.advanceSeconds(1);
    const fresh = (
      await requestToken(app, { username: "ada@example.com", password: "a brand new passphrase" })
    ).json() as Tokens;
    assert.equal((await me(fresh.access_token)).statusCode, 200, "tokens issued after the change work");
  });

  test("within one second: a token issued before the password change is refused, one issued after it works", async (t) => {
    // The clock does not move at all: login, change and the next login share one second (and one millisecond).
    const { login, me, app } = await setup(t);
    const before = await login();
    const changed = await app.inject({
      method: "PUT",
      url: "/me/password",
      headers: bearer(before.access_token),
      payload: { current_password: PASSWORD, new_password: "a brand new passphrase" },
    });
    assert.equal(changed.statusCode, 204);
    const old = await me(before.access_token);
    assert.equal(old.statusCode, 401, "issued before the change, in the same second");
    assert.equal(old.json().detail, COULD_NOT_VALIDATE_CREDENTIALS);
    const after = await requestToken(app, { username: "ada@example.com", password: "a brand new passphrase" });
    assert.equal((await me((after.json() as Tokens).access_token)).statusCode, 200, "issued after, same second");
  });

  test("an admin's deactivation revokes the user's refresh tokens and access tokens; reactivation does not revive them", async (t) => {
    const { login, refresh, me, app, store, ada, clock } = await setup(t);
    const tokens = await login();
    await store.create({
      email: "root@example.com",
      hashedPassword: (await store.findById(ada.id))!.hashedPassword,
      isAdmin: true,
    });
    const root = (await requestToken(app, { username: "root@example.com", password: PASSWORD })).json() as Tokens;
    clock.advanceSeconds(1);
    const patch = (isActive: boolean) =>
      app.inject({
        method: "PATCH",
        url: `/users/${ada.id}`,
        headers: bearer(root.access_token),
        payload: { is_active: isActive },
      });
    assert.equal((await patch(false)).statusCode, 200);
    assert.equal((await patch(true)).statusCode, 200);
    assert.equal((await me(tokens.access_token)).statusCode, 401);
    assertInvalidGrant(await refresh(tokens.refresh_token));
  });

  test("expired sessions and refresh tokens are purged from storage", async (t) => {
    const { login, store, clock, ada } = await setup(t);
    await login();
    await login();
    clock.advanceSeconds(ABSOLUTE + 1);
    const purged = await store.purgeExpired(new Date(clock.now).toISOString(), 1000);
    assert.equal(purged, 2, "two sessions, each with its one stored refresh token");
    assert.deepEqual(await store.listSessions(ada.id, new Date(0).toISOString(), { limit: 10 }), []);
  });
});
