// Attack: account pre-hijacking (Sudhodanan and Paverd, "Pre-hijacked
// accounts", USENIX Security 2022), as an attacker's test list. The attacker
// signs up with the victim's address before the victim does (sign-up is open
// and verification not required by default) and sets every way in he can: a
// password, a session with its refresh token, an app's session through the
// code flow (with a back-channel logout URI), an access token, a consent to a
// third-party app, a passkey, an authenticator app, upstream identities
// (linked from the security page, after his password, or by signing up
// through a provider that does not vouch for the address). Then the real
// owner proves the address: by the link mailed to it when an upstream sign-in
// finds the account, or by a password reset. Each test walks one class
// (classic-federated merge with the mailed link and with automatic linking,
// trojan identifier, non-verifying provider, unexpired session, unexpired
// e-mail change) or one linking path, and shows that no path leaves two
// people in one account: after the owner's proof the attacker's password,
// refresh token, app session, browser session, access token, passkey and
// upstream identity are all refused, and the owner gets in. The races too: a
// sign-in ticket, a link or a passkey of the attacker's in flight while the
// proof commits. A verified account keeps what its owner added after proving
// it. The rule under test is src/auth/address-proof.ts. Real HTTP where the
// wire matters (the service listens for the back-channel logout receiver's
// JWKS fetch), a real SMTP server for the mails, the fixtures' OpenID Connect
// provider (RS256 ID tokens, email_verified as the test says) for the
// identities. Both backends (TEST_BACKEND=postgres).
import assert from "node:assert/strict";
import { after, before, describe, type TestContext, test } from "node:test";
import { USED_LINK } from "../../src/auth/account-recovery.ts";
import { PASSKEY_NOT_VERIFIED, WEBAUTHN_GRANT } from "../../src/auth/passkeys.ts";
import { INVALID_REFRESH_TOKEN } from "../../src/auth/sessions.ts";
import { MFA_OTP_GRANT, UPSTREAM_GRANT } from "../../src/core/schemas.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS, CredentialsChanged, INCORRECT_EMAIL_OR_PASSWORD } from "../../src/errors.ts";
import { INVALID_CLIENT_REFRESH } from "../../src/oidc/code-grant.ts";
import { newId } from "../../src/store/ids.ts";
import { INVALID_UPSTREAM_TICKET } from "../../src/upstream/grant.ts";
import { NO_PENDING_SIGN_IN } from "../../src/upstream/sign-in.ts";
import { bearer, requestToken, testConfig } from "../helpers.ts";
import { LogoutReceiver } from "../logout-receiver.ts";
import { MailServer, tokenIn } from "../mail-server.ts";
import { pkcePair, startOidcService } from "../oidc/fixture.ts";
import { SoftAuthenticator } from "../soft-authenticator.ts";
import { codeAt } from "../totp.ts";
import { type SpoiledAnswer, startSpoilableOidc, UPSTREAM_CLIENT } from "../upstream/fixture.ts";

const RP = "https://rp.example";
const ATTACKER_PASSWORD = "the attacker's own passphrase";
const OWNER_PASSWORD = "the owner's brand new passphrase";

const smtp = new MailServer();
before(() => smtp.start());
after(() => smtp.stop());

/** A unique victim address per test, so tests sharing the SMTP server read their own mail. */
let counter = 0;
const victimAddress = () => `victim${++counter}.${process.pid}@example.com`;

