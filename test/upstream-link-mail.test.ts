// Proving an account by a link mailed to it (issue 25: "otherwise the user
// proves the account (password, or a link mailed to it) before it is
// linked"), in process with GitHub as the provider and a real SMTP server
// (test/mail-server.ts): the mail (its text, its link built from the
// settings), nothing linked before the link is used; the link works once,
// for ten minutes, only in the browser that started the sign-in (another
// browser leaves it usable), only while the address is still the account's;
// it is stored hashed; it goes back to the app's authorization request; a
// second factor of a verified account still applies; the mail-request limit.
// What the link ends on an account never verified: test/security/account-linking.test.ts.
// Both backends.
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { TOO_MANY_MAIL_REQUESTS } from "../src/auth/rate-limits.ts";
import { IDENTITY_ELSEWHERE, INVALID_LINK_TICKET, INVALID_MAILED_LINK, LINK_MAILED } from "../src/upstream/routes.ts";
import { hashOf } from "../src/upstream/sign-in.ts";
import { createUser, requestToken, TestClock, testConfig } from "./helpers.ts";
import { MailServer, tokenIn } from "./mail-server.ts";
import { rawStore } from "./raw-store.ts";
import { addTestPasskey } from "./upstream/fixture.ts";
import { octo, startGithubService } from "./upstream/github-service.ts";

const PASSWORD = "correct horse battery";
const GRANT = "urn:user-token-service:grant-type:upstream";
const CONTINUE = "/oauth/authorize?client_id=app&response_type=code";

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

/** A unique address per test, so tests sharing the SMTP server read their own mail. */
let counter = 0;
const address = () => `link${++counter}.${process.pid}@example.com`;

async function setUp(t: TestContext, config: Parameters<typeof testConfig>[0] = {}) {
  const clock = new TestClock();
  const raw = await rawStore(t, clock.read);
  const base = testConfig();
  const s = await startGithubService(t, {
    store: raw.store,
    clock,
    config: { mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 }, ...config },
  });
  const email = address();
  s.setUser(octo(4242, email));
  const owner = await createUser(s.store, email, PASSWORD);

  /** An upstream sign-in that finds the account: the link ticket and the browser's cookie. */
  async function linkTicket() {
    const { callback, cookie } = await s.signIn();
    const ticket = /^\/sign-in#link=([\w-]{43})$/.exec(callback.headers.location as string)?.[1];
    assert.ok(ticket, callback.headers.location as string);
    return { ticket, cookie };
  }
  const askMail = (body: object, cookie?: string) =>
    s.app.inject({
      method: "POST",
      url: "/auth/upstream/link/mail",
      payload: body,
      headers: cookie ? { cookie } : {},
    });
  const confirm = (token: string, cookie?: string) =>
    s.app.inject({
      method: "POST",
      url: "/auth/upstream/link/mail/confirm",
      payload: { token },
      headers: cookie ? { cookie } : {},
    });
  return { ...s, raw, email, owner, linkTicket, askMail, confirm };
}

