// The users resource and self-service routes: one test per cell of the
// README's route table (who may call it, success status, error statuses),
// the spec's PUT/PATCH/DELETE conventions, roles (403 vs 401), inactive
// users, e-mail changes and the last-admin rule.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { Config } from "../src/config.ts";
import {
  COULD_NOT_VALIDATE_CREDENTIALS,
  EMAIL_TAKEN,
  INCORRECT_CURRENT_PASSWORD,
  INCORRECT_EMAIL_OR_PASSWORD,
  LAST_ACTIVE_ADMIN,
  NOT_AUTHENTICATED,
  NOT_ENOUGH_PRIVILEGES,
  SIGNUP_CLOSED,
  USER_NOT_FOUND,
} from "../src/errors.ts";
import { ensureFirstAdmin } from "../src/users/first-admin.ts";
import {
  buildTestApp,
  caller,
  createUser,
  loginToken,
  passwords,
  requestToken,
  signedInUser,
  type TestApp,
} from "./helpers.ts";

type InjectResponse = Awaited<ReturnType<typeof requestToken>>;

const PASSWORD = "correct horse battery";
const MISSING_ID = "01900000-0000-7000-8000-000000000000";

interface World extends TestApp {
  admin: { id: string; token: string };
  ada: { id: string; token: string };
  bob: { id: string; token: string };
  call: (method: string, url: string, token?: string, payload?: object) => Promise<InjectResponse>;
}

/** An admin and two plain users, each with a token. */
async function world(t: TestContext, config: Partial<Config> = {}): Promise<World> {
  const testApp = await buildTestApp(t, config);
  const { app, store } = testApp;
  const admin = await signedInUser(app, store, "admin@example.com", PASSWORD, true);
  const ada = await signedInUser(app, store, "ada@example.com", PASSWORD);
  const bob = await signedInUser(app, store, "bob@example.com", PASSWORD);
  return { ...testApp, admin, ada, bob, call: caller(app) };
}

function expectError(response: InjectResponse, status: number, detail?: string | RegExp): void {
  assert.equal(response.statusCode, status, response.body);
  // Every route, the token endpoint included, answers the spec's error shape: `detail` alone.
  const body = response.json();
  assert.deepEqual(Object.keys(body), ["detail"]);
  if (typeof detail === "string") assert.equal(body.detail, detail);
  else if (detail) assert.match(body.detail, detail);
  if (status === 401) assert.equal(response.headers["www-authenticate"], "Bearer");
}