/** The `count`th mail to `address` with this subject, once it has arrived (10 s at most). */
async function mailAbout(address: string, subject: string, count = 1) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mails = smtp.messages.filter((mail) => mail.to.includes(address) && mail.subject === subject);
    const mail = mails[count - 1];
    if (mail) return mail;
    if (Date.now() > deadline) throw new Error(`no mail "${subject}" number ${count} to ${address}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Someone at the upstream provider "corp": its subject, the address it gives, whether it vouches for it. */
interface UpstreamPerson {
  subject: string;
  email: string;
  verified: boolean;
}

interface Options {
  autoLink?: boolean;
  verificationRequired?: boolean;
}

/** The service (listening), the provider "corp", a back-channel logout receiver for Post App, the victim's address. */
async function world(t: TestContext, options: Options = {}) {
  let mode: SpoiledAnswer = "good";
  let hold: (() => Promise<void>) | undefined;
  const corp = await startSpoilableOidc(
    t,
    () => mode,
    () => undefined,
    () => hold?.() ?? Promise.resolve(),
  );
  const base = testConfig();
  const service = await startOidcService(t, RP, {
    upstream: {
      providers: [
        {
          kind: "oidc",
          name: "corp",
          label: "Corp",
          issuer: corp.issuer,
          clientId: UPSTREAM_CLIENT.id,
          clientSecret: UPSTREAM_CLIENT.secret,
          scopes: "openid email",
          allowedDomains: [],
        },
      ],
      autoLink: options.autoLink ?? false,
      keepTokens: false,
      timeoutMs: 5000,
    },
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, pollIntervalMs: 100 },
    webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 3600, pollIntervalMs: 50 },
    accountRecovery: { ...base.accountRecovery, verificationRequired: options.verificationRequired ?? false },
  });
  const receiver = new LogoutReceiver(service.issuer, service.clients.post.id, service.clock.read);
  await receiver.start();
  t.after(() => receiver.stop());
  await service.store.updateClient(service.clients.post.id, { backchannelLogoutUri: receiver.url });
  const { app } = service;
  const victim = victimAddress();

  /** The provider's answer for the next sign-in: this person. */
  function be(person: UpstreamPerson) {
    corp.state.subject = person.subject;
    corp.state.email = person.email;
    mode = person.verified ? "good" : "no-verified-email";
  }

  /** The callback of a round trip to corp started at `location`, from the browser holding `cookie`. */
  async function callback(location: string, cookie: string) {
    const at = new URL(location);
    corp.state.nonce = at.searchParams.get("nonce") ?? "";
    const state = encodeURIComponent(at.searchParams.get("state") ?? "");
    return app.inject({ url: `/auth/upstream/corp/callback?code=abc&state=${state}`, headers: { cookie } });
  }

  /**
   * An upstream sign-in as `person` from a fresh browser: where the callback sends it (a sign-in ticket,
   * or a link ticket when the account must be proved first) and that browser's cookie.
   */
  async function upstreamSignIn(person: UpstreamPerson) {
    be(person);
    const started = await app.inject({ url: "/auth/upstream/corp/start" });
    assert.equal(started.statusCode, 303, started.body);
    const cookie = String(started.headers["set-cookie"]).split(";")[0] as string;
    const back = await callback(started.headers.location as string, cookie);
    assert.equal(back.statusCode, 303, back.body);
    const [, kind, ticket] = /^\/sign-in#(upstream|link)=([\w-]{43})$/.exec(back.headers.location as string) ?? [];
    assert.ok(kind && ticket, back.headers.location as string);
    return { kind: kind as "upstream" | "link", ticket, cookie };
  }

  /** The token endpoint's upstream grant for a sign-in ticket, from its browser. */
  const upstreamGrant = (ticket: string, cookie: string) =>
    requestToken(app, { grant_type: UPSTREAM_GRANT, upstream_ticket: ticket }, { cookie });

  /**
   * A signed-in user starts linking `person`'s identity from the security page (POST /me/identities);
   * `finish()` comes back from corp (the callback) whenever the test says.
   */
  async function startLinkFromSecurityPage(accessToken: string, person: UpstreamPerson) {
    const started = await app.inject({
      method: "POST",
      url: "/me/identities",
      headers: bearer(accessToken),
      payload: { provider: "corp" },
    });
    assert.equal(started.statusCode, 200, started.body);
    const cookie = String(started.headers["set-cookie"]).split(";")[0] as string;
    return {
      finish() {
        be(person);
        return callback(started.json().location, cookie);
      },
    };
  }

  /** A signed-in user links `person`'s identity from the security page, there and back. */
  async function linkFromSecurityPage(accessToken: string, person: UpstreamPerson) {
    const back = await (await startLinkFromSecurityPage(accessToken, person)).finish();
    assert.equal(back.headers.location, "/account/security#linked");
  }

  /** "E-mail me a link" for a link ticket, the mail that arrives at `email`, and the page posting its token. */
  async function proveByMailedLink(link: { ticket: string; cookie: string }) {
    const asked = await app.inject({
      method: "POST",
      url: "/auth/upstream/link/mail",
      headers: { cookie: link.cookie },
      payload: { ticket: link.ticket },
    });
    assert.equal(asked.statusCode, 202, asked.body);
    const mail = await mailAbout(victim, "Link your Corp sign-in to your account");
    const confirmed = await app.inject({
      method: "POST",
      url: "/auth/upstream/link/mail/confirm",
      headers: { cookie: link.cookie },
      payload: { token: tokenIn(mail) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    assert.deepEqual(Object.keys(confirmed.json()).sort(), ["continue", "upstream_ticket"]);
    return confirmed.json().upstream_ticket as string;
  }

  /** The owner asks for a reset link: its token, from the mail at the victim's address. */
  async function resetLink() {
    const asked = await app.inject({
      method: "POST",
      url: "/auth/password-reset-requests",
      payload: { email: victim },
    });
    assert.equal(asked.statusCode, 202);
    return tokenIn(await mailAbout(victim, "Reset your password"));
  }

  /** The owner sets the new password with the reset link's token. */
  async function confirmReset(token: string) {
    const reset = await app.inject({
      method: "POST",
      url: "/auth/password-resets",
      payload: { token, new_password: OWNER_PASSWORD },
    });
    assert.equal(reset.statusCode, 204, reset.body);
  }

  /** The owner's password reset: the request, the mail at the victim's address, the new password. */
  async function resetPassword() {
    await confirmReset(await resetLink());
  }

  /**
   * Holds corp's next token answer: `reached` resolves when the callback is waiting on it (its pending
   * sign-in already spent), `release()` lets it answer.
   */
  function holdNextTokenAnswer() {
    let reached!: () => void;
    let release!: () => void;
    const atProvider = new Promise<void>((resolve) => (reached = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    hold = () => {
      hold = undefined;
      reached();
      return released;
    };
    return { reached: atProvider, release };
  }

  /** Registers a new software passkey on the account of `accessToken`. */
  async function addPasskey(accessToken: string) {
    const authenticator = new SoftAuthenticator(service.issuer);
    const options = await app.inject({
      method: "POST",
      url: "/me/passkeys/registration-options",
      headers: bearer(accessToken),
    });
    assert.equal(options.statusCode, 200, options.body);
    const { challenge_id, options: creation } = options.json();
    const added = await app.inject({
      method: "POST",
      url: "/me/passkeys",
      headers: bearer(accessToken),
      payload: { challenge_id, name: "Mine", response: authenticator.register(creation) },
    });
    assert.equal(added.statusCode, 201, added.body);
    return authenticator;
  }

  /** Signing in with a passkey alone (a discoverable credential). */
  async function passkeySignIn(authenticator: SoftAuthenticator) {
    const options = await app.inject({ method: "POST", url: "/auth/webauthn/authentication-options", payload: {} });
    assert.equal(options.statusCode, 200, options.body);
    const { challenge_id, options: request } = options.json();
    return requestToken(app, {
      grant_type: WEBAUTHN_GRANT,
      challenge_id,
      webauthn_response: JSON.stringify(authenticator.assert(request)),
    });
  }

  /** Sets up and confirms an authenticator app on the account of `accessToken`; answers its secret. */
  async function addAuthenticatorApp(accessToken: string) {
    const enrolled = await app.inject({ method: "POST", url: "/me/totp", headers: bearer(accessToken) });
    assert.equal(enrolled.statusCode, 201, enrolled.body);
    const secret = enrolled.json().secret as string;
    const confirmed = await app.inject({
      method: "POST",
      url: "/me/totp/confirm",
      headers: bearer(accessToken),
      payload: { code: codeAt(secret, service.clock.now) },
    });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    return secret;
  }

  /** The browser session of a signed-in user, and Post App's session begun in it through the code flow. */
  async function appSession(accessToken: string) {
    const opened = await app.inject({ method: "POST", url: "/oauth/browser-session", headers: bearer(accessToken) });
    assert.equal(opened.statusCode, 204, opened.body);
    const cookie = (opened.headers["set-cookie"] as string).split(";")[0] as string;
    const post = service.clients.post;
    const pkce = pkcePair();
    const authorize = () =>
      app.inject({
        url: `/oauth/authorize?${new URLSearchParams({
          response_type: "code",
          client_id: post.id,
          redirect_uri: `${RP}/post/callback`,
          scope: "openid email",
          code_challenge: pkce.challenge,
          code_challenge_method: "S256",
          state: "s",
          nonce: "n",
        })}`,
        headers: { cookie },
      });
    const answer = await authorize();
    assert.equal(answer.statusCode, 303, answer.body);
    const code = new URL(answer.headers.location as string).searchParams.get("code") as string;
    const credentials = { client_id: post.id, client_secret: post.secret };
    const tokens = await requestToken(app, {
      grant_type: "authorization_code",
      code,
      redirect_uri: `${RP}/post/callback`,
      code_verifier: pkce.verifier,
      ...credentials,
    });
    assert.equal(tokens.statusCode, 200, tokens.body);
    const idToken = tokens.json().id_token as string;
    const sid = JSON.parse(Buffer.from(idToken.split(".")[1] as string, "base64url").toString()).sid as string;
    const refresh = () =>
      requestToken(app, { grant_type: "refresh_token", refresh_token: tokens.json().refresh_token, ...credentials });
    return { cookie, sid, refresh, authorize };
  }

  /** On the consent page, in the browser session of `cookie`, the user allows the partner app (a third party). */
  async function consentToPartner(cookie: string) {
    const request = new URLSearchParams({
      response_type: "code",
      client_id: service.clients.partner.id,
      redirect_uri: `${RP}/callback`,
      scope: "openid email",
      code_challenge: pkcePair().challenge,
      code_challenge_method: "S256",
      state: "s",
    });
    const page = await app.inject({ url: `/oauth/authorize?${request}`, headers: { cookie } });
    assert.equal(page.statusCode, 200, page.body);
    const field = (name: string) =>
      (new RegExp(`name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? "").replaceAll("&#38;", "&");
    const allowed = await app.inject({
      method: "POST",
      url: "/oauth/consent",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({
        request: field("request"),
        form_token: field("form_token"),
        decision: "allow",
      }).toString(),
    });
    assert.equal(allowed.statusCode, 303, allowed.body);
    assert.ok(new URL(allowed.headers.location as string).searchParams.get("code"));
  }

  const me = (accessToken: string) => app.inject({ url: "/me", headers: bearer(accessToken) });
  const passwordLogin = (password: string) => requestToken(app, { username: victim, password });
  const account = async () => {
    const user = await service.store.findByEmail(victim);
    assert.ok(user);
    return user;
  };

  return {
    ...service,
    receiver,
    victim,
    upstreamSignIn,
    upstreamGrant,
    startLinkFromSecurityPage,
    linkFromSecurityPage,
    proveByMailedLink,
    resetLink,
    confirmReset,
    resetPassword,
    holdNextTokenAnswer,
    addPasskey,
    passkeySignIn,
    addAuthenticatorApp,
    appSession,
    consentToPartner,
    me,
    passwordLogin,
    account,
  };
}
type World = Awaited<ReturnType<typeof world>>;

