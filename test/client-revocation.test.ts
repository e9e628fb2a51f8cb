// POST /auth/revoke with registered clients (RFC 7009 section 2.1): a client
// that presents itself authenticates (401 invalid_client otherwise) and
// revokes only the tokens issued to it; a token of another client, or of the
// user's own sign-in, is answered 200 and stays valid. Without a registered
// client the answers are those of before (test/sessions.test.ts).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { clientTokens, credentials, EMPTY_SWAGGER_BASIC, type Setup, setUp, stillLive } from "./oidc/client-flow.ts";

function revoke(setup: Setup, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return setup.app.inject({
    method: "POST",
    url: "/auth/revoke",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    payload: new URLSearchParams(fields).toString(),
  });
}

function assertRevokedAnswer(answer: Awaited<ReturnType<typeof revoke>>) {
  assert.equal(answer.statusCode, 200);
  assert.equal(answer.headers["content-type"], "application/json; charset=utf-8");
  assert.deepEqual(answer.json(), {});
}

describe("POST /auth/revoke with a registered client", () => {
  test("each client, by the method it registered, revokes its own refresh token", async (t) => {
    const setup = await setUp(t);
    for (const key of ["partner", "post", "spa"] as const) {
      const tokens = await clientTokens(setup, key);
      const { headers, fields } = credentials(setup, key);
      assertRevokedAnswer(await revoke(setup, { token: tokens.refresh_token, ...fields }, headers));
      assert.equal(await stillLive(setup, key, tokens), false, key);
    }
    assert.equal(await stillLive(setup, "own", setup.own), true, "the user's own sign-in is untouched");
  });

  test("a client revokes its own access token: its session ends", async (t) => {
    const setup = await setUp(t);
    const tokens = await clientTokens(setup, "partner");
    const { headers } = credentials(setup, "partner");
    assertRevokedAnswer(await revoke(setup, { token: tokens.access_token }, headers));
    assert.equal(await stillLive(setup, "partner", tokens), false);
  });

  test("a token of another client, or of the user's own sign-in: answered 200, not revoked", async (t) => {
    const setup = await setUp(t);
    const partner = await clientTokens(setup, "partner");
    const post = await clientTokens(setup, "post");
    const asPartner = credentials(setup, "partner");
    for (const token of [post.refresh_token, post.access_token, setup.own.refresh_token, setup.own.access_token]) {
      assertRevokedAnswer(await revoke(setup, { token }, asPartner.headers));
    }
    assert.equal(await stillLive(setup, "post", post), true);
    assert.equal(await stillLive(setup, "own", setup.own), true);
    assert.equal(await stillLive(setup, "partner", partner), true);
  });

  test("without a registered client, a client's token is not revoked; the user's own is, as before", async (t) => {
    const setup = await setUp(t);
    const partner = await clientTokens(setup, "partner");
    for (const extra of [{}, { client_id: "first-party-app" }] as Record<string, string>[]) {
      assertRevokedAnswer(await revoke(setup, { token: partner.refresh_token, ...extra }));
      assertRevokedAnswer(await revoke(setup, { token: partner.access_token, ...extra }));
    }
    assertRevokedAnswer(await revoke(setup, { token: partner.refresh_token }, { authorization: EMPTY_SWAGGER_BASIC }));
    assert.equal(await stillLive(setup, "partner", partner), true);
    assertRevokedAnswer(await revoke(setup, { token: setup.own.refresh_token, client_id: "first-party-app" }));
    assert.equal(await stillLive(setup, "own", setup.own), false);
  });

  test("a wrong secret or a wrong method: 401 invalid_client, nothing revoked; a malformed Basic header is no client", async (t) => {
    const setup = await setUp(t);
    const partner = await clientTokens(setup, "partner");
    const refused = {
      error: "invalid_client",
      error_description: "Client authentication failed",
      detail: "Client authentication failed",
    };
    const basic = (id: string, secret: string) => ({
      authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`,
    });
    const cases: [Record<string, string>, Record<string, string>, string][] = [
      [{}, basic(setup.clients.partner.id, "wrong"), 'Basic realm="clients"'],
      // The partner registered Basic: its secret in the form is the wrong method.
      [{ client_id: setup.clients.partner.id, client_secret: setup.clients.partner.secret }, {}, "Bearer"],
      // A confidential client cannot present itself by its id alone.
      [{ client_id: setup.clients.partner.id }, {}, "Bearer"],
      [{ client_id: setup.clients.post.id, client_secret: "wrong" }, {}, "Bearer"],
    ];
    for (const [fields, headers, challenge] of cases) {
      const answer = await revoke(setup, { token: partner.refresh_token, ...fields }, headers);
      assert.equal(answer.statusCode, 401, JSON.stringify(fields));
      assert.equal(answer.headers["www-authenticate"], challenge);
      assert.deepEqual(answer.json(), refused);
    }
    // A Basic header that names no client at all is what the token endpoint ignores for first-party apps:
    // the revocation of a request without a client, which may not revoke the partner's token (issue 32).
    const malformed = await revoke(setup, { token: partner.refresh_token }, { authorization: "Basic !!!" });
    assert.equal(malformed.statusCode, 200);
    assert.deepEqual(malformed.json(), {});
    assert.equal(await stillLive(setup, "partner", partner), true);
  });

  test("two client authentication methods at once: 400 invalid_request", async (t) => {
    const setup = await setUp(t);
    const partner = await clientTokens(setup, "partner");
    const answer = await revoke(
      setup,
      { token: partner.refresh_token, client_secret: "x", client_id: setup.clients.partner.id },
      credentials(setup, "partner").headers,
    );
    assert.equal(answer.statusCode, 400);
    assert.deepEqual(answer.json(), {
      error: "invalid_request",
      error_description:
        "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form",
      detail:
        "More than one client authentication method: use either HTTP Basic or client_id and client_secret in the form",
    });
    assert.equal(await stillLive(setup, "partner", partner), true);
  });
});
