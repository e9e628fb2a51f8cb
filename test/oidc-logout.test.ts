// RP-initiated logout as an attacker would try it (issue 32, defect 12's
// logout points): a client_id other than the id_token_hint's audience is
// refused (the error page, no redirect, the session kept); only an ID token is
// a hint, never a logout token (signed with the same key, naming the same user
// and session) nor an access token; the confirmation form carries forward the
// client a request named only by its hint, so "Sign out" returns to the
// registered address with the state; a registered return address with an
// impossible port (stored by an older release) gets the error page, never a
// 500. SQLite by default, PostgreSQL with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { keySetFromPrivateKeys } from "../src/auth/keys.ts";
import { createIdTokens } from "../src/oidc/id-tokens.ts";
import { bearer, createUser, requestToken } from "./helpers.ts";
import { authorizeCode, PASSWORD, RP, redeemCode, type Setup, setUp } from "./oidc/client-flow.ts";
import { OIDC_KEY } from "./oidc/fixture.ts";

const SIGNED_OUT = `${RP}/signed-out`;

/** The partner app's tokens for Ada (her browser session open, consent given), the ID token's claims. */
async function partnerTokens(setup: Setup) {
  const { code, verifier } = await authorizeCode(setup, "partner");
  const redeemed = await redeemCode(setup, "partner", code, verifier);
  assert.equal(redeemed.statusCode, 200, redeemed.body);
  const tokens = redeemed.json() as { id_token: string; access_token: string; refresh_token: string };
  const claims = JSON.parse(Buffer.from(tokens.id_token.split(".")[1] as string, "base64url").toString()) as {
    iss: string;
    sub: string;
    sid: string;
    aud: string;
  };
  return { ...tokens, claims };
}

function logout(setup: Setup, fields: Record<string, string>, cookie: string | undefined = setup.cookie) {
  return setup.app.inject({
    url: `/oauth/logout?${new URLSearchParams(fields)}`,
    headers: cookie === undefined ? {} : { cookie },
  });
}

function assertErrorPage(answer: LightMyRequestResponse, detail: string) {
  assert.equal(answer.statusCode, 400, answer.body);
  assert.equal(answer.headers.location, undefined);
  assert.equal(answer.headers["set-cookie"], undefined, "the cookie is kept");
  assert.equal(answer.headers["content-type"], "text/html; charset=utf-8");
  assert.match(answer.body, /This sign-in request cannot be used/);
  assert.ok(answer.body.includes(detail.replaceAll("'", "&#39;")), answer.body);
}

/** Whether the browser session still answers: prompt=none gives a code. */
async function browserSessionLive(setup: Setup, cookie: string = setup.cookie): Promise<boolean> {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: setup.clients.spa.id,
    redirect_uri: `${RP}/spa/callback`,
    scope: "openid",
    code_challenge: "a".repeat(43),
    code_challenge_method: "S256",
    prompt: "none",
  });
  const answer = await setup.app.inject({ url: `/oauth/authorize?${query}`, headers: { cookie } });
  return new URL(answer.headers.location as string).searchParams.has("code");
}

/** A second user, Bob, signed in in his own browser: his cookie. */
async function bobsBrowser(setup: Setup): Promise<string> {
  await createUser(setup.store, "bob@example.com", PASSWORD);
  const login = await requestToken(setup.app, { username: "bob@example.com", password: PASSWORD });
  const opened = await setup.app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  return (opened.headers["set-cookie"] as string).split(";")[0] as string;
}

