// An attacker's list against DPoP (RFC 9449, issue 36), each refused with
// the RFC's error and never a 5xx: a proof for another method or URL; a
// stale or future iat; a replayed jti, on the same instance and on a second
// one sharing Redis; a refresh token bound to a key, refreshed without a
// proof or with another key's (and still good for its holder afterwards); a
// wrong ath, a proof by another key than the token's, a bound token as
// Bearer and an unbound one as DPoP; alg none, HS256, a private key in the
// jwk; malformed proofs and wrong types; two DPoP headers; a missing or stale
// nonce. Proofs are built by hand with jose, so every field can be wrong.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { buildApp } from "../../src/app.ts";
import { REFRESH_TOKEN_NEEDS_PROOF, REFRESH_TOKEN_OF_ANOTHER_KEY } from "../../src/auth/sessions.ts";
import { MFA_OTP_GRANT } from "../../src/core/schemas.ts";
import { accessTokenHash } from "../../src/dpop/proof.ts";
import { createMetrics } from "../../src/operations/metrics.ts";
import { RedisCounterStore } from "../../src/store/redis.ts";
import { base64url, buildTestApp, createUser, openTestStore, passwords, TestClock, testConfig } from "../helpers.ts";
import { authorizeCode, REDIRECTS, setUp as setUpOidc } from "../oidc/client-flow.ts";
import { codeAt } from "../totp.ts";

const PUBLIC_URL = "https://auth.test.example";
const TOKEN_URL = `${PUBLIC_URL}/auth/token`;
const PASSWORD = "correct horse battery";
const REDIS_URL = process.env.REDIS_URL;
const SKIP_REDIS = "the second-instance replay test needs REDIS_URL (e.g. redis://127.0.0.1:6379)";
if (!REDIS_URL && process.env.CI === "true") throw new Error(`${SKIP_REDIS}; CI requires it`);

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

interface ProofOptions {
  htm?: unknown;
  htu?: unknown;
  iat?: unknown;
  jti?: unknown;
  nonce?: string;
  ath?: string;
  alg?: string;
  header?: Record<string, unknown>;
}

async function es256(): Promise<KeyPair> {
  return generateKeyPair("ES256", { extractable: true });
}

/** A DPoP proof, right by default, with whatever the test makes wrong. */
async function proof(keys: KeyPair, clock: TestClock, options: ProofOptions = {}): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: "POST",
    htu: TOKEN_URL,
    iat: clock.seconds,
    jti: randomBytes(12).toString("base64url"),
  };
  for (const field of ["htm", "htu", "iat", "jti", "nonce", "ath"] as const)
    if (field in options) payload[field] = options[field];
  const jwk = await exportJWK(keys.publicKey);
  return new SignJWT(payload)
    .setProtectedHeader({ alg: options.alg ?? "ES256", typ: "dpop+jwt", jwk, ...options.header })
    .sign(keys.privateKey);
}

/** A proof signed by hand: for algorithms jose will not sign a proof with (none, HS256). */
function handMade(header: Record<string, unknown>, payload: Record<string, unknown>, signature = ""): string {
  return `${base64url(header)}.${base64url(payload)}.${signature}`;
}

function tokenRequest(app: FastifyInstance, fields: Record<string, string>, dpop?: string | string[]) {
  return app.inject({
    method: "POST",
    url: "/auth/token",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(dpop === undefined ? {} : { dpop }) },
    payload: new URLSearchParams(fields).toString(),
  });
}

const LOGIN = { username: "ada@example.com", password: PASSWORD };

async function setUp(t: TestContext, extra: { metrics?: ReturnType<typeof createMetrics> } = {}) {
  const built = await buildTestApp(t, { publicUrl: PUBLIC_URL }, extra);
  await createUser(built.store, "ada@example.com", PASSWORD);
  const keys = await es256();
  // The nonce of the moment, as a client learns it: from the first refusal.
  const first = await tokenRequest(built.app, LOGIN, await proof(keys, built.clock));
  assert.equal(first.statusCode, 400);
  assert.equal(first.json().error, "use_dpop_nonce");
  const nonce = first.headers["dpop-nonce"] as string;
  assert.ok(nonce);
  return { ...built, keys, nonce };
}

