// Sign-in with upstream providers in Chromium (issue 25): a real OpenID
// Connect provider (panva's oidc-provider, configured like Google with
// email_verified) and a server speaking GitHub's OAuth endpoints, driven
// through the service's sign-in page: an app's authorization request
// continued after an upstream sign-in that creates the account (the app then
// gets its tokens through the code flow, the ID token naming that account);
// a second sign-in landing in the same account; GitHub creating an account;
// an existing password account linked after its password, then unlinked on
// the security page; a second factor still asked after an upstream sign-in;
// the domain allow-list (a refused domain ends on its page, nothing created);
// automatic linking off (the owner proves the account, here by the link
// mailed to it through a real SMTP server) and on (linked at once when the
// provider says the address is verified and the account's own address is
// verified, never otherwise).
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import * as client from "openid-client";
import type { Browser, Page } from "playwright-core";
import type { UpstreamConfig } from "../../src/upstream/settings.ts";
import { DOMAIN_NOT_ALLOWED } from "../../src/upstream/sign-in.ts";
import { createUser, testConfig } from "../helpers.ts";
import { linkIn, MailServer } from "../mail-server.ts";
import { type OidcService, startOidcService, startRelyingParty } from "../oidc/fixture.ts";
import {
  addTestPasskey,
  type GithubUser,
  startFakeGithub,
  startOidcUpstream,
  UPSTREAM_CLIENT,
} from "../upstream/fixture.ts";
import { freePort, launchChromium, STEP_TIMEOUT, skipWithoutChromium } from "./chromium.ts";

const PASSWORD = "correct horse battery";
const ACCOUNTS = {
  alice: { email: "alice@example.com", email_verified: true, name: "Alice" },
  bob: { email: "bob@example.com", email_verified: true, name: "Bob" },
  carol: { email: "carol@corp.example", email_verified: true, name: "Carol" },
  dave: { email: "dave@example.com", email_verified: false, name: "Dave" },
};

