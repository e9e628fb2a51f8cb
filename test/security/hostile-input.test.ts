// Attack: malformed and hostile bodies. Whatever arrives, the answer is a 4xx
// in the error shape, never a 5xx, and nothing already stored changes.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { MALFORMED_URL, PATH_SEGMENT_TOO_LONG } from "../../src/platform/error-handler.ts";
import { buildTestApp, createUser, loginToken } from "../helpers.ts";

const PASSWORD = "correct horse battery";

async function victim(t: TestContext) {
  const testApp = await buildTestApp(t);
  const ada = await createUser(testApp.store, "ada@example.com", PASSWORD);
  return { ...testApp, ada };
}

function assertClientError(response: { statusCode: number; body: string }, allowed: number[], name: string): void {
  assert.ok(allowed.includes(response.statusCode), `${name}: ${response.statusCode} ${response.body}`);
  // Every route, the token endpoint included, answers the spec's error shape: `detail` alone.
  const body = JSON.parse(response.body);
  assert.equal(typeof body.detail, "string", name);
  assert.deepEqual(Object.keys(body), ["detail"], name);
}

describe("hostile bodies", () => {
  const tokenBodies: [string, string, string | Buffer, number[]][] = [
    ["JSON to the form endpoint", "application/json", '{"username":"ada@example.com","password":"x"}', [415]],
    ["XML", "application/xml", "<a/>", [415]],
    ["multipart", "multipart/form-data; boundary=x", "--x--", [415]],
    ["no content type", "", "username=a&password=b", [415, 422]],
    [
      "repeated username",
      "application/x-www-form-urlencoded",
      "username=a@example.com&username=ada@example.com&password=x",
      [400],
    ],
    ["array syntax", "application/x-www-form-urlencoded", "username[]=ada@example.com&password=x", [422]],
    ["invalid percent-encoding", "application/x-www-form-urlencoded", "username=%E0%A4%A&password=%ZZ", [401, 422]],
    [
      "invalid UTF-8 bytes",
      "application/x-www-form-urlencoded",
      Buffer.from([
        0x75, 0x73, 0x65, 0x72, 0x6e, 0x61, 0x6d, 0x65, 0x3d, 0xff, 0xfe, 0x26, 0x70, 0x61, 0x73, 0x73, 0x77, 0x6f,
        0x72, 0x64, 0x3d, 0xc3,
      ]),
      [401, 422],
    ],
    ["NUL bytes", "application/x-www-form-urlencoded", "username=ada%00@example.com&password=pass%00word", [401]],
    [
      "an overlong username",
      "application/x-www-form-urlencoded",
      `username=${"a".repeat(400)}@example.com&password=x`,
      [422],
    ],
    [
      "SQL metacharacters",
      "application/x-www-form-urlencoded",
      `username=${encodeURIComponent("' OR '1'='1' --")}&password=${encodeURIComponent("' OR 1=1; DROP TABLE users; --")}`,
      [401],
    ],
    ["a 1 MiB body", "application/x-www-form-urlencoded", `username=a&password=${"x".repeat(1 << 20)}`, [413]],
  ];
  for (const [name, contentType, payload, allowed] of tokenBodies) {
    test(`POST /auth/token answers ${name} with ${allowed.join(" or ")}`, async (t) => {
      const { app, store, ada } = await victim(t);
      const headers: Record<string, string> = contentType ? { "content-type": contentType } : {};
      const response = await app.inject({ method: "POST", url: "/auth/token", headers, payload });
      assertClientError(response, allowed, name);
      assert.equal((await store.findById(ada.id))?.hashedPassword, ada.hashedPassword);
    });
  }

  const signUpBodies: [string, string, number[]][] = [
    ["deeply nested JSON", `${'{"a":'.repeat(2500)}1${"}".repeat(2500)}`, [400, 422]],
    ["a JSON array", "[]", [422]],
    ["JSON null", "null", [422]],
    ["a bare string", '"ada@example.com"', [422]],
    ["truncated JSON", '{"email": "x@example.com", "password": "abcdefghij"', [400]],
    [
      "__proto__ pollution",
      '{"email":"eve@example.com","password":"abcdefghij","__proto__":{"is_admin":true}}',
      [400, 422],
    ],
    [
      "constructor pollution",
      '{"email":"eve@example.com","password":"abcdefghij","constructor":{"prototype":{"is_admin":true}}}',
      [400, 422],
    ],
    ["a NUL byte in full_name", '{"email":"eve@example.com","password":"abcdefghij","full_name":"Eve\\u0000"}', [422]],
    ["a NUL byte in the e-mail", '{"email":"eve\\u0000@example.com","password":"abcdefghij"}', [422]],
    ["SQL in the e-mail", `{"email":"x' OR 1=1--@example.com","password":"abcdefghij"}`, [201, 422]],
    ["an overlong e-mail", JSON.stringify({ email: `${"a".repeat(300)}@example.com`, password: "abcdefghij" }), [422]],
    [
      "a password of 10,000 characters",
      JSON.stringify({ email: "eve@example.com", password: "x".repeat(10_000) }),
      [422],
    ],
    [
      "a taken e-mail in other case",
      JSON.stringify({ email: "ADA@EXAMPLE.COM", password: "attacker-password" }),
      [409],
    ],
    ["duplicate keys", '{"email":"eve@example.com","password":"abcdefghij","password":"0"}', [201, 422]],
  ];
  for (const [name, payload, allowed] of signUpBodies) {
    test(`POST /users answers ${name} with ${allowed.join(" or ")} and corrupts nothing`, async (t) => {
      const { app, store, ada } = await victim(t);
      const response = await app.inject({
        method: "POST",
        url: "/users",
        headers: { "content-type": "application/json" },
        payload,
      });
      if (response.statusCode !== 201) assertClientError(response, allowed, name);
      else assert.ok(allowed.includes(201), name);
      const stored = await store.findById(ada.id);
      assert.equal(stored?.hashedPassword, ada.hashedPassword);
      assert.equal(stored?.isAdmin, false);
      assert.equal(({} as { is_admin?: boolean }).is_admin, undefined, "Object.prototype untouched");
    });
  }

  test("PATCH /me with prototype keys changes nothing it should not", async (t) => {
    const { app, store, ada } = await victim(t);
    const token = await loginToken(app, "ada@example.com", PASSWORD);
    const response = await app.inject({
      method: "PATCH",
      url: "/me",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      payload: '{"__proto__":{"isAdmin":true},"full_name":"x"}',
    });
    assertClientError(response, [400, 422], "prototype keys");
    assert.equal((await store.findById(ada.id))?.isAdmin, false);
  });
});

