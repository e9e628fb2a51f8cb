// POST /auth/token: the spec's Endpoints section, its Errors table row for the
// token endpoint, and the Authentication and Limits rules on issued tokens.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createVerifier } from "fast-jwt";
import { INCORRECT_EMAIL_OR_PASSWORD } from "../src/errors.ts";
import { buildTestApp, createUser, requestToken, TEST_SECRET } from "./helpers.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

function decodeParts(token: string) {
  const [header, payload] = token
    .split(".")
    .slice(0, 2)
    .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
  return { header, payload };
}

describe("POST /auth/token", () => {
  test("issues 200 with access_token and token_type bearer for a valid e-mail and password", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(app, { username: EMAIL, password: PASSWORD });
    assert.equal(response.statusCode, 200);
    assert.match(response.headers["content-type"] as string, /^application\/json/);
    const body = response.json();
    assert.equal(typeof body.access_token, "string");
    assert.equal(body.token_type, "bearer");
    assert.equal(body.expires_in, 1800);
    assert.deepEqual(Object.keys(body).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
  });

  test("signs the token with HS256 and the configured secret, sub = e-mail, exp = issuance + 30 minutes, iat set", async (t) => {
    const { app, store, clock } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(app, { username: EMAIL, password: PASSWORD });
    const token = response.json().access_token as string;
    const { header, payload } = decodeParts(token);
    assert.equal(header.alg, "HS256");
    assert.equal(header.typ, "at+jwt");
    assert.equal(payload.sub, EMAIL);
    assert.equal(payload.iat, clock.seconds);
    assert.equal(payload.exp, clock.seconds + 30 * 60);
    // An independent verifier with the secret accepts it: the signature is real HS256.
    const verify = createVerifier({ key: TEST_SECRET, algorithms: ["HS256"], clockTimestamp: clock.now });
    assert.equal(verify(token).sub, EMAIL);
    assert.throws(() => createVerifier({ key: `${TEST_SECRET}x`, algorithms: ["HS256"] })(token));
  });

  test("sends Cache-Control: no-store and Pragma: no-cache with a token (RFC 6749 section 5.1)", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(app, { username: EMAIL, password: PASSWORD });
    assert.equal(response.headers["cache-control"], "no-store");
    assert.equal(response.headers.pragma, "no-cache");
  });

  test("answers 401 with the same message and WWW-Authenticate for an unknown e-mail and a wrong password", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const unknown = await requestToken(app, { username: "nobody@example.com", password: PASSWORD });
    const wrong = await requestToken(app, { username: EMAIL, password: "wrong password" });
    for (const response of [unknown, wrong]) {
      assert.equal(response.statusCode, 401);
      assert.deepEqual(response.json(), { detail: INCORRECT_EMAIL_OR_PASSWORD });
      assert.equal(response.headers["www-authenticate"], "Bearer");
    }
    assert.equal(unknown.body, wrong.body);
    assert.equal(unknown.headers["content-length"], wrong.headers["content-length"]);
  });

  test("with OAUTH_ERROR_FIELDS=on, errors also carry RFC 6749's error and error_description; the status is the spec's", async (t) => {
    const { app, store } = await buildTestApp(t, { oauthErrorFields: true });
    await createUser(store, EMAIL, PASSWORD);
    const wrong = await requestToken(app, { username: EMAIL, password: "wrong password" });
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers["www-authenticate"], "Bearer");
    assert.deepEqual(wrong.json(), {
      error: "invalid_grant",
      error_description: INCORRECT_EMAIL_OR_PASSWORD,
      detail: INCORRECT_EMAIL_OR_PASSWORD,
    });
    const unknownGrant = await requestToken(app, { grant_type: "client_credentials" });
    assert.equal(unknownGrant.statusCode, 400);
    assert.equal(unknownGrant.json().error, "unsupported_grant_type");
    const missing = await requestToken(app, { password: PASSWORD });
    assert.deepEqual(missing.json(), {
      error: "invalid_request",
      error_description: "body.username: field required",
      detail: "body.username: field required",
    });
  });

  test("finds the user without regard to letter case or surrounding spaces in username", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(app, { username: "  ADA@Example.COM ", password: PASSWORD });
    assert.equal(response.statusCode, 200);
    assert.equal(decodeParts(response.json().access_token).payload.sub, EMAIL);
  });

  test("does not case-fold or trim the password", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    for (const password of [PASSWORD.toUpperCase(), ` ${PASSWORD}`, PASSWORD.slice(0, -1)]) {
      assert.equal((await requestToken(app, { username: EMAIL, password })).statusCode, 401, password);
    }
  });

  test("accepts the full OAuth 2.0 password form and ignores Swagger UI's Basic header and empty scope", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(
      app,
      {
        grant_type: "password",
        username: EMAIL,
        password: PASSWORD,
        scope: "",
        client_id: "",
        client_secret: "",
        extra: "x",
      },
      { authorization: `Basic ${Buffer.from(":").toString("base64")}` },
    );
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().token_type, "bearer");
  });

  test("accepts a charset parameter on the form content type", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await requestToken(
      app,
      { username: EMAIL, password: PASSWORD },
      {
        "content-type": "application/x-www-form-urlencoded; charset=UTF-8",
      },
    );
    assert.equal(response.statusCode, 200);
  });

  test("refuses a grant_type other than password or refresh_token with 400", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    for (const grant_type of ["client_credentials", "authorization_code", "PASSWORD"]) {
      const response = await requestToken(app, { grant_type, username: EMAIL, password: PASSWORD });
      assert.equal(response.statusCode, 400, grant_type);
      assert.match(response.json().detail, /grant_type/);
    }
  });

  for (const [name, fields] of [
    ["username missing", { password: PASSWORD }],
    ["password missing", { username: EMAIL }],
    ["username empty", { username: "", password: PASSWORD }],
    ["password empty", { username: EMAIL, password: "" }],
    ["both missing", {}],
  ] as const) {
    test(`answers 422 naming the field when ${name}`, async (t) => {
      const { app } = await buildTestApp(t);
      const response = await requestToken(app, fields);
      assert.equal(response.statusCode, 422);
      assert.match(response.json().detail, /^body\.(username|password): field required$/);
    });
  }

  test("answers 400 when a form field is repeated (RFC 6749 section 3.1)", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await app.inject({
      method: "POST",
      url: "/auth/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `username=${EMAIL}&password=wrong&password=${encodeURIComponent(PASSWORD)}`,
    });
    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), { detail: "Form field 'password' is repeated" });
  });

  test("refuses a JSON body with 415: the token endpoint is form-encoded only", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await app.inject({
      method: "POST",
      url: "/auth/token",
      payload: { username: EMAIL, password: PASSWORD },
    });
    assert.equal(response.statusCode, 415);
    assert.equal(typeof response.json().detail, "string");
  });

  test("never reads credentials from the query string", async (t) => {
    const { app, store } = await buildTestApp(t);
    await createUser(store, EMAIL, PASSWORD);
    const response = await app.inject({
      method: "POST",
      url: `/auth/token?username=${EMAIL}&password=${encodeURIComponent(PASSWORD)}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "",
    });
    assert.equal(response.statusCode, 422);
  });

  test("answers 404 to GET: the token endpoint only takes POST, so credentials never ride in a URL", async (t) => {
    const { app } = await buildTestApp(t);
    const response = await app.inject({ method: "GET", url: `/auth/token?username=${EMAIL}&password=x` });
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { detail: "Not Found" });
  });
});
