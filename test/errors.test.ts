// The service's one error shape, {"detail": "..."}, for every failure class:
// unknown routes, wrong media types, oversized and malformed bodies, and
// internal errors, which are logged with a request id but never explained.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { InvalidToken, keyId } from "../src/auth/tokens.ts";
import { HttpError, INTERNAL_ERROR } from "../src/errors.ts";
import type { UserStore } from "../src/store/store.ts";
import { bearer, buildTestApp, mintToken, TEST_SECRET, testConfig } from "./helpers.ts";

describe("error responses", () => {
  test("answers an unknown route with 404 {detail}", async (t) => {
    const { app } = await buildTestApp(t);
    for (const [method, url] of [
      ["GET", "/nope"],
      ["DELETE", "/users"],
      ["PUT", "/auth/token"],
    ] as const) {
      const response = await app.inject({ method, url });
      assert.equal(response.statusCode, 404, `${method} ${url}`);
      assert.deepEqual(response.json(), { detail: "Not Found" });
    }
  });

  test("answers a JSON route sent text/plain with 415 {detail}", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({
      method: "POST",
      url: "/users",
      headers: { "content-type": "text/plain" },
      payload: "hello",
    });
    assert.equal(response.statusCode, 415);
    assert.equal(typeof response.json().detail, "string");
  });

  test("answers a body over the size limit with 413 {detail}", async (t) => {
    const { app } = await buildTestApp(t);
    const json = await app.inject({
      method: "POST",
      url: "/users",
      payload: { email: "a@example.com", password: "x".repeat(20_000) },
    });
    assert.equal(json.statusCode, 413);
    assert.equal(typeof json.json().detail, "string");
    const form = await app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `username=a&password=${"x".repeat(20_000)}`,
    });
    assert.equal(form.statusCode, 413);
  });

  test("answers malformed JSON with 400 {detail} that does not echo the body", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({
      method: "POST",
      url: "/users",
      headers: { "content-type": "application/json" },
      payload: '{"email": "a@example.com", "password": "hunter2hunter2"',
    });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { detail: "The request body is not valid JSON" });
  });

  test("answers a JSON body that is not UTF-8 with the same 400 as malformed JSON (RFC 8259 section 8.1)", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({
      method: "POST",
      url: "/users",
      headers: { "content-type": "application/json" },
      // {"em\xffail": ...}: one byte that no UTF-8 text holds.
      payload: Buffer.concat([
        Buffer.from('{"em'),
        Buffer.from([0xff]),
        Buffer.from('ail": "a@example.com", "password": "correct horse battery"}'),
      ]),
    });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { detail: "The request body is not valid JSON" });
  });

  test("answers each body of the wrong media type with the 415 its OpenAPI example shows, word for word", async (t) => {
    const { app } = await buildTestApp(t);
    const doc = (await app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, { example?: unknown }> }> }>
      >;
    };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const documented = operation.responses["415"]?.content?.["application/json"]?.example;
        if (documented === undefined) continue;
        const form = path === "/auth/token" || path === "/auth/revoke" || path === "/auth/introspect";
        const response = await app.inject({
          method: method.toUpperCase() as "POST",
          url: path.replaceAll(/\{[^}]+\}/g, "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"),
          headers: { "content-type": form ? "application/json" : "text/plain" },
          payload: form ? "{}" : "hello",
        });
        if (response.statusCode !== 415) continue; // the token check answered first
        assert.deepEqual(response.json(), documented, `${method.toUpperCase()} ${path}`);
        checked++;
      }
    }
    assert.ok(checked >= 5, `checked ${checked} routes`);
  });

  test("answers an internal failure with 500 and a generic detail, and logs it with the request id", async (t) => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    // Every verb fails the way a corrupt database would.
    const brokenStore = new Proxy({} as UserStore, {
      get: (_target, verb) =>
        verb === "userChanges"
          ? { usable: () => false, subscribe: () => {} }
          : verb === "close"
            ? async () => {}
            : async () => {
                throw new Error("database file /secret/path is corrupt");
              },
    });
    const app = await buildApp({ config: testConfig({ logLevel: "error" }), store: brokenStore, logStream: stream });
    t.after(() => app.close());
    const now = Math.floor(Date.now() / 1000);
    const response = await app.inject({
      method: "GET",
      url: "/me",
      headers: bearer(mintToken({ sub: "a@example.com", iat: now, exp: now + 60, stamp: "s" })),
    });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { detail: INTERNAL_ERROR });
    assert.doesNotMatch(response.body, /secret|corrupt|stack/);
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === "request failed");
    assert.ok(logged, "the failure is logged");
    assert.equal(typeof logged.reqId, "string");
    assert.match(logged.err.message, /corrupt/);
  });
});

describe("the cost of a refusal", () => {
  test("an expected refusal (4xx, a refused token) captures no stack trace; a 5xx keeps its stack", () => {
    // Capturing a stack was a fifth of a refused introspection's CPU time (issue 24's note).
    const frames = (error: Error) => (error.stack ?? "").split("\n").filter((line) => line.trim().startsWith("at "));
    assert.deepEqual(frames(new HttpError(401, "no")), []);
    assert.deepEqual(frames(new HttpError(422, "no")), []);
    assert.deepEqual(frames(new InvalidToken("expired")), []);
    assert.ok(frames(new HttpError(503, "down")).length > 0);
    // The setting is put back: errors made afterwards have their stacks.
    assert.ok(frames(new Error("later")).length > 0);
  });

  test("after a malformed JSON body and a forged token are refused, errors have their stacks again", async (t) => {
    const { app } = await buildTestApp(t);
    const malformed = await app.inject({
      method: "POST",
      url: "/users",
      headers: { "content-type": "application/json" },
      payload: "{bad",
    });
    assert.equal(malformed.statusCode, 400);
    assert.deepEqual(malformed.json(), { detail: "The request body is not valid JSON" });
    // The deployment's key id, a signature made with another secret: the library's own check refuses it.
    const forged = mintToken(
      { sub: "ada@example.com", iat: 1, exp: 4_102_444_800, stamp: "s" },
      { secret: "another-secret-of-at-least-32-bytes-long!", header: { kid: keyId(TEST_SECRET) } },
    );
    const refused = await app.inject({ method: "GET", url: "/me", headers: bearer(forged) });
    assert.equal(refused.statusCode, 401);
    assert.ok((new Error("later").stack ?? "").includes("\n    at "));
  });
});