/** The attacker's identities at corp: each gives the victim's address, which corp does not vouch for. */
const attackerAt = (w: World, subject: string): UpstreamPerson => ({ subject, email: w.victim, verified: false });
/** The victim at corp: the same address, vouched for. */
const victimAt = (w: World): UpstreamPerson => ({ subject: "victim", email: w.victim, verified: true });

/** What the attacker holds of the account after moving in. */
interface Holdings {
  accessToken: string;
  refreshToken: string;
  /** The browser session and Post App's session begun in it. */
  app: Awaited<ReturnType<World["appSession"]>>;
  passkey?: SoftAuthenticator;
  /** Subjects of his identities at corp linked to the account. */
  identities: string[];
}

/**
 * The attacker signs up with the victim's address and his own password (POST /users), signs in, opens
 * a browser session and an app's session in it, and sets what `ways` names.
 */
async function attackerSignsUp(
  w: World,
  ways: { passkey?: boolean; authenticatorApp?: boolean; linkFromSecurityPage?: boolean; consent?: boolean } = {},
): Promise<Holdings> {
  const signedUp = await w.app.inject({
    method: "POST",
    url: "/users",
    payload: { email: w.victim, password: ATTACKER_PASSWORD },
  });
  assert.equal(signedUp.statusCode, 201, signedUp.body);
  const login = await w.passwordLogin(ATTACKER_PASSWORD);
  assert.equal(login.statusCode, 200, login.body);
  const { access_token: accessToken, refresh_token: refreshToken } = login.json();
  const app = await w.appSession(accessToken);
  if (ways.consent) await w.consentToPartner(app.cookie);
  const identities: string[] = [];
  if (ways.linkFromSecurityPage) {
    await w.linkFromSecurityPage(accessToken, attackerAt(w, "attacker-linked"));
    identities.push("attacker-linked");
  }
  const passkey = ways.passkey ? await w.addPasskey(accessToken) : undefined;
  if (ways.authenticatorApp) await w.addAuthenticatorApp(accessToken);
  return { accessToken, refreshToken, app, identities, ...(passkey ? { passkey } : {}) };
}