describe("sign-in with upstream providers in Chromium", { skip: skipWithoutChromium("upstream sign-in") }, () => {
  let browser: Browser;
  const smtp = new MailServer();
  before(async () => {
    browser = await launchChromium();
    await smtp.start();
  });
  after(async () => {
    await browser?.close();
    await smtp.stop();
  });

  interface Options {
    /** The corp provider's allow-list. */
    allowedDomains?: string[];
    upstream?: Partial<UpstreamConfig>;
  }

  async function setUp(t: TestContext, options: Options = {}) {
    const rp = await startRelyingParty(t);
    const upstreamPort = await freePort();
    let githubUser: GithubUser = {
      id: 4242,
      login: "octo",
      name: "Octo Cat",
      emails: [
        { email: "octo@users.noreply.example", primary: false, verified: true },
        { email: "octo@example.com", primary: true, verified: true },
      ],
    };
    const github = await startFakeGithub(t, () => githubUser);
    const common = { clientId: UPSTREAM_CLIENT.id, clientSecret: UPSTREAM_CLIENT.secret, allowedDomains: [] };
    const service = await startOidcService(t, rp.origin, {
      upstream: {
        providers: [
          {
            kind: "oidc",
            name: "corp",
            label: "Corp",
            issuer: `http://localhost:${upstreamPort}`,
            scopes: "openid email profile",
            ...common,
            allowedDomains: options.allowedDomains ?? [],
          },
          {
            kind: "github",
            name: "github",
            label: "GitHub",
            webUrl: github,
            apiUrl: github,
            scopes: "read:user user:email",
            ...common,
          },
        ],
        autoLink: false,
        keepTokens: false,
        timeoutMs: 3000,
        ...options.upstream,
      },
      mail: { ...testConfig().mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    });
    await startOidcUpstream(t, [`${service.issuer}/auth/upstream/corp/callback`], ACCOUNTS, upstreamPort);
    return { rp, service, setGithubUser: (user: GithubUser) => (githubUser = user) };
  }

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    return page;
  }

  /** At the upstream provider: its login page, then its consent page. */
  async function upstreamLogin(page: Page, login: string) {
    await page.waitForSelector("input[name=login]");
    await page.fill("input[name=login]", login);
    await page.fill("input[name=password]", "anything");
    await page.click(".login-submit");
    await page.waitForSelector(".login-submit");
    await page.click(".login-submit");
  }

  async function users(service: OidcService) {
    return (await service.store.list({ limit: 100 })).map((user) => user.email).sort();
  }

  /**
   * Bob has a password account; a sign-in at the upstream provider as bob (same e-mail address) comes
   * back to the sign-in page, told the account exists, with nothing linked yet.
   */
  async function upstreamSignInToBobsAccount(t: TestContext) {
    const { service } = await setUp(t);
    const bob = await createUser(service.store, "bob@example.com", PASSWORD);
    const page = await newPage();
    await page.goto(`${service.issuer}/sign-in`);
    await page.click("#upstream-corp");
    await upstreamLogin(page, "bob");
    await page.waitForURL(/\/sign-in$/);
    assert.match((await page.locator("#status").textContent()) ?? "", /An account with this e-mail address exists/);
    return { service, bob, page };
  }

  test("an app's code flow through an upstream sign-in that creates the account; a second sign-in lands in it", async (t) => {
    const { rp, service } = await setUp(t);
    const config = await client.discovery(new URL(service.issuer), service.clients.spa.id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    for (const round of [1, 2]) {
      const page = await newPage();
      const verifier = client.randomPKCECodeVerifier();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: `${rp.origin}/spa/callback`,
        scope: "openid email",
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        nonce,
      });
      const back = rp.next();
      await page.goto(url.href);
      await page.click("#upstream-corp");
      await upstreamLogin(page, "alice");
      const callback = await back;
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedNonce: nonce,
      });
      const claims = tokens.claims();
      const alice = await service.store.findByEmail("alice@example.com");
      assert.ok(alice, `round ${round}: the account exists`);
      assert.equal(claims?.sub, alice.id);
      assert.equal(claims?.email, "alice@example.com");
      assert.equal(claims?.email_verified, true);
      assert.deepEqual(claims?.amr, ["fed"]);
      assert.deepEqual(await users(service), ["alice@example.com"]);
      await page.context().close();
    }
  });

  test("GitHub creates an account with its primary verified address and opens the security page", async (t) => {
    const { service } = await setUp(t);
    const page = await newPage();
    await page.goto(`${service.issuer}/sign-in`);
    await page.click("#upstream-github");
    await page.waitForURL(/\/account\/security$/);
    await page.waitForSelector("#identities-section:not([hidden])");
    assert.equal(await page.locator("#who").textContent(), "Signed in as octo@example.com.");
    assert.equal(await page.locator("#identity-list li strong").textContent(), "GitHub");
    const octo = await service.store.findByEmail("octo@example.com");
    const [identity] = await service.store.listIdentities(octo!.id);
    assert.equal(identity?.subject, "4242");
    // The account's only way to sign in: unlinking is refused.
    await page.click("#identity-list button");
    await page.waitForSelector("#status.error");
    assert.match((await page.locator("#status").textContent()) ?? "", /last way to sign in/);
    await page.context().close();
  });

  test("an existing password account is linked after its password, then unlinked on the security page", async (t) => {
    const { service, bob, page } = await upstreamSignInToBobsAccount(t);
    assert.deepEqual(await service.store.listIdentities(bob.id), [], "nothing linked before the password");
    await page.fill("#email", "bob@example.com");
    await page.fill("#password", PASSWORD);
    await page.click("#password-form button");
    await page.waitForURL(/\/account\/security$/);
    await page.waitForSelector("#identity-list li strong");
    assert.equal(await page.locator("#identity-list li strong").textContent(), "Corp");
    assert.equal((await service.store.listIdentities(bob.id)).length, 1);
    await page.click("#identity-list button");
    await page.waitForSelector("#status.success");
    assert.equal(await page.locator("#status").textContent(), "Corp is unlinked.");
    assert.deepEqual(await service.store.listIdentities(bob.id), []);
    // Linked again from the security page (a signed-in user linking another sign-in). The page is already
    // at /account/security: wait for the callback's own arrival there (#linked), not for the old page.
    const backFromTheProvider = page.waitForEvent(
      "framenavigated",
      (frame) => frame === page.mainFrame() && frame.url().endsWith("/account/security#linked"),
    );
    await page.click("#link-corp");
    await backFromTheProvider;
    await page.waitForSelector("#status.success");
    assert.equal(await page.locator("#status").textContent(), "The sign-in is linked.");
    assert.equal((await service.store.listIdentities(bob.id)).length, 1);
    await page.context().close();
  });

  test("an account with a second factor is asked for it after a GitHub sign-in", async (t) => {
    const { service } = await setUp(t);
    const first = await newPage();
    await first.goto(`${service.issuer}/sign-in`);
    await first.click("#upstream-github");
    await first.waitForURL(/\/account\/security$/);
    await first.context().close();
    const octo = await service.store.findByEmail("octo@example.com");
    await addTestPasskey(service.store, octo!.id);
    const page = await newPage();
    await page.goto(`${service.issuer}/sign-in`);
    await page.click("#upstream-github");
    await page.waitForSelector("#second-factor:not([hidden])");
    assert.equal(await page.locator("#status").textContent(), "Confirm with one of your passkeys.");
    assert.match(page.url(), /\/sign-in$/);
    await page.context().close();
  });

  test("the domain allow-list: a refused domain ends on its page with nothing created; an allowed one signs in", async (t) => {
    const { service } = await setUp(t, { allowedDomains: ["corp.example"] });
    const page = await newPage();
    await page.goto(`${service.issuer}/sign-in`);
    await page.click("#upstream-corp");
    await upstreamLogin(page, "alice");
    await page.waitForSelector("#upstream-error");
    assert.equal(await page.locator("#upstream-error").textContent(), DOMAIN_NOT_ALLOWED);
    assert.equal(await page.title(), "Sign-in did not work");
    assert.deepEqual(await users(service), [], "nothing created");
    await page.click("text=Back to the sign-in page");
    await page.waitForURL(/\/sign-in$/);
    await page.context().close();
    // Another browser (the provider remembers alice in this one), with an allowed address.
    const allowed = await newPage();
    await allowed.goto(`${service.issuer}/sign-in`);
    await allowed.click("#upstream-corp");
    await upstreamLogin(allowed, "carol");
    await allowed.waitForURL(/\/account\/security$/);
    await allowed.waitForSelector("#identity-list li strong");
    assert.equal(await allowed.locator("#who").textContent(), "Signed in as carol@corp.example.");
    assert.deepEqual(await users(service), ["carol@corp.example"]);
    await allowed.context().close();
  });

  test("automatic linking off: nothing linked until the owner proves the account by the link mailed to it", async (t) => {
    const { service, bob, page } = await upstreamSignInToBobsAccount(t);
    await page.click("#link-by-mail");
    await page.waitForSelector("#status.success");
    assert.equal(
      await page.locator("#status").textContent(),
      "We sent a link to the account's e-mail address. Open it in this browser within 10 minutes to link the sign-in.",
    );
    assert.equal(await page.locator("#password-form").isHidden(), true);
    assert.deepEqual(await service.store.listIdentities(bob.id), [], "nothing linked before the mailed link");
    const [mail] = await smtp.mailsTo("bob@example.com");
    const link = linkIn(mail!);
    // Opened in another browser, the link does nothing (and stays usable in its own).
    const other = await newPage();
    await other.goto(`${service.issuer}${link.pathname}${link.search}${link.hash}`);
    await other.waitForSelector("#status.error");
    assert.match((await other.locator("#status").textContent()) ?? "", /opened in another browser/);
    await other.context().close();
    assert.deepEqual(await service.store.listIdentities(bob.id), []);
    await page.goto(`${service.issuer}${link.pathname}${link.search}${link.hash}`);
    await page.waitForURL(/\/account\/security$/);
    await page.waitForSelector("#identity-list li strong");
    assert.equal(await page.locator("#who").textContent(), "Signed in as bob@example.com.");
    assert.equal(await page.locator("#identity-list li strong").textContent(), "Corp");
    assert.equal((await service.store.listIdentities(bob.id)).length, 1);
    assert.deepEqual(await users(service), ["bob@example.com"]);
    await page.context().close();
  });

  test("automatic linking on: a verified address is linked at once; an unverified one is not", async (t) => {
    const { service } = await setUp(t, { upstream: { autoLink: true } });
    const bob = await createUser(service.store, "bob@example.com", PASSWORD);
    // Bob's own address is verified: an account never verified is never linked automatically.
    await service.store.update(bob.id, { emailVerifiedAt: new Date().toISOString() });
    const dave = await createUser(service.store, "dave@example.com", PASSWORD);
    const page = await newPage();
    await page.goto(`${service.issuer}/sign-in`);
    await page.click("#upstream-corp");
    await upstreamLogin(page, "bob");
    await page.waitForURL(/\/account\/security$/);
    await page.waitForSelector("#identity-list li strong");
    assert.equal(await page.locator("#who").textContent(), "Signed in as bob@example.com.");
    assert.equal((await service.store.listIdentities(bob.id)).length, 1);
    await page.context().close();

    const unverified = await newPage();
    await unverified.goto(`${service.issuer}/sign-in`);
    await unverified.click("#upstream-corp");
    await upstreamLogin(unverified, "dave");
    await unverified.waitForURL(/\/sign-in$/);
    assert.match(
      (await unverified.locator("#status").textContent()) ?? "",
      /An account with this e-mail address exists/,
    );
    assert.deepEqual(await service.store.listIdentities(dave.id), [], "never linked without a verified address");
    assert.deepEqual(await users(service), ["bob@example.com", "dave@example.com"]);
    await unverified.context().close();
  });
});