describe("RP-initiated logout", () => {
  test("a client_id other than the ID token's audience is refused: the error page, no redirect, the session kept", async (t) => {
    const setup = await setUp(t);
    const { id_token } = await partnerTokens(setup);
    for (const clientId of [setup.clients.spa.id, setup.clients.post.id, "no-such-client"]) {
      for (const extra of [{ post_logout_redirect_uri: SIGNED_OUT, state: "bye" }, {}] as Record<string, string>[]) {
        const answer = await logout(setup, { id_token_hint: id_token, client_id: clientId, ...extra });
        assertErrorPage(answer, "The sign-out request names another application than its ID token's.");
      }
    }
    assert.equal(await browserSessionLive(setup), true);
    // The hint's own audience, named: the sign-out goes through.
    const own = await logout(setup, {
      id_token_hint: id_token,
      client_id: setup.clients.partner.id,
      post_logout_redirect_uri: SIGNED_OUT,
      state: "bye",
    });
    assert.equal(own.statusCode, 303);
    assert.equal(own.headers.location, `${SIGNED_OUT}?state=bye`);
    assert.equal(own.headers["set-cookie"], "uts_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    assert.equal(await browserSessionLive(setup), false);
  });

  test("only an ID token is a hint: a logout token or an access token is refused", async (t: TestContext) => {
    const setup = await setUp(t);
    const tokens = await partnerTokens(setup);
    // A logout token as the service makes them (same key, same user and session, typ logout+jwt), as a
    // relying party's back-channel receiver gets it.
    const idTokens = createIdTokens(
      keySetFromPrivateKeys("RS256", [OIDC_KEY]),
      () => tokens.claims.iss,
      setup.clock.read,
    );
    const logoutToken = idTokens.logoutToken(setup.clients.partner.id, tokens.claims.sub, tokens.claims.sid);
    for (const hint of [logoutToken, tokens.access_token, setup.own.access_token]) {
      for (const extra of [{ post_logout_redirect_uri: SIGNED_OUT, state: "bye" }, {}] as Record<string, string>[]) {
        const answer = await logout(setup, { id_token_hint: hint, ...extra });
        assertErrorPage(answer, "The sign-out request carries an ID token this service did not issue.");
      }
    }
    assert.equal(await browserSessionLive(setup), true);
    // The ID token itself is a hint: signed out at once, back at the client.
    const answer = await logout(setup, { id_token_hint: tokens.id_token, post_logout_redirect_uri: SIGNED_OUT });
    assert.equal(answer.statusCode, 303);
    assert.equal(answer.headers.location, SIGNED_OUT);
  });

  test("the confirmation form carries the client a request named only by its hint: Sign out returns to the client with the state", async (t) => {
    const setup = await setUp(t);
    const { id_token } = await partnerTokens(setup);
    // Ada's ID token in Bob's browser: not the signed-in user's, so Bob is asked first.
    const bob = await bobsBrowser(setup);
    const page = await logout(
      setup,
      { id_token_hint: id_token, post_logout_redirect_uri: SIGNED_OUT, state: "bye" },
      bob,
    );
    assert.equal(page.statusCode, 200, page.body);
    assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
    assert.match(page.headers["content-security-policy"] as string, /form-action 'self' https:\/\/rp\.example/);
    const fields = Object.fromEntries(
      [...page.body.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)].map((match) => [
        match[1] as string,
        (match[2] as string).replaceAll("&#38;", "&"),
      ]),
    );
    assert.deepEqual(fields, {
      form_token: fields.form_token,
      client_id: setup.clients.partner.id,
      post_logout_redirect_uri: SIGNED_OUT,
      state: "bye",
    });
    assert.equal(await browserSessionLive(setup, bob), true, "nothing ended before the answer");
    const signedOut = await setup.app.inject({
      method: "POST",
      url: "/oauth/logout",
      headers: { cookie: bob, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams(fields).toString(),
    });
    assert.equal(signedOut.statusCode, 303, signedOut.body);
    assert.equal(signedOut.headers.location, `${SIGNED_OUT}?state=bye`);
    assert.equal(signedOut.headers["set-cookie"], "uts_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    assert.equal(await browserSessionLive(setup, bob), false);
    assert.equal(await browserSessionLive(setup), true, "Ada's own session is not Bob's to end");
  });

  test("a registered return address with an impossible port (stored by an older release): the error page, never a 500", async (t) => {
    const setup = await setUp(t);
    const impossible = "http://127.0.0.1:99999/bye";
    await setup.store.updateClient(setup.clients.partner.id, { postLogoutRedirectUris: [impossible] });
    for (const cookie of [setup.cookie, undefined]) {
      const answer = await logout(
        setup,
        { client_id: setup.clients.partner.id, post_logout_redirect_uri: impossible, state: "bye" },
        cookie,
      );
      assertErrorPage(answer, "The application's return address is not a usable address.");
    }
    assert.equal(await browserSessionLive(setup), true);
  });
});
