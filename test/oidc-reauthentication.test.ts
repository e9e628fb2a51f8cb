// Forced re-authentication at the authorization endpoint, as an attacker
// would try it (issue 32, defects 6 and 7). prompt=login, max_age and a
// multi-factor acr_values send a signed-in browser to sign in again; what the
// service hands that browser so the request does not loop (a proof, in a
// cookie) serves that one request, in that browser, for ten minutes, once:
// never another client's request, another state, other acr_values or
// max_age, never once expired, never forged or tampered with. Whatever the
// service hands out is presented as an attacker would (the cookie, and any
// auth_after the continuation carries, appended to the other request), so the
// tests say the same of the URL parameter of the release before. The sign-in
// page may come back on another instance. prompt=consent survives the
// sign-in, and the consent form answers only the request it was shown for.
// SQLite by default, PostgreSQL with TEST_BACKEND=postgres.
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { buildApp } from "../src/app.ts";
import { ACR_MULTI_FACTOR } from "../src/oidc/id-tokens.ts";
import { bearer, buildTestApp, createUser, requestToken, testConfig } from "./helpers.ts";
import { OIDC_KEY, pkcePair, registerClients } from "./oidc/fixture.ts";

const RP = "https://rp.example";
const PASSWORD = "correct horse battery";

async function setUp(t: TestContext) {
  const built = await buildTestApp(t, { oidcSigningKeys: [OIDC_KEY] });
  const clients = await registerClients(built.store, RP);
  const user = await createUser(built.store, "ada@example.com", PASSWORD);
  await built.store.grantConsent(user.id, clients.partner.id, "openid email", new Date(built.clock.now).toISOString());
  return { ...built, clients, user };
}
type Setup = Awaited<ReturnType<typeof setUp>>;

/** A sign-in (the password grant, as the sign-in page does it) and its browser session: the cookie. */
async function signIn(app: FastifyInstance): Promise<string> {
  const login = await requestToken(app, { username: "ada@example.com", password: PASSWORD });
  const opened = await app.inject({
    method: "POST",
    url: "/oauth/browser-session",
    headers: bearer(login.json().access_token),
  });
  assert.equal(opened.statusCode, 204);
  return (opened.headers["set-cookie"] as string).split(";")[0] as string;
}

function partnerRequest(setup: Setup, extra: Record<string, string> = {}): Record<string, string> {
  return {
    response_type: "code",
    client_id: setup.clients.partner.id,
    redirect_uri: `${RP}/callback`,
    scope: "openid email",
    code_challenge: pkcePair().challenge,
    code_challenge_method: "S256",
    state: "st-1",
    nonce: "n-1",
    ...extra,
  };
}

const authorizeUrl = (fields: Record<string, string>) => `/oauth/authorize?${new URLSearchParams(fields)}`;

function authorize(app: FastifyInstance, fields: Record<string, string>, cookies: (string | undefined)[]) {
  const cookie = cookies.filter((value) => value !== undefined).join("; ");
  return app.inject({ url: authorizeUrl(fields), headers: cookie === "" ? {} : { cookie } });
}

/** The proof cookie an answer sets ("name=value"), if any. */
function proofOf(answer: LightMyRequestResponse): string | undefined {
  const set = answer.headers["set-cookie"];
  const found = ([] as string[]).concat(set ?? []).find((cookie) => cookie.startsWith("uts_reauth="));
  return found?.split(";")[0];
}

/** What the service hands a browser it sends to sign in: the continuation, the proof cookie, any auth_after. */
async function sentToSignIn(app: FastifyInstance, fields: Record<string, string>, cookies: (string | undefined)[]) {
  const answer = await authorize(app, fields, cookies);
  assert.equal(answer.statusCode, 303, answer.body);
  const location = new URL(answer.headers.location as string, "http://service.test");
  assert.equal(location.pathname, "/sign-in", "sent to sign in");
  const continuation = location.searchParams.get("continue") as string;
  const authAfter = new URLSearchParams(continuation.split("?")[1]).get("auth_after") ?? undefined;
  return { continuation, proof: proofOf(answer), authAfter };
}