/** Every way in the attacker held is refused now; his sessions ended with their back-channel logout. */
async function assertAttackerLockedOut(w: World, h: Holdings) {
  const login = await w.passwordLogin(ATTACKER_PASSWORD);
  assert.equal(login.statusCode, 401, "the attacker's password");
  assert.deepEqual(login.json(), { detail: INCORRECT_EMAIL_OR_PASSWORD });
  assert.equal(login.headers["www-authenticate"], "Bearer");

  const me = await w.me(h.accessToken);
  assert.equal(me.statusCode, 401, "the attacker's access token");
  assert.deepEqual(me.json(), { detail: COULD_NOT_VALIDATE_CREDENTIALS });
  assert.equal(me.headers["www-authenticate"], "Bearer");

  const refreshed = await requestToken(w.app, { grant_type: "refresh_token", refresh_token: h.refreshToken });
  assert.equal(refreshed.statusCode, 401, "the attacker's refresh token");
  assert.deepEqual(refreshed.json(), { detail: INVALID_REFRESH_TOKEN });
  assert.equal(refreshed.headers["www-authenticate"], "Bearer");

  const appRefresh = await h.app.refresh();
  assert.equal(appRefresh.statusCode, 400, "the attacker's app session");
  assert.deepEqual(appRefresh.json(), {
    error: "invalid_grant",
    detail: INVALID_CLIENT_REFRESH,
    error_description: INVALID_CLIENT_REFRESH,
  });
  // The app heard of it: a logout token for the attacker's browser session.
  await w.receiver.waitFor(() => w.receiver.accepted.some((delivery) => delivery.claims?.sid === h.app.sid));
  // The browser session opens nothing: the authorization endpoint asks to sign in again, no code.
  const authorize = await h.app.authorize();
  assert.equal(authorize.statusCode, 303);
  assert.ok(String(authorize.headers.location).startsWith("/sign-in?continue=%2Foauth%2Fauthorize%3F"));

  if (h.passkey) {
    const passkey = await w.passkeySignIn(h.passkey);
    assert.equal(passkey.statusCode, 401, "the attacker's passkey");
    assert.deepEqual(passkey.json(), { detail: PASSKEY_NOT_VERIFIED });
  }
  for (const subject of h.identities) {
    // His identity is no longer linked: the sign-in finds the account by its address and asks to prove it.
    const again = await w.upstreamSignIn(attackerAt(w, subject));
    assert.equal(again.kind, "link", `the attacker's identity ${subject}`);
  }
  const { id } = await w.account();
  const linked = (await w.store.listIdentities(id)).map((identity) => identity.subject);
  for (const subject of h.identities) assert.equal(linked.includes(subject), false);
}