describe("hostile paths", () => {
  // The router refuses these before any route runs; Fastify's own answer was its error shape with the
  // path echoed back. Now: the service's shape, its common headers, and the path not repeated.
  const paths: [string, string, string, number, string][] = [
    ["a user id of 200 characters", "GET", `/users/${"a".repeat(200)}`, 414, PATH_SEGMENT_TOO_LONG],
    ["a passkey id of 5,000 characters", "DELETE", `/me/passkeys/${"b".repeat(5000)}`, 414, PATH_SEGMENT_TOO_LONG],
    ["a malformed percent escape", "GET", "/users/%zz", 400, MALFORMED_URL],
    ["a malformed escape in a client id", "DELETE", "/clients/%E0%A4%A", 400, MALFORMED_URL],
  ];
  for (const [name, method, url, status, detail] of paths) {
    test(`${name}: ${status} in the error shape, with the common headers`, async (t) => {
      const { app } = await victim(t);
      const response = await app.inject({ method: method as "GET", url });
      assert.equal(response.statusCode, status, response.body);
      assert.deepEqual(response.json(), { detail });
      assert.equal(response.headers["content-type"], "application/json; charset=utf-8");
      assert.equal(response.headers["cache-control"], "no-store");
      assert.equal(response.headers["x-content-type-options"], "nosniff");
      assert.match(String(response.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
    });
  }
});