/** Where an answer sends the browser: the sign-in page, the client with a code, or the consent page. */
function outcome(answer: LightMyRequestResponse): "sign-in" | "code" | "consent" {
  if (answer.statusCode === 200 && answer.body.includes('id="allow"')) return "consent";
  assert.equal(answer.statusCode, 303, answer.body);
  const location = new URL(answer.headers.location as string, "http://service.test");
  if (location.pathname === "/sign-in") return "sign-in";
  assert.equal(location.origin + location.pathname, `${RP}/callback`);
  assert.deepEqual([...location.searchParams.keys()], ["code", "state", "iss"]);
  return "code";
}

const ASKS: Record<string, string>[] = [
  { prompt: "login" },
  { max_age: "0" },
  { acr_values: ACR_MULTI_FACTOR },
  { prompt: "login", max_age: "0", acr_values: ACR_MULTI_FACTOR },
];

describe("forced re-authentication", () => {
  test("the sign-in asked for one request serves that request in that browser: the code, once", async (t) => {
    const setup = await setUp(t);
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(120);
    for (const extra of ASKS) {
      const request = partnerRequest(setup, extra);
      const asked = await sentToSignIn(setup.app, request, [old]);
      // The continuation is the request itself: nothing in the URL proves a sign-in.
      assert.equal(asked.continuation, authorizeUrl(request));
      assert.match(asked.proof ?? "", /^uts_reauth=\d+\.[\w-]{43}\.[\w-]{43}$/);
      setup.clock.advanceSeconds(20);
      const fresh = await signIn(setup.app);
      setup.clock.advanceSeconds(20);
      const back = await setup.app.inject({ url: asked.continuation, headers: { cookie: `${fresh}; ${asked.proof}` } });
      assert.equal(outcome(back), "code", JSON.stringify(extra));
      // Spent: the cookie is cleared, and the same request again (the browser without the proof, and
      // the session no longer fresh) asks for a sign-in again.
      assert.equal(back.headers["set-cookie"], "uts_reauth=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
      setup.clock.advanceSeconds(1);
      const again = await setup.app.inject({ url: asked.continuation, headers: { cookie: fresh } });
      assert.equal(outcome(again), "sign-in", JSON.stringify(extra));
    }
  });

  test("a proof taken from one request and presented with another is refused: the sign-in is asked again", async (t) => {
    const setup = await setUp(t);
    // An attacker's request, without a session: the service sends it to sign in and hands out a proof.
    const mine = partnerRequest(setup, { prompt: "login", state: "attacker" });
    const taken = await sentToSignIn(setup.app, mine, []);
    // The victim signs in afterwards (a session newer than the proof).
    setup.clock.advanceSeconds(60);
    const victim = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    // The proof still serves the request it was made for...
    assert.equal(
      outcome(await setup.app.inject({ url: taken.continuation, headers: { cookie: `${victim}; ${taken.proof}` } })),
      "code",
    );
    // ...and no other: another client, another state, other acr_values, max_age, prompt.
    const spa = { client_id: setup.clients.spa.id, redirect_uri: `${RP}/spa/callback` };
    const others: Record<string, string>[] = [
      { prompt: "login", state: "victim" },
      { prompt: "login", state: "attacker", ...spa },
      { prompt: "login", state: "attacker", acr_values: ACR_MULTI_FACTOR },
      { prompt: "login", state: "attacker", max_age: "0" },
      { state: "attacker", acr_values: ACR_MULTI_FACTOR },
      { state: "attacker", max_age: "0" },
    ];
    for (const extra of others) {
      const request = partnerRequest(setup, extra);
      const withTaken = taken.authAfter === undefined ? request : { ...request, auth_after: taken.authAfter };
      const answer = await authorize(setup.app, withTaken, [victim, taken.proof]);
      assert.equal(answer.statusCode, 303, JSON.stringify(extra));
      const location = new URL(answer.headers.location as string, "http://service.test");
      assert.equal(location.pathname, "/sign-in", JSON.stringify(extra));
      assert.equal(location.searchParams.get("continue"), authorizeUrl(withTaken));
    }
  });

  test("an expired proof is refused: ten minutes after the service asked, the sign-in is asked again", async (t) => {
    const setup = await setUp(t);
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    const request = partnerRequest(setup, { max_age: "0" });
    const asked = await sentToSignIn(setup.app, request, [old]);
    setup.clock.advanceSeconds(30);
    const fresh = await signIn(setup.app);
    setup.clock.advanceSeconds(571);
    const late = await setup.app.inject({ url: asked.continuation, headers: { cookie: `${fresh}; ${asked.proof}` } });
    assert.equal(outcome(late), "sign-in");
    // A new proof replaces the expired one; the user signs in again and comes back.
    const renewed = proofOf(late);
    assert.notEqual(renewed, undefined);
    assert.notEqual(renewed, asked.proof);
    const again = await signIn(setup.app);
    const back = await setup.app.inject({ url: asked.continuation, headers: { cookie: `${again}; ${renewed}` } });
    assert.equal(outcome(back), "code");
  });

  test("a forged or tampered proof is refused", async (t) => {
    const setup = await setUp(t);
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    const request = partnerRequest(setup, { prompt: "login" });
    const asked = await sentToSignIn(setup.app, request, [old]);
    const fresh = await signIn(setup.app);
    const [time, digest, mac] = (asked.proof ?? "").slice("uts_reauth=".length).split(".") as [string, string, string];
    const other = await sentToSignIn(setup.app, partnerRequest(setup, { prompt: "login", state: "other" }), [old]);
    const [, otherDigest, otherMac] = (other.proof ?? "").slice("uts_reauth=".length).split(".");
    const forged = [
      `uts_reauth=${time}.${digest}.${"A".repeat(43)}`,
      `uts_reauth=${Number(time) - 1}.${digest}.${mac}`,
      `uts_reauth=${time}.${otherDigest}.${mac}`,
      `uts_reauth=${time}.${digest}.${otherMac}`,
      `uts_reauth=${time}.${digest}`,
      `uts_reauth=${time}.${digest}.${mac}.extra`,
      `uts_reauth=x.${digest}.${mac}`,
      "uts_reauth=~~~",
      `uts_reauth=${"9".repeat(5000)}`,
    ];
    for (const cookie of forged) {
      const answer = await setup.app.inject({ url: asked.continuation, headers: { cookie: `${fresh}; ${cookie}` } });
      assert.equal(outcome(answer), "sign-in", cookie.slice(0, 120));
    }
    // The URL parameter of the release before, made up: nothing.
    for (const authAfter of ["0", `${time}.forged`, `${time}.${mac}`]) {
      const answer = await authorize(setup.app, { ...request, auth_after: authAfter }, [fresh]);
      assert.equal(outcome(answer), "sign-in", authAfter);
    }
  });

  test("two requests pending in two tabs each come back; the cookie keeps the four newest proofs", async (t) => {
    const setup = await setUp(t);
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    let jar: string | undefined;
    const pending: string[] = [];
    for (const state of ["tab-1", "tab-2", "tab-3", "tab-4", "tab-5"]) {
      const asked = await sentToSignIn(setup.app, partnerRequest(setup, { prompt: "login", state }), [old, jar]);
      jar = asked.proof;
      pending.push(asked.continuation);
    }
    assert.equal(jar?.split("~").length, 4);
    const fresh = await signIn(setup.app);
    // The oldest was dropped; the others come back, each spending only its own proof.
    assert.equal(
      outcome(await setup.app.inject({ url: pending[0] as string, headers: { cookie: `${fresh}; ${jar}` } })),
      "sign-in",
    );
    for (const continuation of pending.slice(1).reverse()) {
      const back: LightMyRequestResponse = await setup.app.inject({
        url: continuation,
        headers: { cookie: `${fresh}; ${jar}` },
      });
      assert.equal(outcome(back), "code");
      const left = String(back.headers["set-cookie"]).split(";")[0] as string;
      jar = left === "uts_reauth=" ? undefined : left;
    }
    assert.equal(jar, undefined);
  });

  test("the sign-in page may come back on another instance (the same database and signing secret)", async (t) => {
    const setup = await setUp(t);
    const other = await buildApp({
      config: testConfig({ oidcSigningKeys: [OIDC_KEY] }),
      store: setup.store,
      clock: setup.clock.read,
    });
    t.after(() => other.close());
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    const asked = await sentToSignIn(setup.app, partnerRequest(setup, { acr_values: ACR_MULTI_FACTOR }), [old]);
    const fresh = await signIn(other);
    const back = await other.inject({ url: asked.continuation, headers: { cookie: `${fresh}; ${asked.proof}` } });
    assert.equal(outcome(back), "code");
  });
});

describe("prompt=consent survives the sign-in", () => {
  test("without a browser session: after the sign-in, the consent page, although a consent exists", async (t) => {
    const setup = await setUp(t);
    const request = partnerRequest(setup, { prompt: "consent" });
    const asked = await sentToSignIn(setup.app, request, []);
    assert.equal(asked.continuation, authorizeUrl(request));
    const session = await signIn(setup.app);
    const back = await setup.app.inject({ url: asked.continuation, headers: { cookie: session } });
    assert.equal(outcome(back), "consent");
    assert.match(back.body, /<strong id="client-name">Partner &#60;App&#62;<\/strong>/);
  });

  test("prompt=login consent with a session: after the fresh sign-in, the consent page", async (t) => {
    const setup = await setUp(t);
    const old = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    const asked = await sentToSignIn(setup.app, partnerRequest(setup, { prompt: "login consent" }), [old]);
    const fresh = await signIn(setup.app);
    const back = await setup.app.inject({ url: asked.continuation, headers: { cookie: `${fresh}; ${asked.proof}` } });
    assert.equal(outcome(back), "consent");
  });
});

describe("the consent form", () => {
  test("answers only the request its page was shown for: edited into another request, it is refused", async (t) => {
    const setup = await setUp(t);
    const session = await signIn(setup.app);
    setup.clock.advanceSeconds(60);
    const shown = partnerRequest(setup, { prompt: "consent", state: "shown" });
    const page = await authorize(setup.app, shown, [session]);
    assert.equal(outcome(page), "consent");
    const field = (name: string) =>
      (new RegExp(`name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? "").replaceAll("&#38;", "&");
    assert.equal(field("request"), new URLSearchParams(shown).toString());
    const post = (request: string) =>
      setup.app.inject({
        method: "POST",
        url: "/oauth/consent",
        headers: { cookie: session, "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ request, form_token: field("form_token"), decision: "allow" }).toString(),
      });
    // The request of a relying party that asked for a fresh sign-in, or of another state: refused.
    for (const edited of [
      partnerRequest(setup, { prompt: "login", state: "shown" }),
      partnerRequest(setup, { max_age: "0", state: "shown" }),
      partnerRequest(setup, { prompt: "consent", state: "other" }),
    ]) {
      const answer = await post(new URLSearchParams(edited).toString());
      assert.equal(answer.statusCode, 400);
      assert.equal(answer.headers.location, undefined);
      assert.match(answer.body, /The form has expired\. Go back to the application and try again\./);
    }
    // The request it was shown for: the code.
    const allowed = await post(field("request"));
    assert.equal(outcome(allowed), "code");
    assert.equal(new URL(allowed.headers.location as string).searchParams.get("state"), "shown");
  });
});