function assertRefused(answer: { statusCode: number; json(): Record<string, unknown> }, error = "invalid_dpop_proof") {
  assert.equal(answer.statusCode, 400, JSON.stringify(answer.json()));
  assert.equal(answer.json().error, error);
  assert.equal(typeof answer.json().error_description, "string");
  assert.equal(answer.json().detail, answer.json().error_description);
}

describe("DPoP proofs refused at the token endpoint", () => {
  test("a nonce is asked for, with the DPoP-Nonce header; a stale one is asked again; the right one works", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const stale = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce: "not-a-nonce" }));
    assertRefused(stale, "use_dpop_nonce");
    assert.equal(stale.headers["dpop-nonce"], nonce);
    assert.deepEqual(Object.keys(stale.json()).sort(), ["detail", "error", "error_description"]);
    const good = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce }));
    assert.equal(good.statusCode, 200, good.body);
    assert.equal(good.json().token_type, "DPoP");
    // Two windows later the nonce is no longer taken.
    clock.advanceSeconds(601);
    const old = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce }));
    assertRefused(old, "use_dpop_nonce");
    assert.notEqual(old.headers["dpop-nonce"], nonce);
  });

  test("another method, another URL, stale or future iat; htu compared without query and fragment", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const cases: [string, ProofOptions][] = [
      ["GET", { htm: "GET" }],
      ["lowercase method", { htm: "post" }],
      ["another path", { htu: `${PUBLIC_URL}/auth/revoke` }],
      ["another host", { htu: "https://evil.example/auth/token" }],
      ["http instead of https", { htu: "http://auth.test.example/auth/token" }],
      ["not a URL", { htu: "token" }],
      ["stale iat", { iat: clock.seconds - 61 }],
      ["future iat", { iat: clock.seconds + 10 }],
      ["iat as text", { iat: String(clock.seconds) }],
      ["no jti", { jti: undefined }],
      ["jti a number", { jti: 7 }],
      ["huge jti", { jti: "j".repeat(300) }],
    ];
    for (const [name, options] of cases) {
      const answer = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, ...options }));
      assert.equal(answer.statusCode, 400, `${name}: ${answer.body}`);
      assert.equal(answer.json().error, "invalid_dpop_proof", name);
    }
    const withQuery = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, htu: `${TOKEN_URL}?a=1#f` }));
    assert.equal(withQuery.statusCode, 200, withQuery.body);
    const iatAtEdges = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, iat: clock.seconds - 59 }));
    assert.equal(iatAtEdges.statusCode, 200, iatAtEdges.body);
  });

  test("a replayed jti is refused; a refused proof does not use up its jti", async (t) => {
    const metrics = createMetrics();
    const { app, clock, keys, nonce } = await setUp(t, { metrics });
    const once = await proof(keys, clock, { nonce });
    assert.equal((await tokenRequest(app, LOGIN, once)).statusCode, 200);
    const again = await tokenRequest(app, LOGIN, once);
    assertRefused(again);
    assert.match(again.json().error_description as string, /already used/);
    // A proof refused for anything else has not used up its jti.
    const reused = "jti-of-a-refused-proof";
    assertRefused(await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, jti: reused, htm: "PUT" })));
    assert.equal((await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, jti: reused }))).statusCode, 200);
    // The same jti with another key is another proof (the cache keys by key and jti).
    const jti = "shared-jti";
    assert.equal((await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, jti }))).statusCode, 200);
    assert.equal((await tokenRequest(app, LOGIN, await proof(await es256(), clock, { nonce, jti }))).statusCode, 200);
    const exposition = await metrics.exposition();
    assert.match(exposition, /dpop_proofs_total\{place="token",outcome="replayed"\} 1/);
    assert.match(exposition, /dpop_proofs_total\{place="token",outcome="nonce_missing"\} 1/);
  });

  test("alg none, HS256, a private key in the jwk, no jwk, a wrong typ: refused", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const jwk = (await exportJWK(keys.publicKey)) as JWK;
    const payload = { htm: "POST", htu: TOKEN_URL, iat: clock.seconds, jti: "x1", nonce };
    const privateJwk = await exportJWK(keys.privateKey);
    const proofs: [string, string][] = [
      ["alg none", handMade({ alg: "none", typ: "dpop+jwt", jwk }, payload)],
      ["HS256", handMade({ alg: "HS256", typ: "dpop+jwt", jwk }, payload, "c2lnbmF0dXJl")],
      ["private key", await proof(keys, clock, { nonce, header: { jwk: privateJwk } })],
      ["symmetric key", handMade({ alg: "ES256", typ: "dpop+jwt", jwk: { kty: "oct", k: "c2VjcmV0" } }, payload, "AA")],
      ["no jwk", handMade({ alg: "ES256", typ: "dpop+jwt" }, payload, "AA")],
      ["jwk a string", handMade({ alg: "ES256", typ: "dpop+jwt", jwk: "key" }, payload, "AA")],
      ["typ JWT", await proof(keys, clock, { nonce, header: { typ: "JWT" } })],
      ["another key's signature", await proof(await es256(), clock, { nonce, header: { jwk } })],
      [
        "alg not the key's",
        handMade({ alg: "RS256", typ: "dpop+jwt", jwk }, payload, (await proof(keys, clock, { nonce })).split(".")[2]),
      ],
      [
        "EC key without its curve",
        handMade({ alg: "ES256", typ: "dpop+jwt", jwk: { kty: "EC", x: jwk.x, y: jwk.y } }, payload, "AA"),
      ],
    ];
    for (const [name, text] of proofs) {
      const answer = await tokenRequest(app, LOGIN, text);
      assert.equal(answer.statusCode, 400, `${name}: ${answer.body}`);
      assert.equal(answer.json().error, "invalid_dpop_proof", name);
    }
  });

  test("malformed proofs and two DPoP headers: 400 invalid_dpop_proof, never a 5xx", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const good = await proof(keys, clock, { nonce });
    const junk = [
      "",
      " ",
      "garbage",
      "a.b.c",
      "...",
      "x".repeat(10_000),
      `${base64url("[1,2]")}.${base64url("{}")}.AA`,
      `${base64url("{}")}.${base64url("{}")}.AA`,
      `${base64url('{"alg":"ES256","typ":"dpop+jwt","jwk":{"kty":"EC"}}')}.${base64url("{}")}.AA`,
      `${good.split(".").slice(0, 2).join(".")}.${"A".repeat(86)}`,
      `${good}.extra`,
      good.replace(/\.[^.]+$/, ".%%%"),
      "\u00e9t\u00e9",
    ];
    for (const text of junk) {
      const answer = await tokenRequest(app, LOGIN, text);
      assert.ok(answer.statusCode < 500, `${text.slice(0, 40)}: ${answer.statusCode}`);
      assert.equal(answer.statusCode, 400, `${text.slice(0, 40)}: ${answer.body}`);
      assert.equal(answer.json().error, "invalid_dpop_proof");
    }
    const twice = await tokenRequest(app, LOGIN, [good, await proof(keys, clock, { nonce })]);
    assertRefused(twice);
    const joined = await tokenRequest(app, LOGIN, `${good}, ${good}`);
    assertRefused(joined);
  });

  test("a refresh token bound to a key: refused without a proof and with another key's, good for its holder", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const issued = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce }));
    const refresh = { grant_type: "refresh_token", refresh_token: issued.json().refresh_token as string };
    const bare = await tokenRequest(app, refresh);
    assertRefused(bare);
    assert.equal(bare.json().error_description, REFRESH_TOKEN_NEEDS_PROOF);
    const other = await tokenRequest(app, refresh, await proof(await es256(), clock, { nonce }));
    assertRefused(other, "invalid_grant");
    assert.equal(other.json().error_description, REFRESH_TOKEN_OF_ANOTHER_KEY);
    const holder = await tokenRequest(app, refresh, await proof(keys, clock, { nonce }));
    assert.equal(holder.statusCode, 200, holder.body);
    assert.equal(holder.json().token_type, "DPoP");
    // A refresh token issued without a proof stays a bearer one, refreshed with or without a proof.
    const plain = await tokenRequest(app, LOGIN);
    const unbound = { grant_type: "refresh_token", refresh_token: plain.json().refresh_token as string };
    const upgraded = await tokenRequest(app, unbound, await proof(keys, clock, { nonce }));
    assert.equal(upgraded.statusCode, 200, upgraded.body);
    assert.equal(upgraded.json().token_type, "DPoP");
  });
});