describe("GET /users (admins)", () => {
  test("lists users to an admin: 200, oldest first, never a hash", async (t) => {
    const w = await world(t);
    const response = await w.call("GET", "/users", w.admin.token);
    assert.equal(response.statusCode, 200);
    const page = response.json();
    assert.deepEqual(
      page.items.map((user: { email: string }) => user.email),
      ["admin@example.com", "ada@example.com", "bob@example.com"],
    );
    assert.equal(page.next_cursor, null);
    assert.equal(page.next, null);
    assert.doesNotMatch(response.body, /argon2|hashed/);
  });

  test("pages with limit and a cursor, and says how to get the next page until the last", async (t) => {
    const w = await world(t);
    for (let i = 0; i < 4; i++) await createUser(w.store, `user${i}@example.com`, PASSWORD);
    const seen: string[] = [];
    let url: string | null = "/users?limit=2";
    let pages = 0;
    while (url) {
      const response = await w.call("GET", url, w.admin.token);
      assert.equal(response.statusCode, 200);
      const page = response.json();
      assert.ok(page.items.length <= 2);
      seen.push(...page.items.map((user: { id: string }) => user.id));
      if (page.next) assert.equal(page.next, `/users?limit=2&cursor=${page.next_cursor}`);
      url = page.next;
      pages += 1;
    }
    assert.equal(pages, 4);
    assert.equal(seen.length, 7);
    assert.equal(new Set(seen).size, 7, "no user twice");
    assert.deepEqual(seen, [...seen].sort(), "stable id order");
  });

  test("defaults to 20 per page and refuses a limit over 100 or under 1 with 422", async (t) => {
    const w = await world(t);
    for (let i = 0; i < 20; i++) await w.store.create({ email: `bulk${i}@example.com`, hashedPassword: "x" });
    const page = (await w.call("GET", "/users", w.admin.token)).json();
    assert.equal(page.items.length, 20);
    assert.match(page.next, /^\/users\?limit=20&cursor=/);
    expectError(await w.call("GET", "/users?limit=101", w.admin.token), 422, /^querystring\.limit: must be <= 100$/);
    expectError(await w.call("GET", "/users?limit=0", w.admin.token), 422, /querystring\.limit/);
    expectError(await w.call("GET", "/users?limit=ten", w.admin.token), 422, /querystring\.limit/);
    expectError(await w.call("GET", "/users?cursor=nope", w.admin.token), 422, /querystring\.cursor/);
    expectError(await w.call("GET", "/users?sort=email", w.admin.token), 422, /querystring\.sort: unknown field/);
  });

  test("filters by e-mail (any case), is_active and is_admin as query parameters, kept in the next link", async (t) => {
    const w = await world(t);
    await w.store.update(w.bob.id, { isActive: false });
    const byEmail = (await w.call("GET", "/users?email=ADA@Example.com", w.admin.token)).json();
    assert.deepEqual(
      byEmail.items.map((u: { id: string }) => u.id),
      [w.ada.id],
    );
    const inactive = (await w.call("GET", "/users?is_active=false", w.admin.token)).json();
    assert.deepEqual(
      inactive.items.map((u: { id: string }) => u.id),
      [w.bob.id],
    );
    const admins = (await w.call("GET", "/users?is_admin=true", w.admin.token)).json();
    assert.deepEqual(
      admins.items.map((u: { id: string }) => u.id),
      [w.admin.id],
    );
    const activePage = (await w.call("GET", "/users?is_active=true&limit=1", w.admin.token)).json();
    assert.match(activePage.next, /is_active=true/);
  });

  test("answers a non-admin with 403 and an anonymous caller with 401", async (t) => {
    const w = await world(t);
    expectError(await w.call("GET", "/users", w.ada.token), 403, NOT_ENOUGH_PRIVILEGES);
    expectError(await w.call("GET", "/users"), 401, NOT_AUTHENTICATED);
  });
});

describe("GET /users/{id} (admins, or the user itself)", () => {
  test("returns 200 to an admin for anyone and to a user for itself", async (t) => {
    const w = await world(t);
    assert.equal((await w.call("GET", `/users/${w.ada.id}`, w.admin.token)).json().email, "ada@example.com");
    assert.equal((await w.call("GET", `/users/${w.ada.id}`, w.ada.token)).json().id, w.ada.id);
  });

  test("answers 403 to a user asking for another id, whether or not it exists", async (t) => {
    const w = await world(t);
    expectError(await w.call("GET", `/users/${w.bob.id}`, w.ada.token), 403, NOT_ENOUGH_PRIVILEGES);
    expectError(await w.call("GET", `/users/${MISSING_ID}`, w.ada.token), 403, NOT_ENOUGH_PRIVILEGES);
  });

  test("answers 404 for no such user, 422 for an id that does not parse, 401 without a token", async (t) => {
    const w = await world(t);
    expectError(await w.call("GET", `/users/${MISSING_ID}`, w.admin.token), 404, USER_NOT_FOUND);
    for (const id of ["42", "not-a-uuid", "%00", "'%20OR%201=1--"]) {
      expectError(await w.call("GET", `/users/${id}`, w.admin.token), 422, /^params\.id: must match format "uuid"$/);
    }
    expectError(await w.call("GET", `/users/${w.ada.id}`), 401);
  });
});

