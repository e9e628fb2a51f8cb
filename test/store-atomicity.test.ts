// Every multi-write verb of the store is all or nothing (store.ts lists
// them). A trigger that fails the verb's last statement stands in for a
// crash, a cut connection or a full disk at that point; afterwards nothing
// of the verb may be visible (a proof of the address too: none of the ways in
// it ends, nor its link). Runs on SQLite (a real file) and, in the
// PostgreSQL run, on a fresh PostgreSQL schema.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, type TestContext, test } from "node:test";
import { endedEvents, mailedLinkPlan } from "../src/auth/address-proof.ts";
import { newId } from "../src/store/ids.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { AuditEntry, NewOutboxMessage, NewPasskey, NewSession, UserStore } from "../src/store/store.ts";
import { openPostgresSchema } from "./helpers.ts";

type Operation = "INSERT" | "UPDATE" | "DELETE";

interface Faultable {
  store: UserStore;
  /** Makes every `operation` on `table` fail until clear(). */
  failOn(table: string, operation: Operation): Promise<void>;
  clear(): Promise<void>;
}

async function faultableStore(t: TestContext): Promise<Faultable> {
  if (process.env.TEST_BACKEND === "postgres") {
    const { store, admin, schema } = await openPostgresSchema(t, "atomic");
    await admin.query(
      `CREATE FUNCTION ${schema}.injected_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$`,
    );
    const triggers: string[] = [];
    return {
      store,
      async failOn(table, operation) {
        const name = `fail_${table}_${operation}`.toLowerCase();
        await admin.query(
          `CREATE TRIGGER ${name} BEFORE ${operation} ON ${schema}.${table} FOR EACH ROW EXECUTE FUNCTION ${schema}.injected_fault()`,
        );
        triggers.push(`DROP TRIGGER ${name} ON ${schema}.${table}`);
      },
      async clear() {
        for (const drop of triggers.splice(0)) await admin.query(drop);
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), "atomicity-"));
  const path = join(dir, "users.db");
  const store = openSqliteStore(path);
  // A second connection to the same file, as another process would have.
  const admin = new DatabaseSync(path);
  const triggers: string[] = [];
  t.after(async () => {
    admin.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    store,
    async failOn(table, operation) {
      const name = `fail_${table}_${operation}`.toLowerCase();
      admin.exec(
        `CREATE TRIGGER ${name} BEFORE ${operation} ON ${table} BEGIN SELECT RAISE(ABORT, 'injected fault'); END`,
      );
      triggers.push(`DROP TRIGGER ${name}`);
    },
    async clear() {
      for (const drop of triggers.splice(0)) admin.exec(drop);
    },
  };
}

const EVENT: AuditEntry = { type: "password_change", outcome: "success", clientAddress: "127.0.0.1" };
const iso = (offsetSeconds = 0) => new Date(Date.now() + offsetSeconds * 1000).toISOString();

/** A new session for the user, an hour long, with a stand-in refresh-token hash. */
function newSession(userId: string): NewSession {
  return {
    id: newId(),
    userId,
    expiresAt: iso(3600),
    clientAddress: null,
    userAgent: null,
    tokenHash: "hash-0",
    tokenExpiresAt: iso(3600),
  };
}

async function withSession(store: UserStore) {
  const user = await store.create({ email: "ada@example.com", hashedPassword: "old-hash" });
  const session = await store.createSession(newSession(user.id), { maxPerUser: 10 });
  return { user, session };
}

async function liveSessions(store: UserStore, userId: string): Promise<number> {
  return (await store.listSessions(userId, iso(), { limit: 100 })).length;
}

describe("multi-write store verbs are all or nothing", () => {
  for (const [lastStatement, table, operation] of [
    ["the audit event", "audit_events", "INSERT"],
    ["the revocation of the sessions", "sessions", "UPDATE"],
  ] as const) {
    test(`a password change that fails at ${lastStatement} leaves the password, stamp and sessions as they were`, async (t) => {
      const { store, failOn, clear } = await faultableStore(t);
      const { user } = await withSession(store);
      await failOn(table, operation);
      await assert.rejects(
        store.update(user.id, { hashedPassword: "new-hash" }, { endSessions: true, events: [EVENT] }),
      );
      await clear();
      const after = await store.findById(user.id);
      assert.equal(after?.hashedPassword, "old-hash");
      assert.equal(after?.credentialStamp, user.credentialStamp);
      assert.equal(after?.credentialsChangedAt, null);
      assert.equal(await liveSessions(store, user.id), 1);
    });
  }

  test("a password change that commits does all of it: password, new stamp, sessions ended, event", async (t) => {
    const { store } = await faultableStore(t);
    const { user } = await withSession(store);
    await store.update(user.id, { hashedPassword: "new-hash" }, { endSessions: true, events: [EVENT] });
    const after = await store.findById(user.id);
    assert.equal(after?.hashedPassword, "new-hash");
    assert.notEqual(after?.credentialStamp, user.credentialStamp);
    assert.ok(after?.credentialsChangedAt);
    assert.equal(await liveSessions(store, user.id), 0);
    assert.deepEqual(
      (await store.listEvents({ userId: user.id, limit: 10 })).map((event) => event.type),
      ["password_change"],
    );
  });

  test("a sign-up whose event cannot be written creates no user", async (t) => {
    const { store, failOn } = await faultableStore(t);
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.create(
        { email: "ada@example.com", hashedPassword: "h" },
        { events: [{ type: "signup", outcome: "success", clientAddress: null }] },
      ),
    );
    assert.equal(await store.findByEmail("ada@example.com"), undefined);
  });

  test("a deletion whose event cannot be written deletes nothing", async (t) => {
    const { store, failOn } = await faultableStore(t);
    const { user } = await withSession(store);
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.remove(user.id, { events: [{ type: "deletion", outcome: "by_self", clientAddress: null }] }),
    );
    assert.ok(await store.findById(user.id));
    assert.equal(await liveSessions(store, user.id), 1);
  });

  test("a role change or deactivation whose event cannot be written changes nothing", async (t) => {
    const { store, failOn } = await faultableStore(t);
    const { user } = await withSession(store);
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.update(
        user.id,
        { isActive: false, isAdmin: true },
        { endSessions: true, events: [{ type: "deactivation", outcome: "success", clientAddress: null }] },
      ),
    );
    const after = await store.findById(user.id);
    assert.equal(after?.isActive, true);
    assert.equal(after?.isAdmin, false);
    assert.equal(await liveSessions(store, user.id), 1);
  });

  test("a login whose event cannot be written leaves no session", async (t) => {
    const { store, failOn } = await faultableStore(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.createSession(newSession(user.id), {
        maxPerUser: 10,
        events: [{ type: "login", outcome: "success", clientAddress: null }],
      }),
    );
    assert.equal(await liveSessions(store, user.id), 0);
  });

  test("a logout whose event cannot be written leaves the session live", async (t) => {
    const { store, failOn } = await faultableStore(t);
    const { user, session } = await withSession(store);
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.revokeSession(session.id, iso(), [
        { type: "session_revocation", outcome: "logged_out", clientAddress: null },
      ]),
    );
    assert.equal(await liveSessions(store, user.id), 1);
  });

  test("an e-mail confirmation whose event cannot be written spends no link and changes no address", async (t) => {
    const { store, failOn, clear } = await faultableStore(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
    const message = (recipient: string): NewOutboxMessage => ({
      kind: "email_changed",
      recipient,
      userId: user.id,
      payload: "{}",
      messageDomain: "example.com",
    });
    // One link verifies the current address, the other would move the account to a new one. (A new
    // link spends the older ones, so each is issued just before it is tried.)
    for (const [tokenHash, email] of [
      ["verify", user.email],
      ["move", "new@example.com"],
    ] as const) {
      await store.issueAccountToken(
        { tokenHash, userId: user.id, purpose: "email_verification", email, expiresAt: iso(3600) },
        message(email),
      );
      const queued = (await store.listMail({ limit: 100 })).length;
      await failOn("audit_events", "INSERT");
      await assert.rejects(
        store.confirmEmail(
          tokenHash,
          iso(),
          (previous) => message(previous),
          (changed) => ({ type: changed ? "email_change" : "email_verification", outcome: "x", clientAddress: null }),
        ),
      );
      await clear();
      assert.equal((await store.findAccountToken(tokenHash))?.spentAt, null, `${tokenHash}: the link still works`);
      assert.equal((await store.listMail({ limit: 100 })).length, queued, `${tokenHash}: no notice queued`);
    }
    const after = await store.findById(user.id);
    assert.equal(after?.email, "ada@example.com");
    assert.equal(after?.emailVerifiedAt, null);
  });

  test("a link request whose event cannot be written stores no link and queues no mail", async (t) => {
    const { store, failOn } = await faultableStore(t);
    const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
    await failOn("audit_events", "INSERT");
    await assert.rejects(
      store.issueAccountToken(
        { tokenHash: "reset", userId: user.id, purpose: "password_reset", email: user.email, expiresAt: iso(3600) },
        { kind: "password_reset", recipient: user.email, userId: user.id, payload: "{}", messageDomain: "example.com" },
        [{ type: "password_reset", outcome: "requested", clientAddress: null }],
      ),
    );
    assert.equal(await store.findAccountToken("reset"), undefined);
    assert.equal((await store.listMail({ limit: 10 })).length, 0);
  });

  describe("second factors", () => {
    const FACTOR_EVENT: AuditEntry = { type: "second_factor", outcome: "totp_added", clientAddress: null };

    /** A user with a confirmed factor (last step 100) and two recovery codes. */
    async function withFactor(store: UserStore) {
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      await store.startTotp(user.id, "sealed");
      await store.confirmTotp(user.id, 100, ["code-a", "code-b"]);
      return user;
    }

    test("a confirmation whose event cannot be written leaves the factor pending and no recovery codes", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      await store.startTotp(user.id, "sealed");
      await failOn("audit_events", "INSERT");
      await assert.rejects(store.confirmTotp(user.id, 100, ["code-a", "code-b"], [FACTOR_EVENT]));
      assert.equal((await store.findTotp(user.id))?.confirmedAt, null);
      assert.deepEqual(await store.secondFactorsOf(user.id), { totp: false, recoveryCodesRemaining: 0, passkeys: 0 });
    });

    test("a confirmation that fails at its recovery codes leaves the factor pending", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      await store.startTotp(user.id, "sealed");
      await failOn("recovery_codes", "INSERT");
      await assert.rejects(store.confirmTotp(user.id, 100, ["code-a"], [FACTOR_EVENT]));
      assert.equal((await store.findTotp(user.id))?.confirmedAt, null);
    });

    test("a code's acceptance whose event cannot be written leaves the last step as it was", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await withFactor(store);
      await failOn("audit_events", "INSERT");
      await assert.rejects(store.acceptTotpStep(user.id, 101, [FACTOR_EVENT]));
      assert.equal((await store.findTotp(user.id))?.lastStep, 100);
    });

    test("a recovery code's use whose event cannot be written leaves the code unused", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await withFactor(store);
      await failOn("audit_events", "INSERT");
      await assert.rejects(store.useRecoveryCode(user.id, ["code-a"], iso(), [FACTOR_EVENT]));
      assert.equal((await store.secondFactorsOf(user.id)).recoveryCodesRemaining, 2);
    });

    test("new recovery codes that cannot all be written leave the old ones", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await withFactor(store);
      await failOn("audit_events", "INSERT");
      await assert.rejects(store.replaceRecoveryCodes(user.id, ["code-c", "code-d", "code-e"], [FACTOR_EVENT]));
      assert.equal((await store.secondFactorsOf(user.id)).recoveryCodesRemaining, 2);
      assert.equal(await store.useRecoveryCode(user.id, ["code-a"], iso()), true);
    });

    for (const [verb, remove] of [
      [
        "turning the app off",
        (store: UserStore, userId: string) =>
          store.removeTotp(userId, { dropRecoveryCodes: true, events: [FACTOR_EVENT] }),
      ],
      ["the admin reset", (store: UserStore, userId: string) => store.resetSecondFactors(userId, [FACTOR_EVENT])],
    ] as const) {
      test(`${verb} whose event cannot be written removes nothing`, async (t) => {
        const { store, failOn } = await faultableStore(t);
        const user = await withFactor(store);
        await failOn("audit_events", "INSERT");
        await assert.rejects(remove(store, user.id));
        assert.deepEqual(await store.secondFactorsOf(user.id), { totp: true, recoveryCodesRemaining: 2, passkeys: 0 });
      });

      test(`${verb} that commits removes the factor, the codes and records the event`, async (t) => {
        const { store } = await faultableStore(t);
        const user = await withFactor(store);
        await remove(store, user.id);
        assert.deepEqual(await store.secondFactorsOf(user.id), { totp: false, recoveryCodesRemaining: 0, passkeys: 0 });
        const events = await store.listEvents({ userId: user.id, limit: 10, type: "second_factor" });
        assert.equal(events.length, 1);
      });
    }
  });

  describe("passkeys", () => {
    const PASSKEY_EVENT: AuditEntry = { type: "passkey", outcome: "added", clientAddress: null };

    const NEW_PASSKEY: Omit<NewPasskey, "userId"> = {
      credentialId: "credential-1",
      publicKey: "key",
      counter: 5,
      transports: ["internal"],
      name: "Laptop",
      deviceType: "singleDevice",
      backedUp: false,
      aaguid: null,
    };

    async function withPasskey(store: UserStore) {
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      const passkey = await store.addPasskey({ ...NEW_PASSKEY, userId: user.id });
      assert.ok(passkey);
      return { user, passkey };
    }

    test("a passkey whose event cannot be written is not added", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      await failOn("audit_events", "INSERT");
      await assert.rejects(
        store.addPasskey(
          {
            userId: user.id,
            credentialId: "credential-1",
            publicKey: "key",
            counter: 0,
            transports: [],
            name: "Laptop",
            deviceType: "singleDevice",
            backedUp: false,
            aaguid: null,
          },
          [PASSKEY_EVENT],
        ),
      );
      assert.equal(await store.countPasskeys(user.id), 0);
    });

    for (const table of ["audit_events", "recovery_codes"]) {
      test(`a first passkey that fails at its ${table} is not added, nor are its recovery codes`, async (t) => {
        const { store, failOn } = await faultableStore(t);
        const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
        await failOn(table, "INSERT");
        await assert.rejects(store.addPasskey({ ...NEW_PASSKEY, userId: user.id }, [PASSKEY_EVENT], ["a", "b"]));
        assert.deepEqual(await store.secondFactorsOf(user.id), { totp: false, recoveryCodesRemaining: 0, passkeys: 0 });
      });
    }

    test("a passkey added with recovery codes stores both and the events", async (t) => {
      const { store } = await faultableStore(t);
      const { user } = await withPasskey(store);
      await store.replaceRecoveryCodes(user.id, ["spent"]);
      assert.equal(await store.useRecoveryCode(user.id, ["spent"], iso()), true);
      const added = await store.addPasskey(
        { ...NEW_PASSKEY, userId: user.id, credentialId: "credential-2" },
        [PASSKEY_EVENT, { type: "second_factor", outcome: "recovery_codes_generated", clientAddress: null }],
        ["code-a", "code-b"],
      );
      assert.equal(added?.credentialId, "credential-2");
      assert.deepEqual(await store.secondFactorsOf(user.id), { totp: false, recoveryCodesRemaining: 2, passkeys: 2 });
      assert.equal(await store.useRecoveryCode(user.id, ["spent"], iso()), false, "the spent code is gone");
      const events = await store.listEvents({ userId: user.id, limit: 10 });
      assert.deepEqual(
        events.map((e) => e.outcome),
        ["added", "recovery_codes_generated"],
      );
    });

    test("a rename, removal or use whose event cannot be written changes nothing", async (t) => {
      const { store, failOn } = await faultableStore(t);
      const { user, passkey } = await withPasskey(store);
      await failOn("audit_events", "INSERT");
      await assert.rejects(store.renamePasskey(user.id, passkey.id, "Phone", [PASSKEY_EVENT]));
      await assert.rejects(store.removePasskey(user.id, passkey.id, [PASSKEY_EVENT]));
      await assert.rejects(
        store.recordPasskeyUse(passkey.id, { previousCounter: 5, counter: 6, backedUp: true, at: iso() }, [
          PASSKEY_EVENT,
        ]),
      );
      const [after] = await store.listPasskeys(user.id);
      assert.deepEqual([after?.name, after?.counter, after?.backedUp, after?.lastUsedAt], ["Laptop", 5, false, null]);
    });

    test("of two uses of one counter value only the first is recorded (compare and set)", async (t) => {
      const { store } = await faultableStore(t);
      const { user, passkey } = await withPasskey(store);
      const use = { previousCounter: 5, counter: 6, backedUp: false, at: iso() };
      const results = await Promise.all([
        store.recordPasskeyUse(passkey.id, use),
        store.recordPasskeyUse(passkey.id, use),
      ]);
      assert.deepEqual(results.sort(), [false, true]);
      assert.equal((await store.listPasskeys(user.id))[0]?.counter, 6);
    });

    test("a challenge is taken once, only for its purpose, and not after it expired", async (t) => {
      const { store } = await faultableStore(t);
      const user = await store.create({ email: "ada@example.com", hashedPassword: "h" });
      const save = (id: string, hash: string, expiresAt = iso(300)) =>
        store.saveWebAuthnChallenge({ id, challengeHash: hash, purpose: "registration", userId: user.id, expiresAt });
      const [a, b, c] = [newId(), newId(), newId()];
      await save(a, "hash-a");
      const taken = await Promise.all([
        store.takeWebAuthnChallenge({ id: a }, "registration", iso()),
        store.takeWebAuthnChallenge({ challengeHash: "hash-a" }, "registration", iso()),
      ]);
      assert.equal(taken.filter(Boolean).length, 1);
      await save(b, "hash-b");
      assert.equal(await store.takeWebAuthnChallenge({ id: b }, "login", iso()), undefined);
      assert.equal(
        await store.takeWebAuthnChallenge({ id: b }, "registration", iso()),
        undefined,
        "spent by the wrong use",
      );
      await save(c, "hash-c", iso(-1));
      assert.equal(await store.takeWebAuthnChallenge({ id: c }, "registration", iso()), undefined);
      assert.equal(await store.takeWebAuthnChallenge({ id: "not-a-uuid" }, "registration", iso()), undefined);
    });
  });

  describe("a proof of the address (proveAddress)", () => {
    const ISSUER = "https://idp.example";
    /**
     * An account never verified, holding every way in: a password, a live session, a passkey, an
     * authenticator app with recovery codes, an upstream identity, a pending change of address.
     */
    async function preHijacked(store: UserStore) {
      const { user } = await withSession(store);
      const passkey = { credentialId: "attacker-key", publicKey: "key", counter: 0, transports: [], name: "Key" };
      await store.addPasskey(
        { ...passkey, userId: user.id, deviceType: "singleDevice", backedUp: false, aaguid: null },
        [],
        ["code-a"],
      );
      await store.startTotp(user.id, "sealed");
      await store.confirmTotp(user.id, 100, undefined);
      await store.linkIdentity(identity(user.id, "attacker"));
      await store.issueAccountToken(
        {
          tokenHash: "change",
          userId: user.id,
          purpose: "email_verification",
          email: "x@evil.example",
          expiresAt: iso(3600),
        },
        {
          kind: "email_verification",
          recipient: "x@evil.example",
          userId: user.id,
          payload: "{}",
          messageDomain: "e.x",
        },
      );
      return user;
    }
    const identity = (userId: string, subject: string) => ({
      id: newId(),
      userId,
      provider: "corp",
      issuer: ISSUER,
      subject,
      email: null,
      sealedTokens: null,
      createdAt: iso(),
    });
    const prove = (store: UserStore, userId: string) =>
      store.proveAddress(userId, (user) => mailedLinkPlan(user, "ada@example.com"), {
        link: identity(userId, "owner"),
        events: (ended) => [
          ...endedEvents("upstream", ended, null),
          { type: "upstream", outcome: "linked_by_mail:corp", clientAddress: null },
        ],
      });
    /** Everything the attacker held, as it is now. */
    async function holdings(store: UserStore, userId: string) {
      const user = await store.findById(userId);
      return {
        hashedPassword: user?.hashedPassword,
        verified: user?.emailVerifiedAt !== null,
        stamp: user?.credentialStamp,
        sessions: await liveSessions(store, userId),
        factors: await store.secondFactorsOf(userId),
        identities: (await store.listIdentities(userId)).map((each) => each.subject),
        change: (await store.findAccountToken("change"))?.spentAt ?? null,
      };
    }

    for (const [step, table, operation] of [
      ["the audit event", "audit_events", "INSERT"],
      ["the link", "upstream_identities", "INSERT"],
      ["the end of the sessions", "sessions", "UPDATE"],
    ] as const) {
      test(`one that fails at ${step} ends nothing and links nothing`, async (t) => {
        const { store, failOn, clear } = await faultableStore(t);
        const user = await preHijacked(store);
        const before = await holdings(store, user.id);
        await failOn(table, operation);
        await assert.rejects(prove(store, user.id));
        await clear();
        assert.deepEqual(await holdings(store, user.id), before);
      });
    }

    test("one whose identity is another account's ends nothing", async (t) => {
      const { store } = await faultableStore(t);
      const user = await preHijacked(store);
      const other = await store.create({ email: "bob@example.com", hashedPassword: "h" });
      await store.linkIdentity(identity(other.id, "owner"));
      const before = await holdings(store, user.id);
      assert.deepEqual(await prove(store, user.id), { outcome: "elsewhere" });
      assert.deepEqual(await holdings(store, user.id), before);
    });

    test("one that commits does all of it, with its events", async (t) => {
      const { store } = await faultableStore(t);
      const user = await preHijacked(store);
      const proven = await prove(store, user.id);
      assert.equal(proven.outcome, "proven");
      const after = await holdings(store, user.id);
      assert.notEqual(after.stamp, user.credentialStamp);
      assert.deepEqual(
        { ...after, stamp: "" },
        {
          hashedPassword: "",
          verified: true,
          stamp: "",
          sessions: 0,
          factors: { totp: false, recoveryCodesRemaining: 0, passkeys: 0 },
          identities: ["owner"],
          change: after.change,
        },
      );
      assert.notEqual(after.change, null, "the pending change of address is spent");
      assert.deepEqual(
        (await store.listEvents({ userId: user.id, limit: 10, type: "upstream" })).map((event) => event.outcome),
        [
          "unproven_ways_ended:password,passkeys,second_factors,identities,email_changes,sessions",
          "linked_by_mail:corp",
        ],
      );
    });
  });
});
