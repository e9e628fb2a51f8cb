// The OpenAPI document behind /docs: the password-flow scheme pointing at
// /auth/token, the padlock on protected routes only, schemas and examples
// for every route including its error responses, and the first-party note.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildTestApp } from "./helpers.ts";

type Operation = {
  security?: unknown[];
  summary?: string;
  description?: string;
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
  requestBody?: { content: Record<string, unknown> };
};

async function openApi(t: Parameters<typeof buildTestApp>[0]) {
  const { app } = await buildTestApp(t);
  const response = await app.inject({ method: "GET", url: "/openapi.json" });
  assert.equal(response.statusCode, 200);
  return { app, doc: response.json() };
}

describe("OpenAPI document and docs page", () => {
  test("shows the refresh grant and the revoke endpoint", async (t) => {
    const { doc } = await openApi(t);
    const tokenForm = doc.paths["/auth/token"].post.requestBody.content["application/x-www-form-urlencoded"].schema;
    const form = tokenForm.$ref ? doc.components.schemas[tokenForm.$ref.split("/").pop()] : tokenForm;
    assert.ok(form.properties.refresh_token, "the refresh_token field is documented");
    assert.match(form.properties.grant_type.description, /refresh_token/);
    assert.ok(doc.paths["/auth/revoke"].post.requestBody.content["application/x-www-form-urlencoded"]);
  });

  test("marks the token form's requirements as the server enforces them", async (t) => {
    const { app, doc } = await openApi(t);
    const tokenForm = doc.paths["/auth/token"].post.requestBody.content["application/x-www-form-urlencoded"].schema;
    const form = tokenForm.$ref ? doc.components.schemas[tokenForm.$ref.split("/").pop()] : tokenForm;
    // refresh_token when grant_type is refresh_token; username and password when it is password or left out.
    // (The OpenAPI generator writes JSON Schema's const as a one-value enum.)
    assert.deepEqual(form.if, { properties: { grant_type: { enum: ["refresh_token"] } }, required: ["grant_type"] });
    assert.deepEqual(form.else.if, { properties: { grant_type: { enum: ["password"] } } });
    assert.deepEqual(form.then, { required: ["refresh_token"] });
    assert.deepEqual(form.else.then, { required: ["username", "password"] });
    assert.equal(form.required, undefined, "no field is required whatever the grant");
    // ...and the server agrees, field by field.
    const post = (fields: Record<string, string>) =>
      app.inject({
        method: "POST",
        url: "/auth/token",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams(fields).toString(),
      });
    assert.equal((await post({ password: "x" })).json().detail, "body.username: field required");
    assert.equal(
      (await post({ grant_type: "password", username: "a" })).json().detail,
      "body.password: field required",
    );
    assert.equal((await post({ grant_type: "refresh_token" })).json().detail, "body.refresh_token: field required");
    assert.equal((await post({ grant_type: "client_credentials" })).statusCode, 400, "other grants: 400, not 422");
  });

  test("declares an OAuth2 password-flow scheme whose tokenUrl is /auth/token", async (t) => {
    const { doc } = await openApi(t);
    assert.deepEqual(doc.components.securitySchemes.OAuth2PasswordBearer.flows, {
      password: { tokenUrl: "/auth/token", scopes: {} },
    });
  });

  test("puts the padlock on GET /me only, not on sign-up or the token endpoint", async (t) => {
    const { doc } = await openApi(t);
    assert.deepEqual(doc.paths["/me"].get.security, [{ OAuth2PasswordBearer: [] }]);
    assert.deepEqual(doc.paths["/users"].post.security, [], "open, and saying so");
    assert.deepEqual(doc.paths["/auth/token"].post.security, []);
    assert.equal(doc.security, undefined, "no global security requirement");
  });

  test("describes every route with a summary, its request schema, and every response including errors", async (t) => {
    const { doc } = await openApi(t);
    const expected: Record<string, string[]> = {
      "post /auth/token": ["200", "400", "401", "403", "413", "415", "422", "429", "503"],
      "post /auth/password-reset-requests": ["202", "400", "413", "415", "422", "429", "503"],
      "post /auth/password-resets": ["204", "400", "413", "415", "422", "503"],
      "post /auth/email-verification-requests": ["202", "400", "413", "415", "422", "429", "503"],
      "post /auth/email-verifications": ["200", "400", "409", "413", "415", "422", "503"],
      "post /auth/revoke": ["200", "400", "401", "413", "415", "422", "503"],
      "post /auth/introspect": ["200", "400", "401", "403", "413", "415", "422", "503"],
      "get /me": ["200", "401", "503"],
      "get /me/sessions": ["200", "401", "422", "503"],
      "delete /me/sessions/{id}": ["204", "400", "401", "404", "413", "415", "422", "503"],
      "patch /me": ["200", "400", "401", "409", "413", "415", "422", "503"],
      "delete /me": ["204", "400", "401", "409", "413", "415", "503"],
      "put /me/password": ["204", "400", "401", "413", "415", "422", "503"],
      "post /users": ["201", "400", "401", "403", "409", "413", "415", "422", "429", "503"],
      "get /users": ["200", "401", "403", "422", "503"],
      "get /users/{id}": ["200", "401", "403", "404", "422", "503"],
      "put /users/{id}": ["200", "400", "401", "403", "404", "409", "413", "415", "422", "503"],
      "patch /users/{id}": ["200", "400", "401", "403", "404", "409", "413", "415", "422", "503"],
      "delete /users/{id}": ["204", "400", "401", "403", "404", "409", "413", "415", "422", "503"],
      "get /.well-known/jwks.json": ["200", "304"],
      "get /.well-known/oauth-authorization-server": ["200"],
    };
    for (const [key, statuses] of Object.entries(expected)) {
      const [method, path] = key.split(" ") as [string, string];
      const operation = doc.paths[path][method] as Operation;
      assert.ok(operation.summary && operation.description, `${key} has a summary and a description`);
      assert.deepEqual(Object.keys(operation.responses).sort(), statuses, key);
      for (const status of statuses.filter((code) => code !== "204" && code !== "304"))
        assert.ok(operation.responses[status]?.content?.["application/json"], `${key} ${status} has a schema`);
    }
    assert.ok(doc.paths["/auth/token"].post.requestBody.content["application/x-www-form-urlencoded"]);
    assert.ok(doc.paths["/users"].post.requestBody.content["application/json"]);
    assert.doesNotMatch(JSON.stringify(doc), /hashed_password/);
  });

  test("says that the password grant is for first-party clients only", async (t) => {
    const { doc } = await openApi(t);
    assert.match(doc.info.description, /first-party clients only/i);
    assert.match(doc.info.description, /RFC 9700/);
    assert.match(doc.paths["/auth/token"].post.description, /first-party/);
  });

  test("serves Swagger UI at /docs with its assets from the service itself", async (t) => {
    const { app } = await openApi(t);
    const page = await app.inject({ method: "GET", url: "/docs" });
    const html =
      page.statusCode === 302
        ? (await app.inject({ method: "GET", url: page.headers.location as string })).body
        : page.body;
    assert.match(html, /swagger-ui/);
    assert.doesNotMatch(html, /https?:\/\/(?!127\.0\.0\.1|localhost)/, "no external asset URLs");
    const bundle = await app.inject({ method: "GET", url: "/docs/static/swagger-ui-bundle.js" });
    assert.equal(bundle.statusCode, 200);
    assert.match(bundle.headers["content-type"] as string, /javascript/);
  });

  test("does not redirect the token endpoint anywhere at runtime", async (t) => {
    const { app } = await openApi(t);
    const response = await app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "username=a&password=b",
    });
    assert.equal(response.statusCode, 401);
    assert.equal(response.headers.location, undefined);
  });
});