describe("POST /users (open sign-up, admins always)", () => {
  test("lets an admin create an admin and set is_active: 201", async (t) => {
    const w = await world(t);
    const response = await w.call("POST", "/users", w.admin.token, {
      email: "root2@example.com",
      password: PASSWORD,
      full_name: "Second Admin",
      is_admin: true,
      is_active: false,
    });
    assert.equal(response.statusCode, 201);
    const body = response.json();
    assert.equal(body.is_admin, true);
    assert.equal(body.is_active, false);
    assert.equal(body.full_name, "Second Admin");
  });

  test("answers 403 when a non-admin or anonymous caller tries to set is_admin or is_active", async (t) => {
    const w = await world(t);
    const body = { email: "eve@example.com", password: PASSWORD, is_admin: true };
    expectError(await w.call("POST", "/users", undefined, body), 403, /Only admins/);
    expectError(await w.call("POST", "/users", w.ada.token, body), 403, /Only admins/);
    expectError(await w.call("POST", "/users", undefined, { ...body, is_admin: undefined, is_active: true }), 403);
    assert.equal(await w.store.findByEmail("eve@example.com"), undefined);
  });

  test("answers 401 when a token is sent but fails the check", async (t) => {
    const w = await world(t);
    expectError(await w.call("POST", "/users", "bad.token.here", { email: "x@example.com", password: PASSWORD }), 401);
  });

  test("with sign-up closed: 403 to anonymous callers and non-admins, 201 for admins", async (t) => {
    const w = await world(t, { signupOpen: false });
    const body = { email: "new@example.com", password: PASSWORD };
    expectError(await w.call("POST", "/users", undefined, body), 403, SIGNUP_CLOSED);
    expectError(await w.call("POST", "/users", w.ada.token, body), 403, SIGNUP_CLOSED);
    assert.equal((await w.call("POST", "/users", w.admin.token, body)).statusCode, 201);
  });
});

describe("PUT /users/{id} (admins)", () => {
  test("replaces the whole record: an omitted nullable field becomes null, omitted flags take their defaults", async (t) => {
    const w = await world(t);
    await w.store.update(w.ada.id, { fullName: "Ada Lovelace", isAdmin: true });
    const response = await w.call("PUT", `/users/${w.ada.id}`, w.admin.token, { email: "ada@example.com" });
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.full_name, null);
    assert.equal(body.is_admin, false);
    assert.equal(body.is_active, true);
    assert.equal((await w.store.findById(w.ada.id))?.fullName, null);
  });

  test("answers 403 to a non-admin (even for itself), 401 anonymous, 404 unknown id, 422 bad id or body", async (t) => {
    const w = await world(t);
    const body = { email: "ada@example.com", full_name: "x" };
    expectError(await w.call("PUT", `/users/${w.ada.id}`, w.ada.token, body), 403, NOT_ENOUGH_PRIVILEGES);
    expectError(await w.call("PUT", `/users/${w.ada.id}`, undefined, body), 401);
    expectError(await w.call("PUT", `/users/${MISSING_ID}`, w.admin.token, body), 404, USER_NOT_FOUND);
    expectError(await w.call("PUT", "/users/123", w.admin.token, body), 422, /params\.id/);
    expectError(
      await w.call("PUT", `/users/${w.ada.id}`, w.admin.token, { full_name: "x" }),
      422,
      /^body\.email: field required$/,
    );
    expectError(
      await w.call("PUT", `/users/${w.ada.id}`, w.admin.token, { ...body, password: "x" }),
      422,
      /unknown field/,
    );
  });

  test("answers 409 when the new e-mail is taken, and 409 when it would demote the last active admin", async (t) => {
    const w = await world(t);
    expectError(
      await w.call("PUT", `/users/${w.ada.id}`, w.admin.token, { email: "BOB@example.com" }),
      409,
      EMAIL_TAKEN,
    );
    expectError(
      await w.call("PUT", `/users/${w.admin.id}`, w.admin.token, { email: "admin@example.com" }),
      409,
      LAST_ACTIVE_ADMIN,
    );
    assert.equal((await w.store.findById(w.admin.id))?.isAdmin, true);
  });
});