describe("DPoP-bound tokens at GET /me", () => {
  async function boundToken(t: TestContext) {
    const set = await setUp(t);
    const issued = await tokenRequest(set.app, LOGIN, await proof(set.keys, set.clock, { nonce: set.nonce }));
    return { ...set, token: issued.json().access_token as string };
  }
  const me = (app: FastifyInstance, authorization: string, dpop?: string | string[]) =>
    app.inject({ url: "/me", headers: { authorization, ...(dpop === undefined ? {} : { dpop }) } });
  const meProof = (keys: KeyPair, clock: TestClock, token: string, options: ProofOptions = {}) =>
    proof(keys, clock, { htm: "GET", htu: `${PUBLIC_URL}/me`, ath: accessTokenHash(token), ...options });

  function assertChallenged(answer: Awaited<ReturnType<typeof me>>, error: string) {
    assert.equal(answer.statusCode, 401, answer.body);
    assert.deepEqual(answer.json(), { detail: "Could not validate credentials" });
    const challenge = answer.headers["www-authenticate"] as string;
    assert.ok(challenge.startsWith("Bearer, DPoP "), challenge);
    assert.match(challenge, new RegExp(`error="${error}"`));
    assert.match(challenge, /algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"/);
  }

  test("the right proof opens /me; a wrong ath, another key, another URL, a replay, no proof do not", async (t) => {
    const { app, clock, keys, nonce, token } = await boundToken(t);
    const ok = await me(app, `DPoP ${token}`, await meProof(keys, clock, token, { nonce }));
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().email, "ada@example.com");
    assert.equal(ok.headers["dpop-nonce"], nonce);

    assertChallenged(
      await me(app, `DPoP ${token}`, await meProof(keys, clock, token, { nonce, ath: "wrong" })),
      "invalid_dpop_proof",
    );
    assertChallenged(
      await me(app, `DPoP ${token}`, await meProof(keys, clock, token, { nonce, ath: undefined })),
      "invalid_dpop_proof",
    );
    assertChallenged(
      await me(app, `DPoP ${token}`, await meProof(await es256(), clock, token, { nonce })),
      "invalid_dpop_proof",
    );
    assertChallenged(
      await me(app, `DPoP ${token}`, await meProof(keys, clock, token, { nonce, htu: TOKEN_URL })),
      "invalid_dpop_proof",
    );
    assertChallenged(
      await me(app, `DPoP ${token}`, await meProof(keys, clock, token, { nonce, htm: "POST" })),
      "invalid_dpop_proof",
    );
    assertChallenged(await me(app, `DPoP ${token}`), "invalid_dpop_proof");
    const used = await meProof(keys, clock, token, { nonce });
    assert.equal((await me(app, `DPoP ${token}`, used)).statusCode, 200);
    assertChallenged(await me(app, `DPoP ${token}`, used), "invalid_dpop_proof");
    const missingNonce = await me(app, `DPoP ${token}`, await meProof(keys, clock, token));
    assertChallenged(missingNonce, "use_dpop_nonce");
    assert.equal(missingNonce.headers["dpop-nonce"], nonce);
  });

  test("a bound token as Bearer, an unbound token as DPoP, a forged token as DPoP: 401", async (t) => {
    const { app, clock, keys, nonce, token } = await boundToken(t);
    assertChallenged(await me(app, `Bearer ${token}`, await meProof(keys, clock, token, { nonce })), "invalid_token");
    const plain = (await tokenRequest(app, LOGIN)).json().access_token as string;
    assertChallenged(await me(app, `DPoP ${plain}`, await meProof(keys, clock, plain, { nonce })), "invalid_token");
    const forged = `${token.slice(0, -4)}AAAA`;
    assertChallenged(await me(app, `DPoP ${forged}`, await meProof(keys, clock, forged, { nonce })), "invalid_token");
    // The unbound token as Bearer: exactly the spec's answers.
    const bearerOk = await me(app, `Bearer ${plain}`);
    assert.equal(bearerOk.statusCode, 200);
    const none = await me(app, "DPoP");
    assert.equal(none.statusCode, 401);
    assert.deepEqual(none.json(), { detail: "Not authenticated" });
    assert.equal(none.headers["www-authenticate"], "Bearer");
  });
});

