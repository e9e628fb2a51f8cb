// The admin users API of issue 35 (the console's Users screen), whole answers on the store under test
// (SQLite; PostgreSQL with TEST_BACKEND=postgres): GET /users's search filters and their cursor pages;
// a user's sessions (list, end one, end all: the refresh token is refused afterwards), passkeys, apps
// and upstream identities as an admin sees and ends them; the password-reset mail an admin sends;
// PATCH /users/{id} email_verified. Every destructive action is audited with the admin as actor.
// Refusals (401/403/404/422) of every route: test/security/admin-user-routes.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import type { Config } from "../src/config.ts";
import { prefixEnd } from "../src/store/sql/user-search.ts";
import { INACTIVE_USER_NO_RESET, PASSWORD_RESET_MAILED } from "../src/users/admin-account-routes.ts";
import { ONLY_ADMINS_VERIFY } from "../src/users/routes.ts";
import { buildTestApp, caller, passwords, requestToken, signedInUser, type TestApp, testConfig } from "./helpers.ts";
import { linkIn, MailServer } from "./mail-server.ts";
import { OIDC_KEY, registerClients } from "./oidc/fixture.ts";
import { WebhookReceiver } from "./webhook-receiver.ts";

const PASSWORD = "correct horse battery";
const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

interface World extends TestApp {
  admin: { id: string; token: string };
  call: ReturnType<typeof caller>;
}

async function world(t: TestContext, config: Partial<Config> = {}): Promise<World> {
  const base = testConfig();
  const built = await buildTestApp(t, {
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    webhooks: { ...base.webhooks, refusePrivateAddresses: false, pollIntervalMs: 100 },
    ...config,
  });
  const admin = await signedInUser(built.app, built.store, "root@example.com", PASSWORD, true);
  return { ...built, admin, call: caller(built.app) };
}

/** A user made in the store, with a password login's tokens. */
async function userWithLogin(w: World, email: string, extra: { fullName?: string; verified?: boolean } = {}) {
  const user = await w.store.create({
    email,
    hashedPassword: await passwords.hash(PASSWORD),
    fullName: extra.fullName ?? null,
    emailVerifiedAt: extra.verified ? new Date(w.clock.read()).toISOString() : null,
  });
  const login = await requestToken(w.app, { username: email, password: PASSWORD });
  assert.equal(login.statusCode, 200, login.body);
  const { access_token, refresh_token } = login.json() as { access_token: string; refresh_token: string };
  return { user, token: access_token, refreshToken: refresh_token };
}

async function addPasskey(w: World, userId: string, name: string) {
  const passkey = await w.store.addPasskey({
    userId,
    credentialId: `cred-${name}`,
    publicKey: "pQECAyYgASFYIA",
    counter: 0,
    transports: ["internal"],
    name,
    deviceType: "multiDevice",
    backedUp: true,
    aaguid: null,
  });
  assert.ok(passkey);
  return passkey;
}

async function adminEvents(w: World, userId: string) {
  return (await w.store.listEvents({ userId, limit: 100 })).filter((event) => event.actorId === w.admin.id);
}

const emails = (body: { items: { email: string }[] }) => body.items.map((user) => user.email);

