// Property-based fuzzing: no input to the token endpoint, sign-up or the
// token check yields a 5xx or takes the process down. FUZZ_RUNS sets the
// number of cases per property (default 100 in CI; try FUZZ_RUNS=5000).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { buildTestApp, createUser } from "../helpers.ts";

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

function assertHandled(response: { statusCode: number; body: string }): void {
  assert.ok(response.statusCode < 500, `${response.statusCode} ${response.body}`);
  if (response.statusCode >= 400) assert.equal(typeof JSON.parse(response.body).detail, "string");
}

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom("", "ada@example.com", "password", "%", "&", "="),
);

describe(`fuzz (${RUNS} cases per property)`, () => {
  test("POST /auth/token never answers 5xx to any form fields", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "ada@example.com", "correct horse battery");
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.oneof(text, fc.constantFrom("username", "password", "grant_type", "scope")), text),
        async (fields) => {
          const response = await app.inject({
            method: "POST",
            url: "/auth/token",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            payload: new URLSearchParams(fields).toString(),
          });
          assertHandled(response);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("POST /auth/token never answers 5xx to raw bytes under any content type", async (t) => {
    const { app } = await buildTestApp(t);
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 512 }),
        fc.constantFrom(
          "application/x-www-form-urlencoded",
          "application/json",
          "text/plain",
          "",
          "application/x-www-form-urlencoded; charset=latin1",
        ),
        async (bytes, contentType) => {
          const headers: Record<string, string> = contentType ? { "content-type": contentType } : {};
          assertHandled(await app.inject({ method: "POST", url: "/auth/token", headers, payload: Buffer.from(bytes) }));
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("POST /users never answers 5xx to any JSON value", async (t) => {
    const { app } = await buildTestApp(t);
    const bodies = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.record({ email: fc.oneof(fc.emailAddress(), text), password: text }, { requiredKeys: [] }),
    );
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        assertHandled(
          await app.inject({
            method: "POST",
            url: "/users",
            headers: { "content-type": "application/json" },
            payload: JSON.stringify(body),
          }),
        );
      }),
      { numRuns: RUNS },
    );
  });

  test("the token check never answers 5xx to any Authorization header", async (t) => {
    const { app } = await buildTestApp(t);
    const header = fc.oneof(
      text.map((value) => `Bearer ${value}`),
      fc
        .tuple(fc.base64String(), fc.base64String(), fc.base64String())
        .map((parts) => `Bearer ${parts.join(".").replaceAll("=", "")}`),
      fc.jsonValue().map((value) => `Bearer ${Buffer.from(JSON.stringify(value)).toString("base64url")}.e30.sig`),
    );
    await fc.assert(
      fc.asyncProperty(header, async (authorization) => {
        const response = await app.inject({
          method: "GET",
          url: "/me",
          headers: { authorization: authorization.replace(/[\r\n\0]/g, "") },
        });
        assertHandled(response);
        assert.equal(response.statusCode, 401);
      }),
      { numRuns: RUNS },
    );
  });
});
