// Attack surface of HTTP itself: MIME sniffing, caching of tokens and user
// records by shared caches, cross-origin reads, oversized headers, and the
// docs page's Content-Security-Policy.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildTestApp, createUser, loginToken } from "../helpers.ts";
import { scratchDir, startService } from "../process.ts";

const PASSWORD = "correct horse battery";

describe("HTTP hardening", () => {
  test("sends X-Content-Type-Options: nosniff on every response, errors and docs included", async (t) => {
    const { app } = await buildTestApp(t);
    for (const url of ["/me", "/nope", "/openapi.json", "/docs/static/swagger-ui.css"]) {
      const response = await app.inject({ method: "GET", url });
      assert.equal(response.headers["x-content-type-options"], "nosniff", url);
    }
  });

  test("sends Cache-Control: no-store on every API response that can carry a token or a user", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, "ada@example.com", PASSWORD);
    const token = await loginToken(app, "ada@example.com", PASSWORD);
    const responses = [
      await app.inject({ method: "POST", url: "/users", payload: { email: "bob@example.com", password: PASSWORD } }),
      await app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${token}` } }),
      await app.inject({
        method: "PATCH",
        url: "/me",
        headers: { authorization: `Bearer ${token}` },
        payload: { full_name: "A" },
      }),
      await app.inject({ method: "GET", url: "/me" }),
    ];
    for (const response of responses) assert.equal(response.headers["cache-control"], "no-store", response.body);
  });

  test("sends no CORS headers unless origins are configured", async (t) => {
    const { app } = await buildTestApp(t);
    const preflight = await app.inject({
      method: "OPTIONS",
      url: "/me",
      headers: { origin: "https://evil.example", "access-control-request-method": "GET" },
    });
    assert.equal(preflight.headers["access-control-allow-origin"], undefined);
    const simple = await app.inject({
      method: "GET",
      url: "/openapi.json",
      headers: { origin: "https://evil.example" },
    });
    assert.equal(simple.headers["access-control-allow-origin"], undefined);
  });

  test("allows exactly the configured origins, without credentials", async (t) => {
    const { app } = await buildTestApp(t, { corsOrigins: ["https://app.example.com"] });
    const allowed = await app.inject({
      method: "OPTIONS",
      url: "/me",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    assert.equal(allowed.statusCode, 204);
    assert.equal(allowed.headers["access-control-allow-origin"], "https://app.example.com");
    assert.equal(allowed.headers["access-control-allow-credentials"], undefined);
    const other = await app.inject({
      method: "GET",
      url: "/openapi.json",
      headers: { origin: "https://evil.example" },
    });
    assert.equal(other.headers["access-control-allow-origin"], undefined);
  });

  test("lets an allowed browser origin use every method the API uses and read the headers it needs", async (t) => {
    const { app } = await buildTestApp(t, { corsOrigins: ["https://app.example.com"] });
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
      const preflight = await app.inject({
        method: "OPTIONS",
        url: "/me",
        headers: {
          origin: "https://app.example.com",
          "access-control-request-method": method,
          "access-control-request-headers": "authorization,content-type",
        },
      });
      assert.equal(preflight.statusCode, 204, method);
      assert.equal(preflight.headers["access-control-allow-origin"], "https://app.example.com");
      const methods = String(preflight.headers["access-control-allow-methods"]).split(/, */);
      assert.ok(methods.includes(method), `${method} is allowed: ${methods}`);
      const headers = String(preflight.headers["access-control-allow-headers"]).toLowerCase().split(/, */);
      assert.ok(headers.includes("authorization") && headers.includes("content-type"), String(headers));
    }
    const actual = await app.inject({ method: "GET", url: "/me", headers: { origin: "https://app.example.com" } });
    assert.equal(actual.statusCode, 401);
    const exposed = String(actual.headers["access-control-expose-headers"]).toLowerCase().split(/, */);
    for (const name of ["x-request-id", "www-authenticate", "retry-after"]) assert.ok(exposed.includes(name), name);
  });

  test("gives the docs page a Content-Security-Policy that allows only its own scripts and styles", async (t) => {
    const { app } = await buildTestApp(t);
    const page = await app.inject({ method: "GET", url: "/docs/static/index.html" });
    const csp = String(page.headers["content-security-policy"] ?? "");
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'( 'sha256-[^']+')*;/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /object-src 'none'/);
    assert.doesNotMatch(csp, /https?:|\*|validator/, "no scheme wildcards and no third-party origins");
  });

  test("answers request headers over Node's limit with 431 and keeps serving", async (t) => {
    const service = await startService(scratchDir(t), { SIGNING_SECRET: "x".repeat(32) });
    t.after(() => service.stop());
    const huge = await fetch(`${service.baseUrl}/me`, { headers: { "x-padding": "a".repeat(20_000) } });
    assert.equal(huge.status, 431);
    assert.equal((await fetch(`${service.baseUrl}/openapi.json`)).status, 200);
  });
});