describe("an authorization code bound to a key (dpop_jkt)", () => {
  test("redeemed with another key's proof, or none: invalid_grant; malformed dpop_jkt refused", async (t) => {
    const setup = await setUpOidc(t, { publicUrl: PUBLIC_URL });
    const keys = await es256();
    const jkt = await calculateJwkThumbprint(await exportJWK(keys.publicKey), "sha256");
    const nonce = (await tokenRequest(setup.app, LOGIN, await proof(keys, setup.clock))).headers[
      "dpop-nonce"
    ] as string;
    const redeem = async (dpop: string | undefined) => {
      const { code, verifier } = await authorizeCode(setup, "spa", { dpop_jkt: jkt });
      const fields = {
        grant_type: "authorization_code",
        code,
        redirect_uri: REDIRECTS.spa,
        code_verifier: verifier,
        client_id: setup.clients.spa.id,
      };
      return tokenRequest(setup.app, fields, dpop);
    };
    assertRefused(await redeem(undefined), "invalid_grant");
    assertRefused(await redeem(await proof(await es256(), setup.clock, { nonce })), "invalid_grant");
    const good = await redeem(await proof(keys, setup.clock, { nonce }));
    assert.equal(good.statusCode, 200, good.body);
    assert.equal(good.json().token_type, "DPoP");
    const malformed = await setup.app.inject({
      url: `/oauth/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: setup.clients.spa.id,
        redirect_uri: REDIRECTS.spa,
        scope: "openid",
        code_challenge: "A".repeat(43),
        code_challenge_method: "S256",
        dpop_jkt: "not a thumbprint",
      })}`,
      headers: { cookie: setup.cookie },
    });
    assert.equal(malformed.statusCode, 303);
    assert.equal(new URL(malformed.headers.location as string).searchParams.get("error"), "invalid_request");
  });
});