/** The owner signs in through the upstream grant and is the account: no second factor of the attacker's asked. */
async function assertOwnerInUpstream(w: World, ticket: string, cookie: string) {
  const tokens = await w.upstreamGrant(ticket, cookie);
  assert.equal(tokens.statusCode, 200, tokens.body);
  assert.deepEqual(Object.keys(tokens.json()).sort(), ["access_token", "expires_in", "refresh_token", "token_type"]);
  const me = await w.me(tokens.json().access_token);
  assert.equal(me.statusCode, 200);
  assert.equal(me.json().email, w.victim);
  return tokens.json().access_token as string;
}

/** The owner signs in with the password the reset set: no second factor of the attacker's asked. */
async function assertOwnerInWithPassword(w: World) {
  const login = await w.passwordLogin(OWNER_PASSWORD);
  assert.equal(login.statusCode, 200, login.body);
  const me = await w.me(login.json().access_token);
  assert.equal(me.statusCode, 200);
  assert.equal(me.json().email, w.victim);
  return login.json().access_token as string;
}

/** The account's second factors as GET /me/mfa shows them. */
async function factorsOf(w: World, accessToken: string) {
  const status = await w.app.inject({ url: "/me/mfa", headers: bearer(accessToken) });
  assert.equal(status.statusCode, 200, status.body);
  return status.json();
}

/** The upstream audit outcomes of the account, oldest first. */
async function outcomes(w: World, type: "upstream" | "password_reset") {
  const { id } = await w.account();
  return (await w.store.listEvents({ userId: id, limit: 100, type })).map((event) => event.outcome);
}

