// Two widely used OAuth client libraries drive the real service over HTTP:
// oauth4webapi (npm) and Python's authlib (Debian's python3-authlib, run with
// /usr/bin/python3). Each does the password grant, calls /me, refreshes with
// rotation, sees a replayed refresh token refused, revokes, and gets its own
// error (not a "token") for a wrong password, with OAUTH_ERROR_FIELDS=on as
// the README asks of their users. oauth4webapi also reads the
// RFC 8414 metadata and checks its issuer. Without authlib the Python half is
// skipped with a message, except under CI=true, where that is a failure.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, type TestContext, test } from "node:test";
import * as oauth from "oauth4webapi";
import { buildApp } from "../src/app.ts";
import { createUser, openTestStore, testConfig } from "./helpers.ts";
import { run } from "./process.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";
const PYTHON = "/usr/bin/python3";
const AUTHLIB_SCRIPT = resolve(import.meta.dirname, "oauth-clients/authlib_client.py");
const authlibMissing = spawnSync(PYTHON, ["-c", "import authlib, requests"]).status !== 0;
const SKIP_MESSAGE = `authlib or requests is missing for ${PYTHON}: apt-get install -y python3-authlib python3-requests`;
if (authlibMissing && process.env.CI === "true") throw new Error(`${SKIP_MESSAGE}; CI requires them`);

/** The service listening on a free port, on its own store (SQLite, or PostgreSQL in the second run). */
async function listeningService(t: TestContext): Promise<string> {
  const store = await openTestStore(t);
  await createUser(store, EMAIL, PASSWORD);
  // No issuer setting: the issuer is the listen address, as a fresh install's would be. RFC 6749's
  // error fields on, as the README tells users of OAuth client libraries to set them.
  const config = testConfig({ tokenIssuer: undefined, tokenAudience: undefined, oauthErrorFields: true });
  const app = await buildApp({ config, store });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return app.listen({ host: "127.0.0.1", port: 0 });
}

describe("OAuth client libraries against the service", () => {
  test("oauth4webapi: discovery, password grant, refresh with rotation, revoke, and errors as its own", async (t) => {
    const baseUrl = await listeningService(t);
    const insecure = { [oauth.allowInsecureRequests]: true }; // plain http on loopback, in this test only
    const issuer = new URL(baseUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
    );
    assert.equal(as.issuer, baseUrl);
    const client: oauth.Client = { client_id: "first-party-app" };
    const none = oauth.None();
    const grant = (type: string, parameters: Record<string, string>) =>
      oauth.genericTokenEndpointRequest(as, client, none, type, parameters, insecure);

    const tokens = await oauth.processGenericTokenEndpointResponse(
      as,
      client,
      await grant("password", { username: EMAIL, password: PASSWORD }),
    );
    assert.equal(tokens.token_type, "bearer");
    assert.equal(tokens.expires_in, 1800);
    const me = await oauth.protectedResourceRequest(
      tokens.access_token,
      "GET",
      new URL(`${baseUrl}/me`),
      undefined,
      undefined,
      insecure,
    );
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { email: string }).email, EMAIL);

    const refreshToken = tokens.refresh_token as string;
    const renewed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, none, refreshToken, insecure),
    );
    assert.notEqual(renewed.refresh_token, refreshToken, "rotated");
    await expectOAuthError(
      async () =>
        oauth.processRefreshTokenResponse(
          as,
          client,
          await oauth.refreshTokenGrantRequest(as, client, none, refreshToken, insecure),
        ),
      "invalid_grant",
      "a spent refresh token raises the library's error",
    );

    const revoked = await oauth.revocationRequest(as, client, none, renewed.refresh_token as string, insecure);
    assert.equal(await oauth.processRevocationResponse(revoked), undefined);
    await expectOAuthError(
      async () =>
        oauth.processRefreshTokenResponse(
          as,
          client,
          await oauth.refreshTokenGrantRequest(as, client, none, renewed.refresh_token as string, insecure),
        ),
      "invalid_grant",
      "a revoked refresh token raises the library's error",
    );

    await expectOAuthError(
      async () =>
        oauth.processGenericTokenEndpointResponse(
          as,
          client,
          await grant("password", { username: EMAIL, password: "not the password" }),
        ),
      "invalid_grant",
      "a wrong password raises the library's error instead of yielding a token",
    );
    await expectOAuthError(
      async () => oauth.processGenericTokenEndpointResponse(as, client, await grant("client_credentials", {})),
      "unsupported_grant_type",
      "an unsupported grant type",
    );
  });

  test("Python authlib: password grant, refresh with rotation, revoke, and OAuthError for a wrong password", {
    skip: authlibMissing ? SKIP_MESSAGE : false,
  }, async (t) => {
    const baseUrl = await listeningService(t);
    // Asynchronously: the service runs in this process and must keep answering meanwhile.
    const { code, stdout, stderr } = await run([AUTHLIB_SCRIPT, baseUrl, EMAIL, PASSWORD], {
      cwd: import.meta.dirname,
      command: PYTHON,
    });
    assert.equal(code, 0, stderr);
    const seen = JSON.parse(stdout);
    assert.deepEqual(seen, {
      token_type: "bearer",
      expires_in: 1800,
      me_status: 200,
      me_email: EMAIL,
      rotated: true,
      me_after_refresh: 200,
      replayed_refresh: { raised: "OAuthError", error: "invalid_grant" },
      revoke_status: 200,
      revoke_body: {},
      refresh_after_revoke: { raised: "OAuthError", error: "invalid_grant" },
      wrong_password: { raised: "OAuthError", error: "invalid_grant" },
      token_after_wrong_password: null,
    });
  });
});

/**
 * The call must fail with oauth4webapi's own error carrying the OAuth code: a ResponseBodyError, or,
 * for the spec's 401 with `WWW-Authenticate: Bearer`, the challenge error, whose response still
 * carries the error body.
 */
async function expectOAuthError(call: () => Promise<unknown>, code: string, message: string): Promise<void> {
  const error = await call().then(
    (result) => assert.fail(`${message}: resolved with ${JSON.stringify(result)}`),
    (thrown: unknown) => thrown,
  );
  if (error instanceof oauth.ResponseBodyError) {
    assert.equal(error.error, code, message);
  } else if (error instanceof oauth.WWWAuthenticateChallengeError) {
    assert.equal(error.status, 401, message);
    assert.equal(((await error.response.json()) as { error?: string }).error, code, message);
  } else {
    assert.fail(`${message}: ${String(error)}`);
  }
}
