// The audit trail: every kind of security event is recorded with time, user
// id, client address and outcome (never a password or token); admins read a
// user's trail at GET /users/{id}/events, paginated and filtered by type and
// time; old events are pruned by the retention setting.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { bearer, buildTestApp, loginToken, passwords, requestToken } from "./helpers.ts";

const PASSWORD = "correct horse battery";

async function setup(t: TestContext) {
  const testApp = await buildTestApp(t);
  const { app, store } = testApp;
  await store.create({ email: "root@example.com", hashedPassword: await passwords.hash(PASSWORD), isAdmin: true });
  const root = await loginToken(app, "root@example.com", PASSWORD);
  const events = async (userId: string, query = "") => {
    const response = await app.inject({ method: "GET", url: `/users/${userId}/events${query}`, headers: bearer(root) });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as {
      items: {
        type: string;
        outcome: string;
        client_address: string | null;
        created_at: string;
        actor_id: string | null;
      }[];
      next: string | null;
    };
  };
  return { ...testApp, root, events };
}

describe("audit trail", () => {
  test("records sign-up, logins, password change, role change, deactivation, session revocation and deletion", async (t) => {
    const { app, store, root, events } = await setup(t);
    const signUp = await app.inject({
      method: "POST",
      url: "/users",
      payload: { email: "ada@example.com", password: PASSWORD },
    });
    const adaId = signUp.json().id as string;
    await requestToken(app, { username: "ada@example.com", password: "wrong password" });
    const ada = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();
    await app.inject({
      method: "POST",
      url: "/auth/revoke",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `token=${ada.refresh_token}`,
    });
    await app.inject({
      method: "PUT",
      url: "/me/password",
      headers: bearer(ada.access_token),
      payload: { current_password: PASSWORD, new_password: "a brand new passphrase" },
    });
    await app.inject({ method: "PATCH", url: `/users/${adaId}`, headers: bearer(root), payload: { is_admin: true } });
    await app.inject({ method: "PATCH", url: `/users/${adaId}`, headers: bearer(root), payload: { is_active: false } });
    await app.inject({ method: "DELETE", url: `/users/${adaId}`, headers: bearer(root) });

    const trail = await events(adaId);
    assert.deepEqual(
      trail.items.map((event) => `${event.type}:${event.outcome}`),
      [
        "signup:success",
        "login:failure",
        "login:success",
        "session_revocation:revoked",
        "password_change:success",
        "role_change:granted_admin",
        "deactivation:success",
        "deletion:by_admin",
      ],
      "events outlive their user",
    );
    for (const event of trail.items) {
      assert.equal(event.client_address, "127.0.0.1");
      assert.match(event.created_at, /^\d{4}-\d\d-\d\dT/);
    }
    // What the admin did names the admin; what Ada did, or the service, names nobody; the service-wide
    // log says the same.
    const rootId = (await store.findByEmail("root@example.com"))!.id;
    const byAdmin = ["role_change:granted_admin", "deactivation:success", "deletion:by_admin"];
    const actors = (items: { type: string; outcome: string; actor_id: string | null }[]) =>
      items.map((event) => [`${event.type}:${event.outcome}`, event.actor_id]);
    const expected = trail.items.map((event) => {
      const name = `${event.type}:${event.outcome}`;
      return [name, byAdmin.includes(name) ? rootId : null];
    });
    assert.deepEqual(actors(trail.items), expected);
    const log = await app.inject({ method: "GET", url: `/events?user_id=${adaId}&limit=100`, headers: bearer(root) });
    assert.equal(log.statusCode, 200, log.body);
    assert.deepEqual(actors(log.json().items).reverse(), expected);
    // The service-wide log names the admin by e-mail too.
    assert.deepEqual(
      log
        .json()
        .items.map((event: { actor_email: string | null }) => event.actor_email)
        .reverse(),
      expected.map(([, actor]) => (actor === null ? null : "root@example.com")),
    );
    const text = JSON.stringify(trail);
    for (const secret of [PASSWORD, "a brand new passphrase", ada.access_token, ada.refresh_token])
      assert.ok(!text.includes(secret));
  });

  test("records a refresh-token reuse as a session revocation", async (t) => {
    const { app, store, clock, events } = await setup(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: await passwords.hash(PASSWORD) });
    const first = (await requestToken(app, { username: "ada@example.com", password: PASSWORD })).json();
    await requestToken(app, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    clock.advanceSeconds(60);
    await requestToken(app, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    const trail = await events(user.id, "?type=session_revocation");
    assert.deepEqual(
      trail.items.map((event) => event.outcome),
      ["reuse_detected"],
    );
  });

  test("pages with limit and next, and filters by type and time range", async (t) => {
    const { app, store, clock, events, root } = await setup(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: await passwords.hash(PASSWORD) });
    const start = new Date(clock.now).toISOString();
    for (let i = 0; i < 5; i++) {
      await requestToken(app, { username: "ada@example.com", password: i % 2 ? PASSWORD : "wrong password" });
      clock.advanceSeconds(60);
    }
    const seen: string[] = [];
    let url: string | null = `/users/${user.id}/events?limit=2`;
    let pages = 0;
    while (url) {
      const response = await app.inject({ method: "GET", url, headers: bearer(root) });
      const page = response.json() as { items: { outcome: string }[]; next: string | null };
      seen.push(...page.items.map((event) => event.outcome));
      url = page.next;
      pages += 1;
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, ["failure", "success", "failure", "success", "failure"]);
    assert.equal((await events(user.id, "?type=login&limit=100")).items.length, 5);
    assert.equal((await events(user.id, "?type=signup")).items.length, 0);
    const twoMinutesIn = new Date(Date.parse(start) + 120_000).toISOString();
    assert.equal((await events(user.id, `?to=${encodeURIComponent(twoMinutesIn)}`)).items.length, 3);
    assert.equal((await events(user.id, `?from=${encodeURIComponent(twoMinutesIn)}`)).items.length, 3);
  });

  test("is for admins only: 403 for a user, even about itself; 401 without a token; 422 for a bad type", async (t) => {
    const { app, store, root } = await setup(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: await passwords.hash(PASSWORD) });
    const ada = await loginToken(app, "ada@example.com", PASSWORD);
    assert.equal(
      (await app.inject({ method: "GET", url: `/users/${user.id}/events`, headers: bearer(ada) })).statusCode,
      403,
    );
    assert.equal((await app.inject({ method: "GET", url: `/users/${user.id}/events` })).statusCode, 401);
    const bad = await app.inject({
      method: "GET",
      url: `/users/${user.id}/events?type=nonsense`,
      headers: bearer(root),
    });
    assert.equal(bad.statusCode, 422);
  });

  test("prunes events older than the retention", async (t) => {
    const { store, clock } = await setup(t);
    await store.recordEvent({ type: "login", userId: null, outcome: "failure", clientAddress: "192.0.2.1" });
    clock.advanceSeconds(91 * 86_400);
    await store.recordEvent({ type: "login", userId: null, outcome: "failure", clientAddress: "192.0.2.1" });
    const cutoff = new Date(clock.now - 90 * 86_400_000).toISOString();
    assert.ok((await store.pruneEvents(cutoff, 1000)) >= 1);
    assert.equal(await store.pruneEvents(cutoff, 1000), 0);
  });
});
