// POST /users: open sign-up, validation (422), duplicates (409), and the
// stored record (normalised e-mail, Argon2id hash, never returned).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EMAIL_TAKEN } from "../src/errors.ts";
import { buildTestApp, createUser, requestToken } from "./helpers.ts";

const PASSWORD = "correct horse battery";

function signUp(app: Awaited<ReturnType<typeof buildTestApp>>["app"], body: unknown) {
  return app.inject({ method: "POST", url: "/users", payload: body as object });
}

describe("POST /users", () => {
  test("creates a user: 201 with id and email, never the password or hash", async (t) => {
    const { app, store } = await buildTestApp(t);
    const response = await signUp(app, { email: "ada@example.com", password: PASSWORD });
    assert.equal(response.statusCode, 201);
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), [
      "created_at",
      "email",
      "email_verified",
      "email_verified_at",
      "full_name",
      "id",
      "is_active",
      "is_admin",
      "updated_at",
    ]);
    assert.equal(body.is_admin, false);
    assert.equal(body.is_active, true);
    assert.equal(body.full_name, null);
    assert.equal(body.email, "ada@example.com");
    assert.doesNotMatch(response.body, /argon2|password/i);
    const stored = await store.findByEmail("ada@example.com");
    assert.equal(stored?.id, body.id);
    assert.match(stored?.hashedPassword ?? "", /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });

  test("stores the e-mail trimmed and lower-cased, and the user can then log in with any case", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await signUp(app, { email: "  Ada.Lovelace@Example.COM ", password: PASSWORD });
    assert.equal(response.statusCode, 201);
    assert.equal(response.json().email, "ada.lovelace@example.com");
    assert.equal(
      (await requestToken(app, { username: "ADA.LOVELACE@example.com", password: PASSWORD })).statusCode,
      200,
    );
  });

  test("answers 409 for an e-mail that is taken, whatever its case", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "ada@example.com", PASSWORD);
    for (const email of ["ada@example.com", "ADA@EXAMPLE.COM", " ada@example.com"]) {
      const response = await signUp(app, { email, password: "another password" });
      assert.equal(response.statusCode, 409, email);
      assert.deepEqual(response.json(), { detail: EMAIL_TAKEN });
    }
  });

  test("keeps the first user's password when a duplicate sign-up is refused", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "ada@example.com", PASSWORD);
    await signUp(app, { email: "ada@example.com", password: "attacker password" });
    assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
    assert.equal(
      (await requestToken(app, { username: "ada@example.com", password: "attacker password" })).statusCode,
      401,
    );
  });

  test("gives exactly one 201 when 20 sign-ups of one e-mail race, the rest 409", async (t) => {
    const { app } = await buildTestApp(t);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        signUp(app, { email: i % 2 ? "race@example.com" : "RACE@example.com", password: PASSWORD }),
      ),
    );
    const statuses = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(statuses, [201, ...Array(19).fill(409)]);
  });

  const invalid: [string, unknown, RegExp][] = [
    ["an invalid e-mail", { email: "not-an-email", password: PASSWORD }, /^body\.email: must match format "email"$/],
    [
      "an e-mail over 254 characters",
      { email: `${"a".repeat(250)}@example.com`, password: PASSWORD },
      /^body\.email: /,
    ],
    [
      "a password shorter than 8",
      { email: "ada@example.com", password: "1234567" },
      /^This password is too short: use at least 8 characters$/,
    ],
    [
      "a password longer than 256",
      { email: "ada@example.com", password: "x".repeat(257) },
      /^This password is too long: use at most 256 characters$/,
    ],
    ["a missing password", { email: "ada@example.com" }, /^body\.password: field required$/],
    ["a missing e-mail", { password: PASSWORD }, /^body\.email: field required$/],
    ["a non-string password", { email: "ada@example.com", password: 12345678 }, /^body\.password: must be string$/],
    [
      "an unknown field",
      { email: "ada@example.com", password: PASSWORD, role: "admin" },
      /^body\.role: unknown field$/,
    ],
    ["a body that is not an object", ["ada@example.com", PASSWORD], /^body: must be object$/],
  ];
  for (const [name, body, detail] of invalid) {
    test(`answers 422 with a detail naming the field for ${name}`, async (t) => {
      const { app, store } = await buildTestApp(t);
      const response = await signUp(app, body);
      assert.equal(response.statusCode, 422);
      assert.match(response.json().detail, detail);
      assert.equal(await store.findByEmail("ada@example.com"), undefined);
    });
  }

  test("accepts a password of exactly 8 and of exactly 256 characters, unicode counted as characters", async (t) => {
    const { app } = await buildTestApp(t);
    assert.equal((await signUp(app, { email: "a@example.com", password: "q8v!k2#z" })).statusCode, 201);
    assert.equal((await signUp(app, { email: "b@example.com", password: "é".repeat(256) })).statusCode, 201);
    assert.equal((await signUp(app, { email: "c@example.com", password: "🔑".repeat(8) })).statusCode, 201);
  });

  test("refuses a form-encoded body with 415: sign-up takes JSON", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({
      method: "POST",
      url: "/users",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `email=ada@example.com&password=${PASSWORD}`,
    });
    assert.equal(response.statusCode, 415);
    assert.equal(typeof response.json().detail, "string");
  });
});
