// Attack: a remembered token outliving what made it valid. The cache of
// verified tokens (src/auth/verified-tokens.ts) must check expiry on every
// call, and must never let a token in that was not verified in full.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ACCESS_TOKEN_LIFETIME_SECONDS, createTokenService, InvalidToken } from "../../src/auth/tokens.ts";
import { withVerifiedTokenCache } from "../../src/auth/verified-tokens.ts";
import { TEST_AUDIENCE, TEST_ISSUER, TEST_SECRET, TestClock } from "../helpers.ts";

function service(clock: TestClock, maxEntries = 10) {
  let verifications = 0;
  const inner = createTokenService({
    secrets: [TEST_SECRET],
    issuer: () => TEST_ISSUER,
    audience: () => TEST_AUDIENCE,
    clock: clock.read,
  });
  const counted = {
    ...inner,
    verifyAccessToken(token: string) {
      verifications += 1;
      return inner.verifyAccessToken(token);
    },
    verifyClientAccessToken(token: string) {
      verifications += 1;
      return inner.verifyClientAccessToken(token);
    },
  };
  const tokens = withVerifiedTokenCache(counted, { clock: clock.read, leewaySeconds: 0, maxEntries });
  return { tokens, verifications: () => verifications };
}

const subject = { email: "ada@example.com", credentialStamp: "stamp" };

describe("remembered verified tokens", () => {
  test("a token verified once is answered from memory, and still expires on time", () => {
    const clock = new TestClock();
    const { tokens, verifications } = service(clock);
    const token = tokens.issueAccessToken(subject);
    assert.equal(tokens.verifyAccessToken(token).sub, "ada@example.com");
    assert.equal(tokens.verifyAccessToken(token).stamp, "stamp");
    assert.equal(verifications(), 1);
    clock.advanceSeconds(ACCESS_TOKEN_LIFETIME_SECONDS);
    assert.throws(() => tokens.verifyAccessToken(token), InvalidToken);
  });

  test("a client's token verified once is answered from memory, still expires on time, and is never a user's", () => {
    const clock = new TestClock();
    const { tokens, verifications } = service(clock);
    const token = tokens.issueClientAccessToken("client-1", "read", ["https://api.example"]);
    const first = tokens.verifyClientAccessToken(token);
    assert.deepEqual(tokens.verifyClientAccessToken(token), first);
    assert.deepEqual(
      { sub: first.sub, client_id: first.client_id, scope: first.scope },
      { sub: "client-1", client_id: "client-1", scope: "read" },
    );
    assert.equal(verifications(), 1);
    // The user-token side keeps its own memory: a client token is refused there, verified in full.
    assert.throws(() => tokens.verifyAccessToken(token), InvalidToken);
    assert.equal(verifications(), 2);
    // And a user's token is not a client's, however often asked.
    const user = tokens.issueAccessToken(subject);
    tokens.verifyAccessToken(user);
    assert.throws(() => tokens.verifyClientAccessToken(user), InvalidToken);
    assert.throws(() => tokens.verifyClientAccessToken(user), InvalidToken);
    assert.equal(verifications(), 5);
    clock.advanceSeconds(ACCESS_TOKEN_LIFETIME_SECONDS * 48);
    assert.throws(() => tokens.verifyClientAccessToken(token), InvalidToken);
  });

  test("a token that failed is verified in full every time; a tampered copy of a remembered one fails", () => {
    const clock = new TestClock();
    const { tokens, verifications } = service(clock);
    const token = tokens.issueAccessToken(subject);
    tokens.verifyAccessToken(token);
    const tampered = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`;
    assert.throws(() => tokens.verifyAccessToken(tampered), InvalidToken);
    assert.throws(() => tokens.verifyAccessToken(tampered), InvalidToken);
    assert.equal(verifications(), 3);
  });

  test("a remembered token's signature under another payload is verified in full and refused", () => {
    const clock = new TestClock();
    const { tokens, verifications } = service(clock);
    const token = tokens.issueAccessToken(subject);
    tokens.verifyAccessToken(token);
    const [header, payload, signature] = token.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, sub: "mallory@example.com" })).toString("base64url");
    const forged = `${header}.${forgedPayload}.${signature}`;
    assert.throws(() => tokens.verifyAccessToken(forged), InvalidToken);
    assert.equal(verifications(), 2, "the forged token was not answered from memory");
    assert.equal(tokens.verifyAccessToken(token).sub, "ada@example.com", "the real one is still remembered");
    assert.equal(verifications(), 2);
  });

  test("holds at most maxEntries tokens", () => {
    const clock = new TestClock();
    const { tokens, verifications } = service(clock, 2);
    const issued = ["a", "b", "c"].map((sid) => tokens.issueAccessToken(subject, sid));
    for (const token of issued) tokens.verifyAccessToken(token);
    tokens.verifyAccessToken(issued[0] as string);
    assert.equal(verifications(), 4, "the oldest was dropped");
  });
});
