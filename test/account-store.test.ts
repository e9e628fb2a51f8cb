// The store verbs behind account recovery and the outbox, on each backend
// (in-memory SQLite here, PostgreSQL in the second run): a new link spends
// the older ones with its mail queued in the same transaction, a redemption
// spends the token and its siblings, claims are exclusive until their lease
// ends, a stale sender cannot record an outcome, and old records are pruned.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { NewOutboxMessage } from "../src/store/store.ts";
import { createUser, openTestStore } from "./helpers.ts";

const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();
const mail = (recipient: string): NewOutboxMessage => ({
  kind: "password_reset",
  recipient,
  userId: null,
  payload: "{}",
  messageDomain: "example.com",
});

describe("account token and outbox store verbs", () => {
  test("a new token spends the older live ones of its purpose and queues its mail", async (t) => {
    const store = await openTestStore(t);
    const user = await createUser(store, "ada@example.com", "correct horse battery");
    const token = (hash: string, purpose: "password_reset" | "email_verification" = "password_reset") => ({
      tokenHash: hash,
      userId: user.id,
      purpose,
      email: user.email,
      expiresAt: iso(60_000),
    });
    await store.issueAccountToken(token("one"), mail(user.email));
    await store.issueAccountToken(token("verify", "email_verification"), mail(user.email));
    await store.issueAccountToken(token("two"), mail(user.email));
    assert.notEqual((await store.findAccountToken("one"))?.spentAt, null);
    assert.equal((await store.findAccountToken("two"))?.spentAt, null);
    assert.equal((await store.findAccountToken("verify"))?.spentAt, null, "other purposes are untouched");
    assert.equal((await store.listMail({ limit: 10 })).length, 3);

    assert.equal((await store.redeemAccountToken("one", "password_reset", iso())).outcome, "spent");
    assert.equal((await store.redeemAccountToken("two", "email_verification", iso())).outcome, "invalid");
    assert.equal((await store.redeemAccountToken("two", "password_reset", iso(120_000))).outcome, "expired");
    const redeemed = await store.redeemAccountToken("two", "password_reset", iso());
    assert.equal(redeemed.outcome, "redeemed");
    assert.equal((await store.redeemAccountToken("two", "password_reset", iso())).outcome, "spent");
  });

  test("a mail is written only with its token: a failing token insert leaves no mail behind", async (t) => {
    const store = await openTestStore(t);
    const user = await createUser(store, "ada@example.com", "correct horse battery");
    const token = { tokenHash: "same", userId: user.id, purpose: "password_reset" as const, email: user.email };
    await store.issueAccountToken({ ...token, expiresAt: iso(60_000) }, mail("first@example.com"));
    await assert.rejects(store.issueAccountToken({ ...token, expiresAt: iso(60_000) }, mail("second@example.com")));
    assert.deepEqual(
      (await store.listMail({ limit: 10 })).map((message) => message.recipient),
      ["first@example.com"],
    );
  });

  test("claims are exclusive until the lease ends; a stale sender cannot record an outcome", async (t) => {
    const store = await openTestStore(t);
    for (const n of [1, 2, 3]) await store.enqueueMail(mail(`m${n}@example.com`));
    const first = await store.claimMail("a", iso(), iso(60_000), 2);
    const second = await store.claimMail("b", iso(), iso(60_000), 10);
    assert.equal(first.length, 2);
    assert.equal(second.length, 1);
    assert.equal(new Set([...first, ...second].map((message) => message.id)).size, 3);
    assert.ok([...first, ...second].every((message) => message.attempts === 1));
    assert.match(first[0]!.messageId, /^<[0-9a-f-]{36}@example\.com>$/);

    // After the lease, another sender may take the message over; the first one's late outcome is ignored.
    const [taken] = await store.claimMail("c", iso(120_000), iso(180_000), 1);
    assert.ok(taken);
    assert.equal(taken.attempts, 2);
    const staleOwner = first.some((message) => message.id === taken.id) ? "a" : "b";
    await store.completeMail(taken.id, staleOwner, { status: "sent", at: iso() });
    assert.equal((await store.listMail({ status: "sent", limit: 10 })).length, 0);
    await store.completeMail(taken.id, "c", { status: "sent", at: iso() });
    const [sent] = await store.listMail({ status: "sent", limit: 10 });
    assert.equal(sent?.payload, "{}", "a sent message keeps no payload");

    const other = [...first, ...second].find((message) => message.id !== taken.id)!;
    const otherOwner = first.some((message) => message.id === other.id) ? "a" : "b";
    await store.completeMail(other.id, otherOwner, { status: "failed", error: "550 no such user" });
    assert.equal((await store.listMail({ status: "failed", limit: 10 }))[0]?.lastError, "550 no such user");
    assert.equal(await store.retryFailedMail(undefined, iso()), 1);
    // The retried one is due now; the third is still leased (to a or b, or c's claim did not take it).
    const reclaimed = await store.claimMail("d", iso(), iso(60_000), 10);
    assert.ok(reclaimed.some((message) => message.id === other.id));
  });

  test("a message waiting for a retry is not claimed before its time", async (t) => {
    const store = await openTestStore(t);
    await store.enqueueMail(mail("later@example.com"));
    const [message] = await store.claimMail("a", iso(), iso(60_000), 1);
    await store.completeMail(message!.id, "a", { status: "pending", nextAttemptAt: iso(30_000), error: "down" });
    assert.equal((await store.claimMail("b", iso(), iso(60_000), 1)).length, 0);
    assert.equal((await store.claimMail("b", iso(31_000), iso(90_000), 1)).length, 1);
  });

  test("pruning deletes long-expired tokens and old sent mail; failed mail only once it was queued before the cutoff", async (t) => {
    const store = await openTestStore(t);
    const user = await createUser(store, "ada@example.com", "correct horse battery");
    await store.issueAccountToken(
      { tokenHash: "old", userId: user.id, purpose: "password_reset", email: user.email, expiresAt: iso(-60_000) },
      mail("sent@example.com"),
    );
    await store.enqueueMail(mail("failed@example.com"));
    const claimed = await store.claimMail("a", iso(), iso(60_000), 10);
    for (const message of claimed) {
      await store.completeMail(
        message.id,
        "a",
        message.recipient === "sent@example.com"
          ? { status: "sent", at: iso(-120_000) }
          : { status: "failed", error: "x" },
      );
    }
    // The cutoff a minute ago: the mail sent two minutes ago goes, the failed one queued just now stays.
    assert.equal(await store.pruneAccountRecords(iso(), iso(-60_000), 100), 2);
    assert.equal(await store.findAccountToken("old"), undefined);
    assert.deepEqual(
      (await store.listMail({ limit: 10 })).map((message) => message.status),
      ["failed"],
    );
    // Once it was queued before the cutoff, the failed mail goes too; pending mail never does.
    await store.enqueueMail(mail("pending@example.com"));
    assert.equal(await store.pruneAccountRecords(iso(), iso(1000), 100), 1);
    assert.deepEqual(
      (await store.listMail({ limit: 10 })).map((message) => [message.recipient, message.status]),
      [["pending@example.com", "pending"]],
    );
  });
});