describe("proving the account by a mailed link", () => {
  test("the mail, nothing linked before; the link works once, in its browser only; then the upstream grant signs in", async (t) => {
    const s = await setUp(t);
    const { ticket, cookie } = await s.linkTicket();
    const asked = await s.askMail({ ticket }, cookie);
    assert.equal(asked.statusCode, 202, asked.body);
    assert.deepEqual(asked.json(), { message: LINK_MAILED });
    // The binding cookie is set again, for as long as the link works.
    assert.equal(asked.headers["set-cookie"], `${cookie}; Path=/; HttpOnly; SameSite=Lax; Max-Age=600`);
    assert.deepEqual(await s.store.listIdentities(s.owner.id), [], "nothing linked before the link is used");
    // The link ticket is spent: neither the password way nor a second mail.
    assert.deepEqual((await s.askMail({ ticket }, cookie)).json(), { detail: INVALID_LINK_TICKET });

    const [mail] = await smtp.mailsTo(s.email);
    assert.ok(mail);
    assert.equal(mail.subject, "Link your GitHub sign-in to your account");
    const token = tokenIn(mail);
    assert.equal(
      mail.text,
      "Someone (we hope you) signed in with GitHub and asked to link that sign-in to the account with this " +
        "e-mail address. Open this link to confirm that the account is yours and link it:\n\n" +
        `${testConfig().accountRecovery.linkBaseUrl}/sign-in?link=mail#token=${token}\n\n` +
        "The link works once, for 10 minutes, and only in the browser where the sign-in was started.\n\n" +
        "If you did not ask for this, ignore this message: nothing is linked, and no one can sign in to your " +
        "account with GitHub.\n",
    );
    // Stored as its hash only.
    const dump = await s.raw.dump();
    assert.equal(dump.includes(token), false);
    assert.equal(dump.includes(hashOf(token)), true);

    // Another browser, or none: refused, and the link stays usable in its own browser.
    for (const other of ["uts_upstream=another-browser", undefined]) {
      const refused = await s.confirm(token, other);
      assert.equal(refused.statusCode, 400);
      assert.deepEqual(refused.json(), { detail: INVALID_MAILED_LINK });
    }
    assert.deepEqual(await s.store.listIdentities(s.owner.id), []);
    const confirmed = await s.confirm(token, cookie);
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    assert.deepEqual(Object.keys(confirmed.json()).sort(), ["continue", "upstream_ticket"]);
    assert.equal(confirmed.json().continue, null);
    assert.match(confirmed.json().upstream_ticket, /^[\w-]{43}$/);
    const [identity] = await s.store.listIdentities(s.owner.id);
    assert.equal(identity?.subject, "4242");
    // Once only.
    assert.deepEqual((await s.confirm(token, cookie)).json(), { detail: INVALID_MAILED_LINK });

    const tokens = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: confirmed.json().upstream_ticket },
      { cookie },
    );
    assert.equal(tokens.statusCode, 200, tokens.body);
    const claims = JSON.parse(Buffer.from(tokens.json().access_token.split(".")[1], "base64url").toString());
    assert.equal(claims.sub, s.email);
    assert.deepEqual(claims.amr, ["fed"]);
    // From now on the GitHub sign-in lands in the account at once.
    assert.match((await s.signIn()).callback.headers.location as string, /^\/sign-in#upstream=/);
    const events = await s.store.listEvents({ userId: s.owner.id, limit: 50, type: "upstream" });
    assert.deepEqual(
      events.map((event) => event.outcome),
      // The owner's address was never verified: the mail proved it, and ended the password nobody proved.
      ["link_mailed:github", "unproven_ways_ended:password", "linked_by_mail:github"],
    );
    const proven = await s.store.findById(s.owner.id);
    assert.equal(proven?.hashedPassword, "");
    assert.notEqual(proven?.emailVerifiedAt, null);
  });

  test("goes back to the app's authorization request (this service's only); expires after ten minutes", async (t) => {
    const s = await setUp(t);
    const first = await s.linkTicket();
    assert.equal((await s.askMail({ ticket: first.ticket, continue: CONTINUE }, first.cookie)).statusCode, 202);
    const [mail] = await smtp.mailsTo(s.email);
    const confirmed = await s.confirm(tokenIn(mail!), first.cookie);
    assert.equal(confirmed.json().continue, CONTINUE);
    const { id } = (await s.store.listIdentities(s.owner.id))[0]!;
    await s.store.unlinkIdentity(s.owner.id, id);

    const second = await s.linkTicket();
    const elsewhere = { ticket: second.ticket, continue: "https://evil.example/oauth/authorize?x" };
    assert.equal((await s.askMail(elsewhere, second.cookie)).statusCode, 202);
    const [, late] = await smtp.mailsTo(s.email, 2);
    s.clock.advanceSeconds(601);
    assert.deepEqual((await s.confirm(tokenIn(late!), second.cookie)).json(), { detail: INVALID_MAILED_LINK });
    s.clock.advanceSeconds(-601);
    const third = await s.linkTicket();
    assert.equal((await s.askMail({ ticket: third.ticket, continue: "/elsewhere" }, third.cookie)).statusCode, 202);
    const [, , last] = await smtp.mailsTo(s.email, 3);
    // A newer link replaced the older one.
    assert.deepEqual((await s.confirm(tokenIn(late!), second.cookie)).json(), { detail: INVALID_MAILED_LINK });
    const answer = await s.confirm(tokenIn(last!), third.cookie);
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.json().continue, null);
  });

  test("refused: a ticket from another browser, an address that changed since, an identity linked elsewhere", async (t) => {
    const s = await setUp(t);
    const stolen = await s.linkTicket();
    const refused = await s.askMail({ ticket: stolen.ticket }, "uts_upstream=another-browser");
    assert.equal(refused.statusCode, 400);
    assert.deepEqual(refused.json(), { detail: INVALID_LINK_TICKET });
    assert.equal(refused.headers["set-cookie"], undefined);

    const changed = await s.linkTicket();
    await s.askMail({ ticket: changed.ticket }, changed.cookie);
    const [mail] = await smtp.mailsTo(s.email);
    await s.store.update(s.owner.id, { email: address() });
    assert.deepEqual((await s.confirm(tokenIn(mail!), changed.cookie)).json(), { detail: INVALID_MAILED_LINK });
    assert.deepEqual(await s.store.listIdentities(s.owner.id), []);
    await s.store.update(s.owner.id, { email: s.email });

    const raced = await s.linkTicket();
    await s.askMail({ ticket: raced.ticket }, raced.cookie);
    const [, racedMail] = await smtp.mailsTo(s.email, 2);
    // Meanwhile the identity was linked to another account.
    const other = await createUser(s.store, address(), PASSWORD);
    await s.store.linkIdentity({
      id: "00000000-0000-7000-8000-000000000001",
      userId: other.id,
      provider: "github",
      issuer: (await s.app.inject({ method: "GET", url: "/auth/upstream/github/start" })).headers
        .location!.toString()
        .replace(/\/login\/oauth\/authorize.*$/, ""),
      subject: "4242",
      email: null,
      sealedTokens: null,
      createdAt: new Date(s.clock.now).toISOString(),
    });
    const answer = await s.confirm(tokenIn(racedMail!), raced.cookie);
    assert.equal(answer.statusCode, 409);
    assert.deepEqual(answer.json(), { detail: IDENTITY_ELSEWHERE });
    assert.deepEqual(await s.store.listIdentities(s.owner.id), []);
  });

  test("a second factor of an account whose address is verified still applies after the mailed link", async (t) => {
    const s = await setUp(t);
    // Verified: the mailed link only links (on an account never verified it would end the passkey).
    await s.store.update(s.owner.id, { emailVerifiedAt: new Date(s.clock.now).toISOString() });
    await addTestPasskey(s.store, s.owner.id);
    const { ticket, cookie } = await s.linkTicket();
    await s.askMail({ ticket }, cookie);
    const [mail] = await smtp.mailsTo(s.email);
    const confirmed = await s.confirm(tokenIn(mail!), cookie);
    const answer = await requestToken(
      s.app,
      { grant_type: GRANT, upstream_ticket: confirmed.json().upstream_ticket },
      { cookie },
    );
    assert.equal(answer.statusCode, 403, answer.body);
    assert.equal(answer.json().error, "mfa_required");
    assert.deepEqual(answer.json().mfa_factors, ["webauthn"]);
  });

  test("the mail-request limit of reset and verification mails applies: 429 with Retry-After", async (t) => {
    const base = testConfig();
    const s = await setUp(t, { rateLimit: { ...base.rateLimit, enabled: true, mailRequestsPerEmail: 1 } });
    const first = await s.linkTicket();
    assert.equal((await s.askMail({ ticket: first.ticket }, first.cookie)).statusCode, 202);
    const second = await s.linkTicket();
    const refused = await s.askMail({ ticket: second.ticket }, second.cookie);
    assert.equal(refused.statusCode, 429);
    assert.deepEqual(refused.json(), { detail: TOO_MANY_MAIL_REQUESTS });
    assert.match(String(refused.headers["retry-after"]), /^\d+$/);
    assert.equal((await smtp.mailsTo(s.email)).length, 1);
  });
});
