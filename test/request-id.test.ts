// X-Request-Id: taken from the caller when it is a plain token, generated
// otherwise, returned on every response and carried by the access-log line.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { openTestStore, testConfig } from "./helpers.ts";

async function appWithLog(t: Parameters<typeof openTestStore>[0]) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const store = await openTestStore(t);
  const app = await buildApp({ config: testConfig({ logLevel: "info" }), store, logStream: stream });
  t.after(() => app.close());
  return { app, lines };
}

describe("request ids", () => {
  test("returns the caller's X-Request-Id and logs the request under it", async (t) => {
    const { app, lines } = await appWithLog(t);
    const response = await app.inject({ method: "GET", url: "/nope", headers: { "x-request-id": "trace-42.abc:1" } });
    assert.equal(response.headers["x-request-id"], "trace-42.abc:1");
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === "request completed");
    assert.equal(logged?.reqId, "trace-42.abc:1");
  });

  test("generates a UUID when the caller sends none, or one that is too long or not plain", async (t) => {
    const { app } = await appWithLog(t);
    for (const incoming of [undefined, "x".repeat(129), "bad id\nforged log line", "<script>"]) {
      const headers: Record<string, string> = incoming === undefined ? {} : { "x-request-id": incoming };
      const response = await app.inject({ method: "GET", url: "/healthz", headers });
      assert.match(
        String(response.headers["x-request-id"]),
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        String(incoming),
      );
    }
  });
});