describe("a replayed proof on a second instance sharing Redis", { skip: REDIS_URL ? false : SKIP_REDIS }, () => {
  test("a proof used on one instance is refused on the other", async (t) => {
    const prefix = `dpop-test:${randomBytes(6).toString("hex")}:`;
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    await createUser(store, "ada@example.com", PASSWORD);
    const instances: FastifyInstance[] = [];
    for (let i = 0; i < 2; i++) {
      const counters = new RedisCounterStore({ url: REDIS_URL as string, timeoutMs: 1000, prefix });
      await counters.ready(2000);
      const app = await buildApp({ config: testConfig({ publicUrl: PUBLIC_URL }), store, clock: clock.read, counters });
      t.after(async () => {
        await app.close();
        await counters.close();
      });
      instances.push(app);
    }
    const [a, b] = instances as [FastifyInstance, FastifyInstance];
    const keys = await es256();
    const nonce = (await tokenRequest(a, LOGIN, await proof(keys, clock))).headers["dpop-nonce"] as string;
    const once = await proof(keys, clock, { nonce });
    assert.equal(
      (await tokenRequest(a, LOGIN, once)).statusCode,
      200,
      "the nonce of one instance is good on the other",
    );
    assertRefused(await tokenRequest(b, LOGIN, once));
    const onB = await proof(keys, clock, { nonce });
    assert.equal((await tokenRequest(b, LOGIN, onB)).statusCode, 200);
    assertRefused(await tokenRequest(a, LOGIN, onB));
  });
});