describe("account pre-hijacking: no path leaves two people in one account", () => {
  test("classic-federated merge, mailed link: the owner's proof ends the attacker's password, sessions, app session, access token, app consent, passkey, authenticator app and identity", async (t) => {
    const w = await world(t);
    const held = await attackerSignsUp(w, {
      passkey: true,
      authenticatorApp: true,
      linkFromSecurityPage: true,
      consent: true,
    });
    w.clock.advanceSeconds(5);
    // The victim signs in with corp; the account with that address exists: prove it ("E-mail me a link").
    const victim = await w.upstreamSignIn(victimAt(w));
    assert.equal(victim.kind, "link", "never linked before the account is proved");
    const ticket = await w.proveByMailedLink(victim);
    const accessToken = await assertOwnerInUpstream(w, ticket, victim.cookie);
    await assertAttackerLockedOut(w, held);

    const before = await w.account();
    assert.notEqual(before.emailVerifiedAt, null, "the mail proved the address");
    assert.equal(before.hashedPassword, "", "no password of the attacker's");
    assert.deepEqual(await factorsOf(w, accessToken), {
      totp_enabled: false,
      recovery_codes_remaining: 0,
      passkeys: 0,
    });
    assert.deepEqual(
      (await w.store.listIdentities(before.id)).map((identity) => identity.subject),
      ["victim"],
    );
    // The app the attacker allowed asks the owner again: no consent of his is left.
    const apps = await w.app.inject({ url: "/me/apps", headers: bearer(accessToken) });
    assert.equal(apps.statusCode, 200);
    assert.deepEqual(apps.json(), { items: [] });
    assert.deepEqual(await outcomes(w, "upstream"), [
      "linked:corp",
      "link_mailed:corp",
      "unproven_ways_ended:password,passkeys,second_factors,identities,app_consents,sessions",
      "linked_by_mail:corp",
    ]);
    // From now on the owner's corp sign-in lands in the account at once.
    assert.equal((await w.upstreamSignIn(victimAt(w))).kind, "upstream");
  });

  test("classic-federated merge, automatic linking on: an account never verified is not linked automatically; the mailed link takes it back", async (t) => {
    const w = await world(t, { autoLink: true });
    const held = await attackerSignsUp(w, { passkey: true });
    const victim = await w.upstreamSignIn(victimAt(w));
    assert.equal(victim.kind, "link", "corp vouches for the address, but the account's was never proven");
    const { id } = await w.account();
    assert.deepEqual(await w.store.listIdentities(id), []);
    const ticket = await w.proveByMailedLink(victim);
    await assertOwnerInUpstream(w, ticket, victim.cookie);
    await assertAttackerLockedOut(w, held);
    // Verified now: automatic linking applies to the owner's next provider identity (another subject).
    const other = await w.upstreamSignIn({ subject: "victim-again", email: w.victim, verified: true });
    assert.equal(other.kind, "upstream");
    assert.deepEqual(
      (await w.store.listIdentities(id)).map((identity) => identity.subject),
      ["victim", "victim-again"],
    );
  });

  test("trojan identifier, linking from the security page: identities the attacker linked (POST /me/identities, and after his password) end at the owner's reset, and a link he started before it links nothing", async (t) => {
    const w = await world(t);
    const held = await attackerSignsUp(w, { linkFromSecurityPage: true });
    // The other linking path: his corp sign-in finds the account, he proves it with his own password.
    const proving = await w.upstreamSignIn(attackerAt(w, "attacker-proved"));
    assert.equal(proving.kind, "link");
    const linked = await w.app.inject({
      method: "POST",
      url: "/auth/upstream/link",
      headers: { ...bearer(held.accessToken), cookie: proving.cookie },
      payload: { ticket: proving.ticket },
    });
    assert.equal(linked.statusCode, 204, linked.body);
    held.identities.push("attacker-proved");
    assert.equal((await w.upstreamSignIn(attackerAt(w, "attacker-proved"))).kind, "upstream", "his way in");
    // Two more links started from the security page: one finished after the owner's reset, one whose
    // callback is at the provider (its pending sign-in spent) while the reset commits.
    const late = await w.startLinkFromSecurityPage(held.accessToken, attackerAt(w, "attacker-late"));
    const racing = await w.startLinkFromSecurityPage(held.accessToken, attackerAt(w, "attacker-racing"));
    const resetToken = await w.resetLink();

    w.clock.advanceSeconds(5);
    const { reached, release } = w.holdNextTokenAnswer();
    const raced = racing.finish();
    await reached;
    await w.confirmReset(resetToken);
    release();
    for (const [finished, what] of [
      [await raced, "the link at the provider while the owner's reset committed"],
      [await late.finish(), "the link started before the owner's reset"],
    ] as const) {
      assert.equal(finished.statusCode, 400, what);
      assert.equal(
        /<p class="error" role="alert" id="upstream-error">([^<]*)<\/p>/.exec(finished.body)?.[1],
        NO_PENDING_SIGN_IN.replace(/'/g, "&#39;"),
        what,
      );
    }
    await assertOwnerInWithPassword(w);
    await assertAttackerLockedOut(w, held);
    const { id, emailVerifiedAt } = await w.account();
    assert.notEqual(emailVerifiedAt, null);
    assert.deepEqual(await w.store.listIdentities(id), []);
    assert.deepEqual(await outcomes(w, "password_reset"), [
      "requested",
      "success",
      "unproven_ways_ended:identities,sessions",
    ]);
  });

  for (const proof of ["password reset", "mailed link"] as const) {
    test(`non-verifying provider: an account the attacker created through it (with a passkey and a pending sign-in) is taken back by the owner's ${proof}`, async (t) => {
      const w = await world(t);
      // Corp does not vouch for the address: the account is created, unverified, with his identity.
      const first = await w.upstreamSignIn(attackerAt(w, "attacker-signup"));
      assert.equal(first.kind, "upstream");
      const tokens = await w.upstreamGrant(first.ticket, first.cookie);
      assert.equal(tokens.statusCode, 200, tokens.body);
      const created = await w.account();
      assert.equal(created.emailVerifiedAt, null);
      assert.equal(created.hashedPassword, "");
      const passkey = await w.addPasskey(tokens.json().access_token);
      const app = await w.appSession(tokens.json().access_token);
      // A sign-in ticket taken now and spent after the owner's proof (two minutes are enough for a race).
      const pending = await w.upstreamSignIn(attackerAt(w, "attacker-signup"));
      assert.equal(pending.kind, "upstream");
      const held: Holdings = {
        accessToken: tokens.json().access_token,
        refreshToken: tokens.json().refresh_token,
        app,
        passkey,
        identities: ["attacker-signup"],
      };
      w.clock.advanceSeconds(5);

      if (proof === "password reset") {
        await w.resetPassword();
        await assertOwnerInWithPassword(w);
      } else {
        const victim = await w.upstreamSignIn(victimAt(w));
        assert.equal(victim.kind, "link");
        const ticket = await w.proveByMailedLink(victim);
        await assertOwnerInUpstream(w, ticket, victim.cookie);
      }
      const late = await w.upstreamGrant(pending.ticket, pending.cookie);
      assert.equal(late.statusCode, 400, "the attacker's pending sign-in ticket");
      assert.deepEqual(late.json(), { detail: INVALID_UPSTREAM_TICKET });
      await assertAttackerLockedOut(w, held);
      assert.notEqual((await w.account()).emailVerifiedAt, null);
    });
  }

  test("a passkey or identity added by a request already past its token check when the owner's reset commits is refused", async (t) => {
    const w = await world(t);
    await attackerSignsUp(w);
    // What the attacker's request saw when the guard let it through: the account before the reset.
    const seen = await w.account();
    w.clock.advanceSeconds(5);
    await w.resetPassword();
    const passkey = {
      userId: seen.id,
      credentialId: "attacker-credential",
      publicKey: "key",
      counter: 0,
      transports: [],
      name: "Late",
      deviceType: "singleDevice",
      backedUp: false,
      aaguid: null,
    };
    const identity = {
      id: newId(w.clock.now),
      userId: seen.id,
      provider: "corp",
      issuer: "https://corp.example",
      subject: "attacker-late",
      email: null,
      sealedTokens: null,
      createdAt: new Date(w.clock.now).toISOString(),
    };
    const stale = { credentialStamp: seen.credentialStamp };
    await assert.rejects(w.store.addPasskey(passkey, [], undefined, stale), CredentialsChanged);
    await assert.rejects(w.store.linkIdentity(identity, stale), CredentialsChanged);
    await assert.rejects(
      w.store.linkIdentity(identity, { unchangedSince: new Date(w.clock.now - 5000).toISOString() }),
      CredentialsChanged,
    );
    assert.deepEqual(await w.store.listPasskeys(seen.id), []);
    assert.deepEqual(await w.store.listIdentities(seen.id), []);
    // The owner's own sign-in, after the reset, adds them.
    const current = { credentialStamp: (await w.account()).credentialStamp };
    assert.ok(await w.store.addPasskey(passkey, [], undefined, current));
    assert.ok(await w.store.linkIdentity(identity, current));
  });

  test("unexpired session: the attacker's browser session, refresh token, app session and access token end at the owner's reset, with the back-channel logout", async (t) => {
    const w = await world(t);
    const held = await attackerSignsUp(w);
    // Still his, right up to the owner's proof.
    assert.equal((await w.me(held.accessToken)).statusCode, 200);
    w.clock.advanceSeconds(5);
    await w.resetPassword();
    await assertAttackerLockedOut(w, held);
    const delivered = w.receiver.accepted.filter((delivery) => delivery.claims?.sid === held.app.sid);
    assert.equal(delivered.length, 1, "one logout token for the attacker's browser session");
    assert.equal(delivered[0]?.claims?.sub, (await w.account()).id);
    await assertOwnerInWithPassword(w);
  });

  test("trojan passkey, identity and app consent after an unsolicited verification: the verification link ends nothing, the owner's reset ends what was added before it", async (t) => {
    const w = await world(t);
    const held = await attackerSignsUp(w, { passkey: true, linkFromSecurityPage: true, consent: true });
    w.clock.advanceSeconds(5);
    // The sign-up mailed a verification link to the victim's address; the victim opens it.
    const verification = await mailAbout(w.victim, "Verify your e-mail address");
    const verified = await w.app.inject({
      method: "POST",
      url: "/auth/email-verifications",
      payload: { token: tokenIn(verification) },
    });
    assert.equal(verified.statusCode, 200, verified.body);
    // What remains possible: a verification ends nothing (see the README), so his passkey still signs in.
    assert.equal((await w.passkeySignIn(held.passkey!)).statusCode, 200);
    w.clock.advanceSeconds(5);
    await w.resetPassword();
    await assertAttackerLockedOut(w, held);
    // His passkey was his only second factor: the owner's password alone signs in.
    const accessToken = await assertOwnerInWithPassword(w);
    assert.deepEqual(await factorsOf(w, accessToken), {
      totp_enabled: false,
      recovery_codes_remaining: 0,
      passkeys: 0,
    });
    assert.deepEqual((await w.app.inject({ url: "/me/apps", headers: bearer(accessToken) })).json(), { items: [] });
    assert.deepEqual(await outcomes(w, "password_reset"), [
      "requested",
      "success",
      "unproven_ways_ended:passkeys,identities,app_consents,sessions",
    ]);
  });

  test("unexpired e-mail change: an address change the attacker asked for before the owner's reset cannot be confirmed after it", async (t) => {
    const w = await world(t, { verificationRequired: true });
    const signedUp = await w.app.inject({
      method: "POST",
      url: "/users",
      payload: { email: w.victim, password: ATTACKER_PASSWORD },
    });
    assert.equal(signedUp.statusCode, 201, signedUp.body);
    // Verification is required: the attacker cannot sign in until the victim opens the sign-up's mail.
    assert.equal((await w.passwordLogin(ATTACKER_PASSWORD)).statusCode, 403);
    const verification = await mailAbout(w.victim, "Verify your e-mail address");
    const verified = await w.app.inject({
      method: "POST",
      url: "/auth/email-verifications",
      payload: { token: tokenIn(verification) },
    });
    assert.equal(verified.statusCode, 200, verified.body);
    const login = await w.passwordLogin(ATTACKER_PASSWORD);
    assert.equal(login.statusCode, 200, login.body);
    // He asks to move the account to his own address; the change waits for that address to confirm it.
    const elsewhere = `attacker${counter}.${process.pid}@example.com`;
    const change = await w.app.inject({
      method: "PATCH",
      url: "/me",
      headers: bearer(login.json().access_token),
      payload: { email: elsewhere },
    });
    assert.equal(change.statusCode, 200, change.body);
    assert.equal(change.json().email, w.victim);
    const confirmation = await mailAbout(elsewhere, "Confirm your new e-mail address");
    w.clock.advanceSeconds(5);

    await w.resetPassword();
    const late = await w.app.inject({
      method: "POST",
      url: "/auth/email-verifications",
      payload: { token: tokenIn(confirmation) },
    });
    assert.equal(late.statusCode, 400, late.body);
    assert.deepEqual(late.json(), { detail: USED_LINK });
    assert.equal((await w.account()).email, w.victim);
    await assertOwnerInWithPassword(w);
    assert.equal((await w.passwordLogin(ATTACKER_PASSWORD)).statusCode, 401);
    assert.deepEqual(await outcomes(w, "password_reset"), [
      "requested",
      "success",
      "unproven_ways_ended:email_changes,sessions",
    ]);
  });

  test("a verified account keeps what its owner added after proving it: the mailed link only links, a reset keeps the owner's passkey and authenticator app", async (t) => {
    const w = await world(t);
    const signedUp = await w.app.inject({
      method: "POST",
      url: "/users",
      payload: { email: w.victim, password: ATTACKER_PASSWORD },
    });
    assert.equal(signedUp.statusCode, 201);
    // Here the one who signed up is the owner: he proves the address first, then adds his ways in.
    const verification = await mailAbout(w.victim, "Verify your e-mail address");
    const verified = await w.app.inject({
      method: "POST",
      url: "/auth/email-verifications",
      payload: { token: tokenIn(verification) },
    });
    assert.equal(verified.statusCode, 200, verified.body);
    w.clock.advanceSeconds(5);
    const login = await w.passwordLogin(ATTACKER_PASSWORD);
    const passkey = await w.addPasskey(login.json().access_token);
    const secret = await w.addAuthenticatorApp(login.json().access_token);

    const corp = await w.upstreamSignIn(victimAt(w));
    assert.equal(corp.kind, "link");
    const ticket = await w.proveByMailedLink(corp);
    // Only linked: his second factor is still asked, his password still works.
    const upstream = await w.upstreamGrant(ticket, corp.cookie);
    assert.equal(upstream.statusCode, 403, upstream.body);
    assert.equal(upstream.json().error, "mfa_required");
    assert.equal((await w.passwordLogin(ATTACKER_PASSWORD)).statusCode, 403, "password right, second factor asked");
    assert.deepEqual(await outcomes(w, "upstream"), ["link_mailed:corp", "linked_by_mail:corp"]);

    w.clock.advanceSeconds(5);
    await w.resetPassword();
    const afterReset = await w.passwordLogin(OWNER_PASSWORD);
    assert.equal(afterReset.statusCode, 403, "the owner's second factor survives his reset");
    assert.deepEqual(afterReset.json().mfa_factors, ["otp", "recovery_code", "webauthn"]);
    const answered = await requestToken(w.app, {
      grant_type: MFA_OTP_GRANT,
      mfa_token: afterReset.json().mfa_token,
      otp: codeAt(secret, w.clock.now + 30_000),
    });
    assert.equal(answered.statusCode, 200, answered.body);
    assert.equal((await w.passkeySignIn(passkey)).statusCode, 200, "his passkey survives");
    assert.deepEqual(
      (await w.store.listIdentities((await w.account()).id)).map((identity) => identity.subject),
      ["victim"],
    );
    assert.deepEqual(await outcomes(w, "password_reset"), ["requested", "success"]);
  });
});
