// Passkeys on the server side, driven by a software authenticator
// (test/soft-authenticator.ts) through @simplewebauthn/server: registration
// (several per user, named, renamed, removed, never another user's), the
// ceremonies' refusals (wrong origin, wrong RP id, replayed or expired
// challenge, a sign counter that goes backwards, no user verification for a
// passkey alone), signing in with a passkey alone, a passkey as the second
// factor after the password grant's mfa_required, an admin's reset, and malformed input answered 4xx, never
// 500. Runs on SQLite and, with TEST_BACKEND=postgres, on PostgreSQL.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../src/app.ts";
import {
  PASSKEY_NOT_VERIFIED,
  relyingPartyFor,
  WEBAUTHN_CHALLENGE_SPENT,
  WEBAUTHN_CHALLENGE_TTL_SECONDS,
  WEBAUTHN_GRANT,
} from "../src/auth/passkeys.ts";
import { INVALID_MFA_TOKEN } from "../src/auth/second-factors.ts";
import { MFA_RECOVERY_CODE_GRANT, MFA_WEBAUTHN_GRANT } from "../src/core/schemas.ts";
import type { UserStore } from "../src/store/store.ts";
import {
  bearer,
  buildTestApp,
  createUser,
  loginToken,
  requestToken,
  TEST_MFA_KEY,
  TEST_SECRET,
  type TestClock,
  testConfig,
} from "./helpers.ts";
import { SoftAuthenticator } from "./soft-authenticator.ts";
import { codeAt } from "./totp.ts";

const PUBLIC_URL = "https://id.test.example";
const ORIGIN = PUBLIC_URL;
const PASSWORD = "correct horse battery";

interface Fixture {
  app: FastifyInstance;
  store: UserStore;
  clock: TestClock;
}

function setUp(t: TestContext, config: Parameters<typeof buildTestApp>[1] = {}): Promise<Fixture> {
  return buildTestApp(t, { publicUrl: PUBLIC_URL, ...config });
}

/** The claims of an access token (read, not verified: the service verified it when it issued it). */
function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString());
}

/** The password grant for an account with a passkey: 403 mfa_required; answers its mfa_token. */
async function mfaTokenFor(app: FastifyInstance, email: string): Promise<string> {
  const response = await requestToken(app, { username: email, password: PASSWORD });
  assert.equal(response.statusCode, 403, response.body);
  assert.equal(response.json().error, "mfa_required");
  return response.json().mfa_token as string;
}

/** A user and an access token from the password grant (taken before any passkey exists). */
async function signedUp(app: FastifyInstance, store: UserStore, email: string) {
  const user = await createUser(store, email, PASSWORD);
  return { user, token: await loginToken(app, email, PASSWORD) };
}

async function registrationOptions(app: FastifyInstance, token: string) {
  const response = await app.inject({
    method: "POST",
    url: "/me/passkeys/registration-options",
    headers: bearer(token),
  });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { challenge_id: string; options: Record<string, unknown> };
}

function addPasskey(app: FastifyInstance, token: string, body: object) {
  return app.inject({ method: "POST", url: "/me/passkeys", headers: bearer(token), payload: body });
}

/** Registers the authenticator on the account; answers the new passkey's id. */
async function register(app: FastifyInstance, token: string, authenticator: SoftAuthenticator, name = "Laptop") {
  const { challenge_id, options } = await registrationOptions(app, token);
  const response = await addPasskey(app, token, { challenge_id, name, response: authenticator.register(options) });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id as string;
}

async function authenticationOptions(app: FastifyInstance, body: object = {}) {
  const response = await app.inject({ method: "POST", url: "/auth/webauthn/authentication-options", payload: body });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { challenge_id: string; options: Record<string, unknown> };
}

function passkeyGrant(app: FastifyInstance, challengeId: string, assertion: unknown) {
  return requestToken(app, {
    grant_type: WEBAUTHN_GRANT,
    challenge_id: challengeId,
    webauthn_response: typeof assertion === "string" ? assertion : JSON.stringify(assertion),
  });
}