describe("GET /users: the console's search filters", () => {
  test("e-mail prefix (any case), name, verified, second factor, upstream provider; pages keep the filters", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com", { fullName: "Ada Lovelace", verified: true });
    await userWithLogin(w, "adam@example.com", { fullName: "Adam 100%_Smith" });
    const bob = await userWithLogin(w, "bob@example.com", { fullName: "Bob" });
    await userWithLogin(w, "adz@example.com");
    await addPasskey(w, bob.user.id, "Phone");
    const linked = await w.store.linkIdentity({
      id: "01900000-0000-7000-8000-0000000000aa",
      userId: ada.user.id,
      provider: "corp",
      issuer: "https://idp.example",
      subject: "ada-at-corp",
      email: "ada@corp.example",
      createdAt: new Date(w.clock.read()).toISOString(),
      sealedTokens: null,
    });
    assert.ok(linked);
    const list = async (query: string) => {
      const response = await w.call("GET", `/users?${query}`, w.admin.token);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers["cache-control"], "no-store");
      return response.json();
    };
    assert.deepEqual(emails(await list("email_prefix=AD")), ["ada@example.com", "adam@example.com", "adz@example.com"]);
    assert.deepEqual(emails(await list("email_prefix=ada")), ["ada@example.com", "adam@example.com"]);
    assert.deepEqual(emails(await list("email_prefix=ada%40")), ["ada@example.com"]);
    assert.deepEqual(emails(await list("email_prefix=zz")), []);
    assert.deepEqual(emails(await list("name=LOVE")), ["ada@example.com"]);
    assert.deepEqual(emails(await list("name=%25_")), ["adam@example.com"], "LIKE wildcards are literal");
    assert.deepEqual(emails(await list("name=%25")), ["adam@example.com"]);
    assert.deepEqual(emails(await list("is_verified=true")), ["ada@example.com"]);
    assert.deepEqual(emails(await list("has_second_factor=true")), ["bob@example.com"]);
    assert.deepEqual(emails(await list("has_second_factor=false&email_prefix=b")), []);
    assert.deepEqual(emails(await list("upstream_provider=corp")), ["ada@example.com"]);
    assert.deepEqual(emails(await list("upstream_provider=other")), []);
    assert.deepEqual(emails(await list("is_verified=false&is_admin=false&email_prefix=ad")), [
      "adam@example.com",
      "adz@example.com",
    ]);

    // Pages: the whole first answer, then the link followed with the same filters.
    const first = await list("email_prefix=ad&is_active=true&limit=2");
    assert.deepEqual(Object.keys(first), ["items", "next_cursor", "next"]);
    assert.deepEqual(emails(first), ["ada@example.com", "adam@example.com"]);
    assert.equal(first.next_cursor, first.items[1].id);
    assert.equal(first.next, `/users?limit=2&cursor=${first.next_cursor}&is_active=true&email_prefix=ad`);
    const second = await w.call("GET", first.next, w.admin.token);
    assert.deepEqual(second.json(), { items: [second.json().items[0]], next_cursor: null, next: null });
    assert.equal(second.json().items[0].email, "adz@example.com");
  });

  test("the prefix's end in code-point order", () => {
    assert.equal(prefixEnd("ab"), "ac");
    assert.equal(prefixEnd("a"), "b");
    assert.equal(prefixEnd(""), undefined);
    assert.equal(prefixEnd("a\u{d7ff}"), "a\u{e000}");
    assert.equal(prefixEnd("a\u{10ffff}"), undefined);
  });
});

describe("a user's sessions, as an admin sees and ends them", () => {
  test("list in /me/sessions's shape; end one: its refresh token is refused, audited with the admin as actor", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    const listed = await w.call("GET", `/users/${ada.user.id}/sessions`, w.admin.token);
    assert.equal(listed.statusCode, 200, listed.body);
    assert.equal(listed.headers["cache-control"], "no-store");
    const [session] = listed.json().items;
    const own = await w.call("GET", "/me/sessions", ada.token);
    assert.deepEqual(listed.json(), { ...own.json(), items: [{ ...own.json().items[0], current: false }] });
    assert.deepEqual(Object.keys(session).sort(), [
      "client_address",
      "created_at",
      "current",
      "expires_at",
      "id",
      "last_used_at",
      "user_agent",
    ]);

    const ended = await w.call("DELETE", `/users/${ada.user.id}/sessions/${session.id}`, w.admin.token);
    assert.equal(ended.statusCode, 204);
    assert.equal(ended.body, "");
    const refresh = await requestToken(w.app, { grant_type: "refresh_token", refresh_token: ada.refreshToken });
    assert.equal(refresh.statusCode, 401, refresh.body);
    assert.deepEqual((await w.call("GET", `/users/${ada.user.id}/sessions`, w.admin.token)).json().items, []);
    const again = await w.call("DELETE", `/users/${ada.user.id}/sessions/${session.id}`, w.admin.token);
    assert.equal(again.statusCode, 404);
    assert.deepEqual(again.json(), { detail: "Session not found" });
    const events = await adminEvents(w, ada.user.id);
    assert.deepEqual(
      events.map(({ type, outcome, clientAddress }) => ({ type, outcome, clientAddress })),
      [{ type: "session_revocation", outcome: "ended_by_admin", clientAddress: "127.0.0.1" }],
    );
  });

  test("another user's session under this user's id is 404; paging follows /me/sessions", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    const bob = await userWithLogin(w, "bob@example.com");
    const [bobSession] = (await w.call("GET", `/users/${bob.user.id}/sessions`, w.admin.token)).json().items;
    const refused = await w.call("DELETE", `/users/${ada.user.id}/sessions/${bobSession.id}`, w.admin.token);
    assert.equal(refused.statusCode, 404);
    await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
    const page = (await w.call("GET", `/users/${ada.user.id}/sessions?limit=1`, w.admin.token)).json();
    assert.equal(page.items.length, 1);
    assert.equal(page.next, `/users/${ada.user.id}/sessions?limit=1&cursor=${page.next_cursor}`);
    const rest = (await w.call("GET", page.next, w.admin.token)).json();
    assert.deepEqual([rest.items.length, rest.next], [1, null]);
  });

  test("end all: every refresh token and access token of the user stops working", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    const second = await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
    const ended = await w.call("DELETE", `/users/${ada.user.id}/sessions`, w.admin.token);
    assert.equal(ended.statusCode, 204);
    for (const refreshToken of [ada.refreshToken, second.json().refresh_token]) {
      const refresh = await requestToken(w.app, { grant_type: "refresh_token", refresh_token: refreshToken });
      assert.equal(refresh.statusCode, 401);
    }
    assert.equal((await w.call("GET", "/me", ada.token)).statusCode, 401);
    const events = await adminEvents(w, ada.user.id);
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["all_ended_by_admin"],
    );
    assert.equal((await w.call("GET", "/me", w.admin.token)).statusCode, 200, "the admin's own token lives on");
  });
});

