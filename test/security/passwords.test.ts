// Attack: offline cracking of stolen hashes, and the migration path from
// weaker hashes. Hashes made with weaker Argon2 parameters or imported from
// bcrypt verify once and are upgraded to the current Argon2id on login.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import bcrypt from "bcryptjs";
import { createPasswordHasher, isSupportedHash, OWASP_ARGON2ID } from "../../src/auth/passwords.ts";
import { buildTestApp, passwords, requestToken } from "../helpers.ts";

const PASSWORD = "correct horse battery";

describe("password hashing", () => {
  test("stores Argon2id with the OWASP parameters by default, and with the configured ones when set", async () => {
    assert.match(await passwords.hash(PASSWORD), /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const stronger = createPasswordHasher({ memoryKib: 47_104, timeCost: 1, parallelism: 1 });
    assert.match(await stronger.hash(PASSWORD), /^\$argon2id\$v=19\$m=47104,t=1,p=1\$/);
  });

  test("upgrades a hash made with weaker parameters on the next successful login", async (t) => {
    const { app, store } = await buildTestApp(t);
    const weak = createPasswordHasher({ memoryKib: 8_192, timeCost: 1, parallelism: 1 });
    const user = await store.create({ email: "ada@example.com", hashedPassword: await weak.hash(PASSWORD) });
    assert.equal(
      (await requestToken(app, { username: "ada@example.com", password: "wrong password" })).statusCode,
      401,
    );
    assert.match((await store.findById(user.id))!.hashedPassword, /m=8192,t=1/, "a failed login changes nothing");
    assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
    const upgraded = (await store.findById(user.id))!.hashedPassword;
    assert.match(upgraded, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.ok(await passwords.verify(upgraded, PASSWORD));
  });

  for (const prefix of ["$2a$", "$2b$", "$2y$"]) {
    test(`verifies an imported bcrypt ${prefix} hash and replaces it with Argon2id on first login`, async (t) => {
      const { app, store } = await buildTestApp(t);
      const bcryptHash = bcrypt.hashSync(PASSWORD, 4).replace(/^\$2[aby]\$/, prefix);
      const user = await store.create({ email: "ada@example.com", hashedPassword: bcryptHash });
      assert.equal(
        (await requestToken(app, { username: "ada@example.com", password: "not it at all" })).statusCode,
        401,
      );
      assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
      assert.match((await store.findById(user.id))!.hashedPassword, /^\$argon2id\$/);
      assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
    });
  }

  test("does not need a rehash for a current hash, and does for anything else", async () => {
    assert.equal(passwords.needsRehash(await passwords.hash(PASSWORD)), false);
    assert.equal(passwords.needsRehash(bcrypt.hashSync(PASSWORD, 4)), true);
    assert.equal(passwords.needsRehash("not a hash"), true);
    assert.deepEqual(OWASP_ARGON2ID, { memoryKib: 19_456, timeCost: 2, parallelism: 1 });
  });

  test("treats a stored value that is not a hash as a failed verify, never a crash", async () => {
    for (const stored of ["", "plaintext", "$argon2id$v=19$m=19456,t=2,p=1$bad$bad", "$2b$04$short"]) {
      assert.equal(await passwords.verify(stored, PASSWORD), false, stored);
    }
    assert.equal(isSupportedHash("$2b$04$short"), false);
    assert.equal(isSupportedHash(bcrypt.hashSync("x", 4)), true);
    assert.equal(isSupportedHash(await passwords.hash("x")), true);
  });
});

describe("a new password outside the lengths", () => {
  test("is refused with a sentence a person reads, the same at sign-up, on a change and on a reset", async (t) => {
    const { app, store } = await buildTestApp(t);
    const token = (
      await (async () => {
        await store.create({ email: "ada@example.com", hashedPassword: await passwords.hash(PASSWORD) });
        return requestToken(app, { username: "ada@example.com", password: PASSWORD });
      })()
    ).json().access_token as string;
    const cases = [
      { method: "POST", url: "/users", field: "password", body: { email: "bob@example.com" }, headers: {} },
      {
        method: "PUT",
        url: "/me/password",
        field: "new_password",
        body: { current_password: PASSWORD },
        headers: { authorization: `Bearer ${token}` },
      },
      {
        method: "POST",
        url: "/auth/password-resets",
        field: "new_password",
        body: { token: "x".repeat(43) },
        headers: {},
      },
    ] as const;
    for (const { method, url, field, body, headers } of cases) {
      for (const [password, detail] of [
        ["short", "This password is too short: use at least 8 characters"],
        ["x".repeat(257), "This password is too long: use at most 256 characters"],
      ]) {
        const response = await app.inject({ method, url, headers, payload: { ...body, [field]: password } });
        assert.equal(response.statusCode, 422, `${method} ${url}`);
        assert.deepEqual(response.json(), { detail }, `${method} ${url}`);
      }
    }
  });
});