describe("PATCH /users/{id} (admins, or the user itself for its own fields)", () => {
  test("changes only the fields sent and leaves the others alone", async (t) => {
    const w = await world(t);
    await w.store.update(w.ada.id, { fullName: "Ada Lovelace" });
    const response = await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_admin: true });
    assert.equal(response.statusCode, 200);
    const body = response.json();
    assert.equal(body.full_name, "Ada Lovelace", "an omitted nullable field stays");
    assert.equal(body.is_admin, true);
    assert.equal(body.email, "ada@example.com");
    const cleared = (await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { full_name: null })).json();
    assert.equal(cleared.full_name, null, "an explicit null clears");
  });

  test("lets a user patch its own full_name and email, but not is_admin or is_active (403)", async (t) => {
    const w = await world(t);
    assert.equal((await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { full_name: "Ada" })).statusCode, 200);
    expectError(await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { is_admin: true }), 403, /Only admins/);
    expectError(await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { is_active: true }), 403, /Only admins/);
    assert.equal((await w.store.findById(w.ada.id))?.isAdmin, false);
  });

  test("answers 403 for another user's id, 401 anonymous, 404 unknown, 409 taken e-mail, 422 bad body", async (t) => {
    const w = await world(t);
    expectError(await w.call("PATCH", `/users/${w.bob.id}`, w.ada.token, { full_name: "x" }), 403);
    expectError(await w.call("PATCH", `/users/${w.bob.id}`, undefined, { full_name: "x" }), 401);
    expectError(await w.call("PATCH", `/users/${MISSING_ID}`, w.admin.token, { full_name: "x" }), 404);
    expectError(
      await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { email: "bob@example.com" }),
      409,
      EMAIL_TAKEN,
    );
    expectError(await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { email: "nope" }), 422, /body\.email/);
    expectError(await w.call("PATCH", `/users/${w.ada.id}`, w.ada.token, { full_name: 7 }), 422, /body\.full_name/);
  });

  test("refuses to demote or deactivate the last active admin (409), and allows it once another admin exists", async (t) => {
    const w = await world(t);
    expectError(
      await w.call("PATCH", `/users/${w.admin.id}`, w.admin.token, { is_admin: false }),
      409,
      LAST_ACTIVE_ADMIN,
    );
    expectError(
      await w.call("PATCH", `/users/${w.admin.id}`, w.admin.token, { is_active: false }),
      409,
      LAST_ACTIVE_ADMIN,
    );
    await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_admin: true });
    assert.equal((await w.call("PATCH", `/users/${w.admin.id}`, w.admin.token, { is_admin: false })).statusCode, 200);
  });

  test("keeps one active admin when two admins demote each other at once", async (t) => {
    const w = await world(t);
    await w.store.update(w.ada.id, { isAdmin: true });
    const responses = await Promise.all([
      w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_admin: false }),
      w.call("PATCH", `/users/${w.admin.id}`, w.ada.token, { is_admin: false }),
    ]);
    // The loser is refused either by the store (409) or, if the winner's change landed
    // before its own token check, because it is no longer an admin (403).
    assert.equal(responses.filter((response) => response.statusCode === 200).length, 1);
    assert.ok(responses.every((response) => [200, 403, 409].includes(response.statusCode)));
    assert.equal(await w.store.countActiveAdmins(), 1);

    // The store itself: two concurrent demotions of the last two admins, one wins.
    await w.store.update(w.ada.id, { isAdmin: true });
    await w.store.update(w.admin.id, { isAdmin: true });
    const outcomes = await Promise.allSettled([
      w.store.update(w.ada.id, { isAdmin: false }),
      w.store.update(w.admin.id, { isAdmin: false }),
    ]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status).sort(), ["fulfilled", "rejected"]);
    assert.equal(await w.store.countActiveAdmins(), 1);
  });
});