describe("a user's passkeys, apps and password reset, as an admin handles them", () => {
  test("passkeys: listed as /me/passkeys answers, removed with the admin as actor", async (t) => {
    const w = await world(t);
    const bob = await userWithLogin(w, "bob@example.com");
    const passkey = await addPasskey(w, bob.user.id, "Phone");
    const listed = await w.call("GET", `/users/${bob.user.id}/passkeys`, w.admin.token);
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(listed.json(), (await w.call("GET", "/me/passkeys", bob.token)).json());
    assert.deepEqual(listed.json(), [
      { id: passkey.id, name: "Phone", created_at: passkey.createdAt, last_used_at: null, backed_up: true },
    ]);
    const removed = await w.call("DELETE", `/users/${bob.user.id}/passkeys/${passkey.id}`, w.admin.token);
    assert.equal(removed.statusCode, 204);
    assert.deepEqual(await w.store.listPasskeys(bob.user.id), []);
    const again = await w.call("DELETE", `/users/${bob.user.id}/passkeys/${passkey.id}`, w.admin.token);
    assert.deepEqual([again.statusCode, again.json()], [404, { detail: "Passkey not found" }]);
    assert.deepEqual(
      (await adminEvents(w, bob.user.id)).map((event) => `${event.type}/${event.outcome}`),
      ["passkey/removed_by_admin"],
    );
  });

  test("apps: listed as /me/apps answers, revoked by the same store verb (the consent is gone)", async (t) => {
    const w = await world(t, { oidcSigningKeys: [OIDC_KEY] });
    const ada = await userWithLogin(w, "ada@example.com");
    const { partner } = await registerClients(w.store, "https://rp.example");
    const grantedAt = new Date(w.clock.read()).toISOString();
    await w.store.grantConsent(ada.user.id, partner.id, "openid email", grantedAt);
    const listed = await w.call("GET", `/users/${ada.user.id}/apps`, w.admin.token);
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(listed.json(), (await w.call("GET", "/me/apps", ada.token)).json());
    assert.deepEqual(listed.json(), {
      items: [{ client_id: partner.id, client_name: "Partner <App>", scope: "openid email", granted_at: grantedAt }],
    });
    const revoked = await w.call("DELETE", `/users/${ada.user.id}/apps/${partner.id}`, w.admin.token);
    assert.equal(revoked.statusCode, 204);
    assert.equal(await w.store.findConsent(ada.user.id, partner.id), undefined);
    const again = await w.call("DELETE", `/users/${ada.user.id}/apps/${partner.id}`, w.admin.token);
    assert.equal(again.statusCode, 404);
    assert.deepEqual(
      (await adminEvents(w, ada.user.id)).map((event) => `${event.type}/${event.outcome}`),
      ["oidc/consent_revoked_by_admin"],
    );
  });

  test("password reset: the reset mail to the user, 202; 409 for an inactive user", async (t) => {
    const w = await world(t);
    const email = `reset.${process.pid}@example.com`;
    const ada = await userWithLogin(w, email);
    const sent = await w.call("POST", `/users/${ada.user.id}/password-reset`, w.admin.token);
    assert.equal(sent.statusCode, 202, sent.body);
    assert.deepEqual(sent.json(), { message: PASSWORD_RESET_MAILED });
    const [mail] = await smtp.mailsTo(email, 1);
    assert.ok(mail);
    assert.equal(mail.subject, "Reset your password");
    const link = linkIn(mail);
    assert.equal(`${link.origin}${link.pathname}`, "http://service.test/reset-password");
    assert.deepEqual(
      (await adminEvents(w, ada.user.id)).map((event) => `${event.type}/${event.outcome}`),
      ["password_reset/requested_by_admin"],
    );

    await w.store.update(ada.user.id, { isActive: false });
    const refused = await w.call("POST", `/users/${ada.user.id}/password-reset`, w.admin.token);
    assert.deepEqual([refused.statusCode, refused.json()], [409, { detail: INACTIVE_USER_NO_RESET }]);
  });

  test("PATCH email_verified: admins verify or unverify an address, audited; a user may not", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    const own = await w.call("PATCH", `/users/${ada.user.id}`, ada.token, { email_verified: true });
    assert.deepEqual([own.statusCode, own.json()], [403, { detail: ONLY_ADMINS_VERIFY }]);
    const verified = await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { email_verified: true });
    assert.equal(verified.statusCode, 200);
    assert.equal(verified.json().email_verified, true);
    assert.match(verified.json().email_verified_at, /^\d{4}-\d\d-\d\dT/);
    const same = await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { email_verified: true });
    assert.equal(same.json().email_verified_at, verified.json().email_verified_at, "kept, not stamped again");
    const unverified = await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { email_verified: false });
    assert.deepEqual([unverified.json().email_verified, unverified.json().email_verified_at], [false, null]);
    assert.deepEqual(
      (await adminEvents(w, ada.user.id)).map((event) => `${event.type}/${event.outcome}`),
      ["email_verification/verified_by_admin", "email_verification/unverified_by_admin"],
    );
  });
});