describe("passkeys", () => {
  test("registers several passkeys, lists, renames and removes them; another user sees and touches none", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const bob = await signedUp(app, store, "bob@example.com");

    const laptop = await register(app, ada.token, new SoftAuthenticator(ORIGIN), "Laptop");
    const phone = await register(app, ada.token, new SoftAuthenticator(ORIGIN), "Phone");
    const list = await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(ada.token) });
    assert.equal(list.statusCode, 200);
    assert.deepEqual(
      list.json().map((p: { id: string; name: string; last_used_at: null }) => [p.id, p.name, p.last_used_at]),
      [
        [laptop, "Laptop", null],
        [phone, "Phone", null],
      ],
    );
    assert.deepEqual(Object.keys(list.json()[0]).sort(), ["backed_up", "created_at", "id", "last_used_at", "name"]);
    assert.equal(await store.countPasskeys(ada.user.id), 2);

    const renamed = await app.inject({
      method: "PATCH",
      url: `/me/passkeys/${phone}`,
      headers: bearer(ada.token),
      payload: { name: "Work phone" },
    });
    assert.equal(renamed.statusCode, 200);
    assert.equal(renamed.json().name, "Work phone");

    // Bob sees none of Ada's, and renaming or removing one answers like a missing one.
    const bobs = await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(bob.token) });
    assert.deepEqual(bobs.json(), []);
    for (const [method, payload] of [
      ["PATCH", { name: "mine now" }],
      ["DELETE", undefined],
    ] as const) {
      const response = await app.inject({ method, url: `/me/passkeys/${laptop}`, headers: bearer(bob.token), payload });
      assert.equal(response.statusCode, 404, `${method} ${response.body}`);
      assert.deepEqual(response.json(), { detail: "Passkey not found" });
    }

    const removed = await app.inject({ method: "DELETE", url: `/me/passkeys/${laptop}`, headers: bearer(ada.token) });
    assert.equal(removed.statusCode, 204);
    assert.equal(removed.body, "");
    const again = await app.inject({ method: "DELETE", url: `/me/passkeys/${laptop}`, headers: bearer(ada.token) });
    assert.equal(again.statusCode, 404);
    const left = await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(ada.token) });
    assert.deepEqual(
      left.json().map((p: { name: string }) => p.name),
      ["Work phone"],
    );

    const events = await store.listEvents({ userId: ada.user.id, limit: 50, type: "passkey" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["added", "added", "renamed", "removed"],
    );
    // Unauthenticated calls are the spec's 401.
    const anonymous = await app.inject({ method: "GET", url: "/me/passkeys" });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.headers["www-authenticate"], "Bearer");
  });

  test("registration options name this relying party, the user by id, and exclude the passkeys it has", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const authenticator = new SoftAuthenticator(ORIGIN);
    await register(app, ada.token, authenticator);
    const { options } = await registrationOptions(app, ada.token);
    assert.deepEqual(options.rp, { name: "User service", id: "id.test.example" });
    const user = options.user as { id: string; name: string };
    assert.equal(Buffer.from(user.id, "base64url").toString(), ada.user.id);
    assert.equal(user.name, "ada@example.com");
    assert.deepEqual(
      (options.excludeCredentials as { id: string }[]).map((c) => c.id),
      [authenticator.id],
    );
    assert.equal(options.attestation, "none");

    // The same authenticator again (it ignored the exclusion) is refused, not stored twice.
    const second = await registrationOptions(app, ada.token);
    const response = await addPasskey(app, ada.token, {
      challenge_id: second.challenge_id,
      name: "Again",
      response: authenticator.register(second.options),
    });
    assert.equal(response.statusCode, 409);
    assert.deepEqual(response.json(), { detail: "This passkey is registered already" });
    assert.equal(await store.countPasskeys(ada.user.id), 1);
  });

  test("registration refuses another origin, another RP id, another challenge, and a spent or expired one", async (t) => {
    const { app, store, clock } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const bob = await signedUp(app, store, "bob@example.com");
    const cases: [string, (options: Record<string, unknown>) => Record<string, unknown>][] = [
      ["wrong origin", (o) => new SoftAuthenticator("https://evil.example").register(o)],
      ["origin of another port", (o) => new SoftAuthenticator(`${ORIGIN}:8443`).register(o)],
      ["wrong RP id", (o) => new SoftAuthenticator(ORIGIN).register(o, { rpId: "evil.example" })],
      ["parent-domain RP id", (o) => new SoftAuthenticator(ORIGIN).register(o, { rpId: "test.example" })],
      ["another challenge", (o) => new SoftAuthenticator(ORIGIN).register(o, { challenge: "AAAAAAAAAAAAAAAAAAAAAA" })],
    ];
    for (const [what, answer] of cases) {
      const { challenge_id, options } = await registrationOptions(app, ada.token);
      const response = await addPasskey(app, ada.token, { challenge_id, name: "x", response: answer(options) });
      assert.equal(response.statusCode, 400, `${what}: ${response.body}`);
      assert.deepEqual(response.json(), { detail: PASSKEY_NOT_VERIFIED }, what);
    }

    // A challenge works once, whatever happened the first time.
    const { challenge_id, options } = await registrationOptions(app, ada.token);
    const answer = new SoftAuthenticator(ORIGIN).register(options);
    assert.equal((await addPasskey(app, ada.token, { challenge_id, name: "a", response: answer })).statusCode, 201);
    const replay = await addPasskey(app, ada.token, { challenge_id, name: "b", response: answer });
    assert.equal(replay.statusCode, 400);
    assert.deepEqual(replay.json(), { detail: WEBAUTHN_CHALLENGE_SPENT });

    // Another user's challenge is not mine to finish.
    const bobs = await registrationOptions(app, bob.token);
    const stolen = await addPasskey(app, ada.token, {
      challenge_id: bobs.challenge_id,
      name: "x",
      response: new SoftAuthenticator(ORIGIN).register(bobs.options),
    });
    assert.equal(stolen.statusCode, 400);

    // Expired: five minutes and it is gone.
    const late = await registrationOptions(app, ada.token);
    clock.advanceSeconds(WEBAUTHN_CHALLENGE_TTL_SECONDS + 1);
    const expired = await addPasskey(app, ada.token, {
      challenge_id: late.challenge_id,
      name: "x",
      response: new SoftAuthenticator(ORIGIN).register(late.options),
    });
    assert.equal(expired.statusCode, 400);
    assert.deepEqual(expired.json(), { detail: WEBAUTHN_CHALLENGE_SPENT });
    assert.equal(await store.countPasskeys(ada.user.id), 1);
    assert.equal(await store.countPasskeys(bob.user.id), 0);
  });

  test("signs in with a passkey alone: tokens, last use, audit; the assertion works once", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const authenticator = new SoftAuthenticator(ORIGIN);
    const id = await register(app, ada.token, authenticator);

    const { challenge_id, options } = await authenticationOptions(app);
    assert.equal(options.rpId, "id.test.example");
    assert.equal(options.userVerification, "required");
    assert.deepEqual(options.allowCredentials ?? [], [], "discoverable: no account named");
    const assertion = authenticator.assert(options);
    const response = await passkeyGrant(app, challenge_id, assertion);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers["cache-control"], "no-store");
    const body = response.json();
    assert.deepEqual(Object.keys(body).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
    const me = await app.inject({ method: "GET", url: "/me", headers: bearer(body.access_token) });
    assert.equal(me.json().email, "ada@example.com");
    assert.deepEqual(claims(body.access_token).amr, ["hwk", "user"]);
    // Refresh works for the session the passkey started, and keeps how it began.
    const refreshed = await requestToken(app, { grant_type: "refresh_token", refresh_token: body.refresh_token });
    assert.equal(refreshed.statusCode, 200);
    assert.deepEqual(claims(refreshed.json().access_token).amr, ["hwk", "user"]);

    const [passkey] = (await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(ada.token) })).json();
    assert.equal(passkey.id, id);
    assert.notEqual(passkey.last_used_at, null);
    const events = await store.listEvents({ userId: ada.user.id, limit: 50 });
    assert.ok(events.some((e) => e.type === "passkey" && e.outcome === "used"));
    assert.ok(events.some((e) => e.type === "login" && e.outcome === "success"));

    // The same assertion again: its challenge is spent.
    const replay = await passkeyGrant(app, challenge_id, assertion);
    assert.equal(replay.statusCode, 401);
    assert.deepEqual(replay.json(), { detail: WEBAUTHN_CHALLENGE_SPENT });
    assert.equal(replay.headers["www-authenticate"], "Bearer");
    // ...and on a fresh challenge it signed the old one, so it does not verify either.
    const fresh = await authenticationOptions(app);
    const replayed = await passkeyGrant(app, fresh.challenge_id, assertion);
    assert.equal(replayed.statusCode, 401);
    assert.deepEqual(replayed.json(), { detail: PASSKEY_NOT_VERIFIED });
  });

  test("a passkey alone must carry user verification, come from this origin and RP id, and count forward", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const authenticator = new SoftAuthenticator(ORIGIN, { counter: 10 });
    await register(app, ada.token, authenticator);
    const refusals: [string, Parameters<SoftAuthenticator["assert"]>[1]][] = [
      ["no user verification", { userVerified: false }],
      ["wrong origin", { origin: "https://evil.example" }],
      ["wrong RP id", { rpId: "evil.example" }],
      ["counter backwards", { counter: 3 }],
    ];
    // First a good sign-in, so the stored counter is 10.
    const first = await authenticationOptions(app);
    assert.equal((await passkeyGrant(app, first.challenge_id, authenticator.assert(first.options))).statusCode, 200);
    for (const [what, lies] of refusals) {
      const { challenge_id, options } = await authenticationOptions(app);
      const response = await passkeyGrant(app, challenge_id, authenticator.assert(options, lies));
      assert.equal(response.statusCode, 401, `${what}: ${response.body}`);
      assert.deepEqual(response.json(), { detail: PASSKEY_NOT_VERIFIED }, what);
    }
    // The same counter again is a clone too; the next one up is fine.
    const same = await authenticationOptions(app);
    const equal = await passkeyGrant(app, same.challenge_id, authenticator.assert(same.options, { counter: 10 }));
    assert.equal(equal.statusCode, 401);
    const next = await authenticationOptions(app);
    assert.equal((await passkeyGrant(app, next.challenge_id, authenticator.assert(next.options))).statusCode, 200);
    const failures = (await store.listEvents({ userId: ada.user.id, limit: 50, type: "passkey" })).filter(
      (e) => e.outcome === "failed",
    );
    assert.equal(failures.length, 5);
  });

  test("an authenticator without a counter (always 0) keeps working; an unknown passkey is refused", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const authenticator = new SoftAuthenticator(ORIGIN, { counter: 0 });
    await register(app, ada.token, authenticator);
    for (let i = 0; i < 2; i++) {
      const { challenge_id, options } = await authenticationOptions(app);
      const response = await passkeyGrant(app, challenge_id, authenticator.assert(options, { counter: 0 }));
      assert.equal(response.statusCode, 200, response.body);
    }
    const stranger = new SoftAuthenticator(ORIGIN);
    stranger.userHandle = Buffer.from(ada.user.id).toString("base64url");
    const { challenge_id, options } = await authenticationOptions(app);
    const response = await passkeyGrant(app, challenge_id, stranger.assert(options));
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().detail, PASSKEY_NOT_VERIFIED);
  });

  test("an expired sign-in challenge, a removed passkey, an inactive or unverified account do not sign in", async (t) => {
    const { app, store, clock } = await setUp(t, {
      accountRecovery: {
        passwordResetTtlSeconds: 1800,
        emailVerificationTtlSeconds: 86_400,
        verificationRequired: true,
        linkBaseUrl: "http://service.test",
      },
    });
    // Verified, so that the password grant gives the test its token.
    const ada = await store.create({
      email: "ada@example.com",
      hashedPassword: (await createUser(store, "tmp@example.com", PASSWORD)).hashedPassword,
      emailVerifiedAt: new Date(clock.now).toISOString(),
    });
    const token = await loginToken(app, "ada@example.com", PASSWORD);
    const authenticator = new SoftAuthenticator(ORIGIN);
    const id = await register(app, token, authenticator);

    const late = await authenticationOptions(app);
    clock.advanceSeconds(WEBAUTHN_CHALLENGE_TTL_SECONDS + 1);
    const expired = await passkeyGrant(app, late.challenge_id, authenticator.assert(late.options));
    assert.equal(expired.statusCode, 401);
    assert.equal(expired.json().detail, WEBAUTHN_CHALLENGE_SPENT);

    // Unverified e-mail while verification is required: the password grant's 403, same words.
    await store.update(ada.id, { emailVerifiedAt: null });
    const unverified = await authenticationOptions(app);
    const refused = await passkeyGrant(app, unverified.challenge_id, authenticator.assert(unverified.options));
    assert.equal(refused.statusCode, 403);
    assert.deepEqual(Object.keys(refused.json()), ["detail"], "the spec's error shape");
    assert.match(refused.json().detail, /not verified/);
    await store.update(ada.id, { emailVerifiedAt: new Date(clock.now).toISOString() });

    await store.update(ada.id, { isActive: false });
    const inactive = await authenticationOptions(app);
    const disabled = await passkeyGrant(app, inactive.challenge_id, authenticator.assert(inactive.options));
    assert.equal(disabled.statusCode, 401);
    assert.equal(disabled.json().detail, PASSKEY_NOT_VERIFIED);

    await store.update(ada.id, { isActive: true });
    assert.equal(await store.removePasskey(ada.id, id), true);
    const removed = await authenticationOptions(app);
    const gone = await passkeyGrant(app, removed.challenge_id, authenticator.assert(removed.options));
    assert.equal(gone.statusCode, 401);
  });

  test("an account with a passkey: the password alone answers mfa_required, a passkey completes it", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const bob = await signedUp(app, store, "bob@example.com");
    const adas = new SoftAuthenticator(ORIGIN);
    const bobs = new SoftAuthenticator(ORIGIN);
    await register(app, ada.token, adas);
    await register(app, bob.token, bobs);

    const challenge = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
    assert.equal(challenge.statusCode, 403);
    assert.equal(challenge.json().error, "mfa_required");
    assert.deepEqual(challenge.json().mfa_factors, ["recovery_code", "webauthn"]);
    const mfaToken = challenge.json().mfa_token as string;
    const { challenge_id, options } = await authenticationOptions(app, { mfa_token: mfaToken });
    assert.deepEqual(
      (options.allowCredentials as { id: string }[]).map((c) => c.id),
      [adas.id],
    );
    assert.equal(options.userVerification, "preferred");

    // Bob's passkey cannot answer Ada's challenge.
    const wrongUser = await requestToken(app, {
      grant_type: MFA_WEBAUTHN_GRANT,
      mfa_token: mfaToken,
      challenge_id,
      webauthn_response: JSON.stringify(bobs.assert(options)),
    });
    assert.equal(wrongUser.statusCode, 401);
    assert.deepEqual(wrongUser.json(), { detail: PASSKEY_NOT_VERIFIED });

    // User presence is enough after a password; the challenge is found from the signed answer.
    const second = await authenticationOptions(app, { mfa_token: mfaToken });
    const response = await requestToken(app, {
      grant_type: MFA_WEBAUTHN_GRANT,
      mfa_token: mfaToken,
      webauthn_response: JSON.stringify(adas.assert(second.options, { userVerified: false, noUserHandle: true })),
    });
    assert.equal(response.statusCode, 200, response.body);
    const me = await app.inject({ method: "GET", url: "/me", headers: bearer(response.json().access_token) });
    assert.equal(me.json().email, "ada@example.com");
    assert.deepEqual(claims(response.json().access_token).amr, ["pwd", "hwk", "mfa"]);

    // The mfa_token is spent: neither new options nor another grant.
    const spent = await app.inject({
      method: "POST",
      url: "/auth/webauthn/authentication-options",
      payload: { mfa_token: mfaToken },
    });
    assert.equal(spent.statusCode, 401);
    assert.equal(spent.headers["www-authenticate"], "Bearer");
    const third = await authenticationOptions(app);
    const again = await requestToken(app, {
      grant_type: MFA_WEBAUTHN_GRANT,
      mfa_token: mfaToken,
      challenge_id: third.challenge_id,
      webauthn_response: JSON.stringify(adas.assert(third.options)),
    });
    assert.equal(again.statusCode, 401);
    assert.deepEqual(again.json(), { detail: INVALID_MFA_TOKEN });

    // A sign-in challenge (passkey alone) does not serve as a second-factor one, nor the reverse.
    const loginChallenge = await authenticationOptions(app);
    const crossed = await requestToken(app, {
      grant_type: MFA_WEBAUTHN_GRANT,
      mfa_token: await mfaTokenFor(app, "ada@example.com"),
      challenge_id: loginChallenge.challenge_id,
      webauthn_response: JSON.stringify(adas.assert(loginChallenge.options)),
    });
    assert.equal(crossed.statusCode, 401);
    const mfaChallenge = await authenticationOptions(app, { mfa_token: await mfaTokenFor(app, "ada@example.com") });
    const reverse = await passkeyGrant(app, mfaChallenge.challenge_id, adas.assert(mfaChallenge.options));
    assert.equal(reverse.statusCode, 401);
    const events = await store.listEvents({ userId: ada.user.id, limit: 100 });
    assert.ok(events.some((e) => e.type === "passkey" && e.outcome === "used_second_factor"));
    assert.ok(events.some((e) => e.type === "second_factor" && e.outcome === "webauthn_failed"));

    // Removing the last passkey: the password alone signs in again.
    const [passkey] = (await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(ada.token) })).json();
    await app.inject({ method: "DELETE", url: `/me/passkeys/${passkey.id}`, headers: bearer(ada.token) });
    assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
  });

  test("the first passkey comes with ten recovery codes, shown once; a second passkey or an app after it keeps them", async (t) => {
    const { app, store, clock } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const status = async () => (await app.inject({ method: "GET", url: "/me/mfa", headers: bearer(ada.token) })).json();
    const add = async (name: string) => {
      const { challenge_id, options } = await registrationOptions(app, ada.token);
      const response = new SoftAuthenticator(ORIGIN).register(options);
      const added = await addPasskey(app, ada.token, { challenge_id, name, response });
      assert.equal(added.statusCode, 201, added.body);
      return added.json();
    };

    const first = await add("Laptop");
    const codes: string[] = first.recovery_codes;
    assert.deepEqual(first, {
      id: first.id,
      name: "Laptop",
      created_at: new Date(clock.now).toISOString(),
      last_used_at: null,
      backed_up: false,
      recovery_codes: codes,
    });
    assert.match(first.id, /^[0-9a-f-]{36}$/);
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    for (const code of codes) assert.match(code, /^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/);
    assert.deepEqual(await status(), { totp_enabled: false, recovery_codes_remaining: 10, passkeys: 1 });
    const listed = await app.inject({ method: "GET", url: "/me/passkeys", headers: bearer(ada.token) });
    assert.deepEqual(Object.keys(listed.json()[0]).sort(), ["backed_up", "created_at", "id", "last_used_at", "name"]);

    // Losing the device no longer locks Ada out: the challenge offers a recovery code.
    const challenge = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
    assert.equal(challenge.statusCode, 403);
    assert.deepEqual(challenge.json().mfa_factors, ["recovery_code", "webauthn"]);
    const recovered = await requestToken(app, {
      grant_type: MFA_RECOVERY_CODE_GRANT,
      mfa_token: challenge.json().mfa_token,
      recovery_code: codes[0] as string,
    });
    assert.equal(recovered.statusCode, 200, recovered.body);
    assert.deepEqual(claims(recovered.json().access_token).amr, ["pwd", "mfa"]);

    // A second passkey, then an authenticator app: no new codes, and the ones Ada has stay valid.
    const second = await add("Phone");
    assert.deepEqual(second.recovery_codes, []);
    const { secret } = (await app.inject({ method: "POST", url: "/me/totp", headers: bearer(ada.token) })).json();
    const confirmed = await app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: bearer(ada.token),
      payload: { code: codeAt(secret, clock.now) },
    });
    assert.deepEqual([confirmed.statusCode, confirmed.json()], [200, { recovery_codes: [] }]);
    assert.deepEqual(await status(), { totp_enabled: true, recovery_codes_remaining: 9, passkeys: 2 });
    const again = await requestToken(app, {
      grant_type: MFA_RECOVERY_CODE_GRANT,
      mfa_token: await mfaTokenFor(app, "ada@example.com"),
      recovery_code: codes[1] as string,
    });
    assert.equal(again.statusCode, 200, again.body);

    const events = await store.listEvents({ userId: ada.user.id, limit: 100 });
    const trail = events
      .filter((e) => e.type === "passkey" || (e.type === "second_factor" && !e.outcome.endsWith("_used")))
      .map((e) => `${e.type}:${e.outcome}`);
    assert.deepEqual(trail, [
      "passkey:added",
      "second_factor:recovery_codes_generated",
      "passkey:added",
      "second_factor:totp_added",
    ]);
  });

  test("an admin's reset of a user's factors removes the passkeys too", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    await store.create({ email: "root@example.com", hashedPassword: ada.user.hashedPassword, isAdmin: true });
    const root = await loginToken(app, "root@example.com", PASSWORD);
    await register(app, ada.token, new SoftAuthenticator(ORIGIN));
    assert.equal((await store.secondFactorsOf(ada.user.id)).passkeys, 1);
    const mfa = await app.inject({ method: "GET", url: "/me/mfa", headers: bearer(ada.token) });
    assert.equal(mfa.json().passkeys, 1);
    const reset = await app.inject({ method: "DELETE", url: `/users/${ada.user.id}/mfa`, headers: bearer(root) });
    assert.equal(reset.statusCode, 204, reset.body);
    assert.equal(await store.countPasskeys(ada.user.id), 0);
    assert.equal((await requestToken(app, { username: "ada@example.com", password: PASSWORD })).statusCode, 200);
  });

  test("malformed WebAuthn input is a 4xx in the error shape, never a 500", async (t) => {
    const { app, store } = await setUp(t);
    const ada = await signedUp(app, store, "ada@example.com");
    const { challenge_id } = await authenticationOptions(app);
    const garbage: [string, number][] = [
      ["not json", 400],
      ["{", 400],
      ["null", 422],
      ["[]", 422],
      ['"text"', 422],
      ["{}", 422],
      [JSON.stringify({ id: "x", rawId: "x", type: "public-key", response: {} }), 422],
      [
        JSON.stringify({
          id: "AAAA",
          rawId: "AAAA",
          type: "public-key",
          response: { clientDataJSON: "bm90IGpzb24", authenticatorData: "AAAA", signature: "AAAA" },
        }),
        401,
      ],
      [
        JSON.stringify({
          id: "AAAA",
          rawId: "AAAA",
          type: "public-key",
          response: { clientDataJSON: "!!!", authenticatorData: "AAAA", signature: "AAAA" },
        }),
        422,
      ],
    ];
    for (const [text, status] of garbage) {
      const response = await passkeyGrant(app, challenge_id, text);
      assert.equal(response.statusCode, status, `${text}: ${response.body}`);
      assert.equal(typeof response.json().detail, "string");
      assert.deepEqual(Object.keys(response.json()), ["detail"], "the spec's error shape");
    }
    // A well-formed assertion with garbage inside, on a live challenge: a 401, not a 500.
    const live = await authenticationOptions(app);
    const authenticator = new SoftAuthenticator(ORIGIN);
    await register(app, ada.token, authenticator);
    const assertion = authenticator.assert(live.options) as { response: Record<string, string> };
    assertion.response.authenticatorData = "AAAA";
    assertion.response.signature = "AAAA";
    const broken = await passkeyGrant(app, live.challenge_id, assertion);
    assert.equal(broken.statusCode, 401, broken.body);

    const missing = await requestToken(app, { grant_type: WEBAUTHN_GRANT, challenge_id });
    assert.equal(missing.statusCode, 422);
    assert.equal(missing.json().detail, "body.webauthn_response: field required");
    const noMfa = await requestToken(app, { grant_type: MFA_WEBAUTHN_GRANT, webauthn_response: "{}" });
    assert.equal(noMfa.statusCode, 422);
    const badChallengeId = await passkeyGrant(app, "not-a-uuid", authenticator.assert(live.options));
    assert.equal(badChallengeId.statusCode, 401);

    // Registration: a response that is not a credential, unknown fields, a bad name.
    const { challenge_id: regChallenge } = await registrationOptions(app, ada.token);
    for (const body of [
      { challenge_id: regChallenge, name: "x", response: { id: "x" } },
      { challenge_id: regChallenge, name: "x", response: "text" },
      { challenge_id: regChallenge, name: "", response: {} },
      { challenge_id: regChallenge, name: "bad\u0007name", response: {} },
      { challenge_id: "nope", name: "x", response: {} },
      { challenge_id: regChallenge, name: "x", response: {}, extra: true },
    ]) {
      const response = await addPasskey(app, ada.token, body);
      assert.equal(response.statusCode, 422, `${JSON.stringify(body)}: ${response.body}`);
    }
    const cbor = await registrationOptions(app, ada.token);
    const broken2 = addPasskey(app, ada.token, {
      challenge_id: cbor.challenge_id,
      name: "x",
      response: {
        id: "AAAA",
        rawId: "AAAA",
        type: "public-key",
        response: { clientDataJSON: "AAAA", attestationObject: "AAAA" },
      },
    });
    assert.equal((await broken2).statusCode, 400);

    const unknownMfa = await app.inject({
      method: "POST",
      url: "/auth/webauthn/authentication-options",
      payload: { mfa_token: "unknown" },
    });
    assert.equal(unknownMfa.statusCode, 401);
    const extra = await app.inject({
      method: "POST",
      url: "/auth/webauthn/authentication-options",
      payload: { user: "ada@example.com" },
    });
    assert.equal(extra.statusCode, 422);
    const rename = await app.inject({
      method: "PATCH",
      url: "/me/passkeys/not-a-uuid",
      headers: bearer(ada.token),
      payload: { name: "x" },
    });
    assert.equal(rename.statusCode, 422);
  });

  test("without MFA_ENCRYPTION_KEY (PostgreSQL) recovery codes work, keyed by the signing secret, and keep working once it is set", async (t) => {
    const keyless = { mfa: { encryptionKeys: [], totpIssuer: "Service Test" } };
    const { app, store, clock } = await setUp(t, keyless);
    const ada = await signedUp(app, store, "ada@example.com");
    await register(app, ada.token, new SoftAuthenticator(ORIGIN));
    const made = await app.inject({
      method: "POST",
      url: "/me/recovery-codes",
      headers: bearer(ada.token),
      payload: { password: PASSWORD },
    });
    assert.equal(made.statusCode, 200, made.body);
    const codes: string[] = made.json().recovery_codes;
    assert.equal(codes.length, 10);

    /** The recovery-code grant on `on`, after its password step. */
    const recover = async (on: FastifyInstance, code: string) =>
      requestToken(on, {
        grant_type: MFA_RECOVERY_CODE_GRANT,
        mfa_token: await mfaTokenFor(on, "ada@example.com"),
        recovery_code: code,
      });
    const used = await recover(app, codes[0] as string);
    assert.equal(used.statusCode, 200, used.body);
    assert.deepEqual(claims(used.json().access_token).amr, ["pwd", "mfa"]);

    const appWith = async (config: Parameters<typeof testConfig>[0]) => {
      const other = await buildApp({
        config: testConfig({ publicUrl: PUBLIC_URL, ...config }),
        store,
        clock: clock.read,
      });
      t.after(() => other.close());
      return other;
    };
    const keySet = await appWith({ mfa: { encryptionKeys: [TEST_MFA_KEY], totpIssuer: "Service Test" } });
    assert.equal((await recover(keySet, codes[1] as string)).statusCode, 200, "made before the key was set");
    const NEW_SECRET = "a-new-signing-secret-of-at-least-32-bytes";
    const rotating = await appWith({ ...keyless, signingSecrets: [NEW_SECRET, TEST_SECRET] });
    assert.equal((await recover(rotating, codes[2] as string)).statusCode, 200, "the old secret is still listed");
    const rotated = await appWith({ ...keyless, signingSecrets: [NEW_SECRET] });
    assert.equal((await recover(rotated, codes[3] as string)).statusCode, 401, "keyed by the secret that was removed");
  });

  test("the relying party: PUBLIC_URL's host and origin; without it, localhost on the listen port", () => {
    assert.deepEqual(relyingPartyFor("https://id.example.com", () => "unused")(), {
      id: "id.example.com",
      origin: "https://id.example.com",
      name: "User service",
    });
    assert.deepEqual(relyingPartyFor("http://localhost:8000", () => "unused")(), {
      id: "localhost",
      origin: "http://localhost:8000",
      name: "User service",
    });
    assert.deepEqual(relyingPartyFor(undefined, () => "http://127.0.0.1:8123")(), {
      id: "localhost",
      origin: "http://localhost:8123",
      name: "User service",
    });
  });
});