describe("DELETE /users/{id} (admins, or the user itself)", () => {
  test("answers 204 with an empty body, and the user is gone with its tokens", async (t) => {
    const w = await world(t);
    const response = await w.call("DELETE", `/users/${w.ada.id}`, w.admin.token);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, "");
    assert.equal(response.headers["content-length"], undefined);
    assert.equal(await w.store.findById(w.ada.id), undefined);
    expectError(await w.call("GET", "/me", w.ada.token), 401, COULD_NOT_VALIDATE_CREDENTIALS);
  });

  test("lets a user delete itself (204) but not another user (403)", async (t) => {
    const w = await world(t);
    expectError(await w.call("DELETE", `/users/${w.bob.id}`, w.ada.token), 403);
    assert.equal((await w.call("DELETE", `/users/${w.ada.id}`, w.ada.token)).statusCode, 204);
  });

  test("answers 401 anonymous, 404 unknown, 422 bad id, 409 for the last active admin", async (t) => {
    const w = await world(t);
    expectError(await w.call("DELETE", `/users/${w.ada.id}`), 401);
    expectError(await w.call("DELETE", `/users/${MISSING_ID}`, w.admin.token), 404);
    expectError(await w.call("DELETE", "/users/xyz", w.admin.token), 422);
    expectError(await w.call("DELETE", `/users/${w.admin.id}`, w.admin.token), 409, LAST_ACTIVE_ADMIN);
  });
});

describe("self-service: PATCH /me, DELETE /me, PUT /me/password", () => {
  test("PATCH /me changes only the fields sent: 200", async (t) => {
    const w = await world(t);
    const response = await w.call("PATCH", "/me", w.ada.token, { full_name: "Ada Lovelace" });
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().full_name, "Ada Lovelace");
    assert.equal(response.json().email, "ada@example.com");
  });

  test("PATCH /me refuses role fields as unknown (422): nobody raises their own privileges", async (t) => {
    const w = await world(t);
    expectError(await w.call("PATCH", "/me", w.ada.token, { is_admin: true }), 422, /^body\.is_admin: unknown field$/);
    assert.equal((await w.store.findById(w.ada.id))?.isAdmin, false);
  });

  test("PATCH /me answers 409 for a taken e-mail and 401 without a token", async (t) => {
    const w = await world(t);
    expectError(await w.call("PATCH", "/me", w.ada.token, { email: "Bob@example.com" }), 409, EMAIL_TAKEN);
    expectError(await w.call("PATCH", "/me", undefined, { full_name: "x" }), 401);
  });

  test("changing the e-mail ends the tokens issued for the old one; the new e-mail logs in", async (t) => {
    const w = await world(t);
    assert.equal((await w.call("PATCH", "/me", w.ada.token, { email: "lovelace@example.com" })).statusCode, 200);
    expectError(await w.call("GET", "/me", w.ada.token), 401, COULD_NOT_VALIDATE_CREDENTIALS);
    const token = await loginToken(w.app, "lovelace@example.com", PASSWORD);
    assert.equal((await w.call("GET", "/me", token)).json().id, w.ada.id);
  });

  test("an old token does not open a new account that later takes the same e-mail", async (t) => {
    const w = await world(t);
    await w.call("PATCH", "/me", w.ada.token, { email: "lovelace@example.com" });
    w.clock.advanceSeconds(1);
    await createUser(w.store, "ada@example.com", "someone else's password");
    expectError(await w.call("GET", "/me", w.ada.token), 401, COULD_NOT_VALIDATE_CREDENTIALS);
  });

  test("DELETE /me answers 204 with no body and ends the account; the last active admin gets 409", async (t) => {
    const w = await world(t);
    const response = await w.call("DELETE", "/me", w.ada.token);
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, "");
    expectError(await w.call("GET", "/me", w.ada.token), 401);
    expectError(
      await requestToken(w.app, { username: "ada@example.com", password: PASSWORD }),
      401,
      INCORRECT_EMAIL_OR_PASSWORD,
    );
    expectError(await w.call("DELETE", "/me", w.admin.token), 409, LAST_ACTIVE_ADMIN);
    expectError(await w.call("DELETE", "/me"), 401);
  });

  test("PUT /me/password takes the current and new password in the body: 204, then only the new one works", async (t) => {
    const w = await world(t);
    const response = await w.call("PUT", "/me/password", w.ada.token, {
      current_password: PASSWORD,
      new_password: "a brand new passphrase",
    });
    assert.equal(response.statusCode, 204);
    assert.equal(response.body, "");
    expectError(await requestToken(w.app, { username: "ada@example.com", password: PASSWORD }), 401);
    assert.equal(
      (await requestToken(w.app, { username: "ada@example.com", password: "a brand new passphrase" })).statusCode,
      200,
    );
  });

  test("PUT /me/password answers 400 for a wrong current password, 422 for a short new one, 401 without a token", async (t) => {
    const w = await world(t);
    expectError(
      await w.call("PUT", "/me/password", w.ada.token, {
        current_password: "wrong password",
        new_password: "a brand new passphrase",
      }),
      400,
      INCORRECT_CURRENT_PASSWORD,
    );
    expectError(
      await w.call("PUT", "/me/password", w.ada.token, { current_password: PASSWORD, new_password: "short" }),
      422,
      "This password is too short: use at least 8 characters",
    );
    expectError(
      await w.call("PUT", "/me/password", undefined, {
        current_password: PASSWORD,
        new_password: "a brand new passphrase",
      }),
      401,
    );
    const stored = await w.store.findById(w.ada.id);
    assert.ok(stored && (await passwords.verify(stored.hashedPassword, PASSWORD)), "the password is unchanged");
  });
});