describe("webhooks of the admin's actions, as when the user acts", () => {
  test("session.ended per session (ended_by_admin; credentials_changed when all end), mfa.disabled, user.email_verified", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    const second = await requestToken(w.app, { username: "ada@example.com", password: PASSWORD });
    assert.equal(second.statusCode, 200);
    const passkey = await addPasskey(w, ada.user.id, "Key");
    // A real receiver: the service's own worker delivers (in order per user), as in production.
    const receiver = new WebhookReceiver();
    await receiver.start();
    t.after(() => receiver.stop());
    const event_types = ["session.ended", "mfa.disabled", "user.email_verified"];
    const created = await w.call("POST", "/webhooks", w.admin.token, { url: receiver.url, event_types });
    assert.equal(created.statusCode, 201, created.body);
    receiver.secrets = [created.json().secret];
    const [newest, oldest] = (await w.call("GET", `/users/${ada.user.id}/sessions`, w.admin.token)).json().items;
    assert.equal(
      (await w.call("DELETE", `/users/${ada.user.id}/sessions/${oldest.id}`, w.admin.token)).statusCode,
      204,
    );
    assert.equal((await w.call("DELETE", `/users/${ada.user.id}/sessions`, w.admin.token)).statusCode, 204);
    assert.equal(
      (await w.call("DELETE", `/users/${ada.user.id}/passkeys/${passkey.id}`, w.admin.token)).statusCode,
      204,
    );
    assert.equal(
      (await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { email_verified: true })).statusCode,
      200,
    );
    await receiver.waitFor(() => receiver.accepted.length >= 4);
    const delivered = receiver.accepted.map((delivery) => (delivery.verified as { data: object }).data);
    assert.deepEqual(delivered, [
      { user_id: ada.user.id, session_id: oldest.id, reason: "ended_by_admin" },
      { user_id: ada.user.id, session_id: newest.id, reason: "credentials_changed" },
      { user_id: ada.user.id, factor: "passkey" },
      { user_id: ada.user.id, email: "ada@example.com" },
    ]);
  });
});

describe("the acting admin on the earlier admin actions", () => {
  test("role change, deactivation, second-factor reset and deletion name the admin; a user's own change names nobody", async (t) => {
    const w = await world(t);
    const ada = await userWithLogin(w, "ada@example.com");
    assert.equal((await w.call("PATCH", `/users/${ada.user.id}`, ada.token, { full_name: "Ada" })).statusCode, 200);
    const patched = await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { is_admin: true });
    assert.equal(patched.statusCode, 200);
    assert.equal((await w.call("PATCH", `/users/${ada.user.id}`, w.admin.token, { is_active: false })).statusCode, 200);
    assert.equal((await w.call("DELETE", `/users/${ada.user.id}/mfa`, w.admin.token)).statusCode, 204);
    const events = await w.store.listEvents({ userId: ada.user.id, limit: 100 });
    assert.deepEqual(
      events.map(({ type, outcome, actorId }) => ({ type, outcome, actorId })),
      [
        { type: "login", outcome: "success", actorId: null },
        { type: "role_change", outcome: "granted_admin", actorId: w.admin.id },
        { type: "deactivation", outcome: "success", actorId: w.admin.id },
        { type: "second_factor", outcome: "reset_by_admin", actorId: w.admin.id },
      ],
    );
    assert.equal((await w.call("DELETE", `/users/${ada.user.id}`, w.admin.token)).statusCode, 204);
    const [deletion] = (await w.store.listEvents({ userId: ada.user.id, limit: 100 })).filter(
      (event) => event.type === "deletion",
    );
    assert.deepEqual([deletion?.outcome, deletion?.actorId], ["by_admin", w.admin.id]);
  });
});
