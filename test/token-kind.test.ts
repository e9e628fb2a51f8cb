// tokenKind remembers the kinds of the tokens it was last asked about, by signature (issue 34): a
// token that reuses a remembered signature with another payload must still be judged by its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { tokenKind } from "../src/auth/tokens.ts";

const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
const header = segment({ alg: "HS256", typ: "at+jwt", kid: "k" });
const token = (payload: object, signature = "c2lnbmF0dXJl") => `${header}.${segment(payload)}.${signature}`;

test("tokenKind: each token is judged by its own payload, even when another with its signature was seen before", () => {
  const client = token({ sub: "c1", client_id: "c1" });
  const user = token({ sub: "u1", stamp: "s" });
  const delegated = token({ sub: "u1", client_id: "c1" });
  for (let round = 0; round < 2; round++) {
    assert.equal(tokenKind(client), "client");
    assert.equal(tokenKind(user), "user");
    assert.equal(tokenKind(delegated), "delegated");
    assert.equal(tokenKind(token({ sub: "x" })), "unknown");
    assert.equal(tokenKind("not.a-token"), "unknown");
  }
  // Longer than what is remembered: judged each time all the same.
  const long = token({ sub: "c2", client_id: "c2", pad: "x".repeat(2000) });
  assert.equal(tokenKind(long), "client");
  assert.equal(tokenKind(long), "client");
});