describe("inactive users", () => {
  test("cannot log in: the same 401 as a wrong password, even with the right one", async (t) => {
    const w = await world(t);
    await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_active: false });
    const inactive = await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
    const unknown = await requestToken(w.app, { username: "nobody@example.com", password: PASSWORD });
    expectError(inactive, 401, INCORRECT_EMAIL_OR_PASSWORD);
    assert.equal(inactive.body, unknown.body);
  });

  test("lose their tokens at once, with the spec's message", async (t) => {
    const w = await world(t);
    assert.equal((await w.call("GET", "/me", w.ada.token)).statusCode, 200);
    await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_active: false });
    expectError(await w.call("GET", "/me", w.ada.token), 401, COULD_NOT_VALIDATE_CREDENTIALS);
    await w.call("PATCH", `/users/${w.ada.id}`, w.admin.token, { is_active: true });
    expectError(await w.call("GET", "/me", w.ada.token), 401, COULD_NOT_VALIDATE_CREDENTIALS);
    const again = await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
    assert.equal(again.statusCode, 200, "reactivation lets the user log in again; the old token stays ended");
    assert.equal((await w.call("GET", "/me", again.json().access_token)).statusCode, 200);
  });
});

describe("first admin from FIRST_ADMIN_EMAIL / FIRST_ADMIN_PASSWORD", () => {
  test("is created when no active admin exists, and left alone once one does", async (t) => {
    const { app, store } = await buildTestApp(t);
    assert.equal(
      await ensureFirstAdmin(store, passwords, { email: "Root@Example.com", password: PASSWORD }),
      "created",
    );
    const root = await store.findByEmail("root@example.com");
    assert.equal(root?.isAdmin, true);
    assert.equal(
      await ensureFirstAdmin(store, passwords, { email: "other@example.com", password: PASSWORD }),
      "exists",
    );
    assert.equal(await store.findByEmail("other@example.com"), undefined);
    assert.equal((await requestToken(app, { username: "root@example.com", password: PASSWORD })).statusCode, 200);
  });

  test("promotes an existing account with that e-mail and replaces its password with the configured one", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "root@example.com", "squatter's password");
    assert.equal(
      await ensureFirstAdmin(store, passwords, { email: "root@example.com", password: PASSWORD }),
      "promoted",
    );
    assert.equal((await store.findByEmail("root@example.com"))?.isAdmin, true);
    expectError(await requestToken(app, { username: "root@example.com", password: "squatter's password" }), 401);
  });
});
