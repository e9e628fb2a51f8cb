// The authorization code flow with PKCE driven by Python's authlib (Debian's
// python3-authlib, /usr/bin/python3) against the service on a real port:
// test/oauth-clients/authlib_oidc.py prints what it saw, checked here whole.
// The user's browser session is opened by the test (password grant, then the
// sign-in page's endpoint) and handed to the script as its cookie.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { createUser, requestToken } from "./helpers.ts";
import { startOidcService } from "./oidc/fixture.ts";

const PYTHON = "/usr/bin/python3";
const authlibMissing = spawnSync(PYTHON, ["-c", "import authlib, requests"]).status !== 0;
const SKIP = `authlib or requests is missing for ${PYTHON}: apt-get install -y python3-authlib python3-requests`;
if (authlibMissing && process.env.CI === "true") throw new Error(`${SKIP}; CI requires it`);

describe("authlib (Python) as a relying party", { skip: authlibMissing ? SKIP : false }, () => {
  test("code with PKCE, the ID token verified with the JWK Set, userinfo, a replayed code refused", async (t) => {
    const rp = "http://127.0.0.1:9";
    const service = await startOidcService(t, rp);
    const user = await createUser(service.store, "ada@example.com", "correct horse battery");
    await service.store.grantConsent(
      user.id,
      service.clients.partner.id,
      "openid profile email",
      new Date().toISOString(),
    );
    const login = await requestToken(service.app, { username: "ada@example.com", password: "correct horse battery" });
    const opened = await service.app.inject({
      method: "POST",
      url: "/oauth/browser-session",
      headers: { authorization: `Bearer ${login.json().access_token}` },
    });
    const [name, value] = ((opened.headers["set-cookie"] as string).split(";")[0] as string).split("=") as [
      string,
      string,
    ];
    // Asynchronously: the service answers from this very process.
    const run = await promisify(execFile)(
      PYTHON,
      [
        "test/oauth-clients/authlib_oidc.py",
        service.issuer,
        service.clients.partner.id,
        service.clients.partner.secret,
        `${rp}/callback`,
        name,
        value,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    assert.deepEqual(JSON.parse(run.stdout as string), {
      authorize_status: 303,
      token_type: "bearer",
      scope: "openid profile email",
      id_token: {
        sub: user.id,
        aud: service.clients.partner.id,
        nonce: JSON.parse(run.stdout as string).id_token.nonce,
        email: "ada@example.com",
        amr: ["pwd"],
      },
      userinfo: {
        sub: user.id,
        email: "ada@example.com",
        email_verified: false,
        updated_at: JSON.parse(run.stdout as string).userinfo.updated_at,
      },
      replayed_code: { raised: "OAuthError", error: "invalid_grant" },
    });
  });
});