describe("DPoP everywhere a token is issued, and who must use it", () => {
  test("the second-factor step binds its tokens to the proof's key", async (t) => {
    const { app, clock, keys, nonce } = await setUp(t);
    const token = (await tokenRequest(app, LOGIN)).json().access_token as string;
    const post = (url: string, payload: object = {}) =>
      app.inject({ method: "POST", url, headers: { authorization: `Bearer ${token}` }, payload });
    const { secret } = (await post("/me/totp")).json();
    assert.equal((await post("/me/totp/confirm", { code: codeAt(secret, clock.now) })).statusCode, 200);
    clock.advanceSeconds(90);
    const challenged = await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce }));
    assert.equal(challenged.statusCode, 403, challenged.body);
    const second = await tokenRequest(
      app,
      { grant_type: MFA_OTP_GRANT, mfa_token: challenged.json().mfa_token, otp: codeAt(secret, clock.now) },
      await proof(keys, clock, { nonce }),
    );
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(second.json().token_type, "DPoP");
    const claims = JSON.parse(Buffer.from(second.json().access_token.split(".")[1], "base64url").toString());
    assert.deepEqual(claims.cnf, { jkt: await calculateJwkThumbprint(await exportJWK(keys.publicKey), "sha256") });
  });

  test("a refused proof is audited with its reason; a nonce asked for is not", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const events: { type: string; outcome: string; userId: string | null }[] = [];
    const record = store.recordEvent.bind(store);
    store.recordEvent = async (event) => {
      events.push({ type: event.type, outcome: event.outcome, userId: event.userId });
      return record(event);
    };
    const app = await buildApp({ config: testConfig({ publicUrl: PUBLIC_URL }), store, clock: clock.read });
    t.after(() => app.close());
    const keys = await es256();
    const nonce = (await tokenRequest(app, LOGIN, await proof(keys, clock))).headers["dpop-nonce"] as string;
    await tokenRequest(app, LOGIN, await proof(keys, clock, { nonce, htu: `${PUBLIC_URL}/elsewhere` }));
    await tokenRequest(app, LOGIN, "garbage");
    assert.deepEqual(
      events.filter((event) => event.type === "dpop"),
      [
        { type: "dpop", outcome: "refused_htu", userId: null },
        { type: "dpop", outcome: "refused_malformed", userId: null },
      ],
    );
  });

  test("dpop_bound_access_tokens: set by an admin and by a dynamic registration, shown, and held to", async (t) => {
    const initialAccessToken = "an-initial-access-token-of-32-bytes-or-more";
    const { app, store, clock } = await buildTestApp(t, {
      publicUrl: PUBLIC_URL,
      dynamicRegistration: {
        initialAccessToken,
        grantTypes: ["authorization_code", "refresh_token", "client_credentials"],
        scopes: ["openid", "orders:read"],
      },
    });
    const admin = await store.create({
      email: "admin@example.com",
      hashedPassword: await passwords.hash(PASSWORD),
      isAdmin: true,
    });
    const adminToken = (await tokenRequest(app, { username: admin.email, password: PASSWORD })).json().access_token;
    const byAdmin = await app.inject({
      method: "POST",
      url: "/clients",
      headers: { authorization: `Bearer ${adminToken}` },
      payload: { client_name: "Strict", grant_types: ["client_credentials"], dpop_bound_access_tokens: true },
    });
    assert.equal(byAdmin.statusCode, 201, byAdmin.body);
    assert.equal(byAdmin.json().dpop_bound_access_tokens, true);
    const registered = await app.inject({
      method: "POST",
      url: "/auth/register",
      headers: { authorization: `Bearer ${initialAccessToken}` },
      payload: { client_name: "Dynamic", grant_types: ["client_credentials"], dpop_bound_access_tokens: true },
    });
    assert.equal(registered.statusCode, 201, registered.body);
    assert.equal(registered.json().dpop_bound_access_tokens, true);
    for (const created of [byAdmin.json(), registered.json()]) {
      const basic = `Basic ${Buffer.from(`${created.client_id}:${created.client_secret}`).toString("base64")}`;
      const ask = (dpop?: string) =>
        app.inject({
          method: "POST",
          url: "/auth/token",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: basic,
            ...(dpop === undefined ? {} : { dpop }),
          },
          payload: "grant_type=client_credentials",
        });
      assertRefused(await ask());
      const keys = await es256();
      const nonce = (await ask(await proof(keys, clock))).headers["dpop-nonce"] as string;
      const bound = await ask(await proof(keys, clock, { nonce }));
      assert.equal(bound.statusCode, 200, bound.body);
      assert.equal(bound.json().token_type, "DPoP");
    }
    const changed = await app.inject({
      method: "PATCH",
      url: `/clients/${byAdmin.json().client_id}`,
      headers: { authorization: `Bearer ${adminToken}` },
      payload: { dpop_bound_access_tokens: false },
    });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal(changed.json().dpop_bound_access_tokens, false);
  });
});
