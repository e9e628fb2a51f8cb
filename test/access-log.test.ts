// The access line: one per request at info, in pino's shape, built by hand (src/platform/access-log.ts). These
// tests read the lines back as JSON, so a field written without the escaping it needs (here the client
// address, which a trusted proxy's header supplies), or a number written wrongly, fails here.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { milliseconds } from "../src/platform/access-log.ts";
import { openTestStore, testConfig } from "./helpers.ts";

describe("the access line", () => {
  test("responseTime is written in milliseconds with three decimals, rounded to the microsecond", () => {
    const cases: [number, string][] = [
      [0, "0.000"],
      [0.0004, "0.000"],
      [0.0005, "0.001"],
      [0.05, "0.050"],
      [0.823456789, "0.823"],
      [1.23456, "1.235"],
      [12.3, "12.300"],
      [999.9996, "1000.000"],
      [123456.789012, "123456.789"],
    ];
    for (const [elapsed, written] of cases) assert.equal(milliseconds(elapsed), written, String(elapsed));
  });

  test("is valid JSON in pino's shape, with the path and the address escaped", async (t) => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    const store = await openTestStore(t);
    const app = await buildApp({ config: testConfig({ logLevel: "info" }), store, logStream: stream });
    t.after(() => app.close());
    const before = Date.now();
    await app.inject({
      method: "GET",
      url: '/nope/"quoted"\\back?token=abc&x=1',
      headers: { "x-request-id": "trace-7" },
    });
    await app.inject({ method: "GET", url: "/healthz", remoteAddress: '10.0.0.1"\n' });
    const access = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === "request completed");
    assert.equal(access.length, 2);
    const [first, second] = access;
    assert.equal(first.level, 30);
    assert.ok(first.time >= before && first.time <= Date.now(), String(first.time));
    assert.equal(first.pid, process.pid);
    assert.equal(typeof first.hostname, "string");
    assert.equal(first.reqId, "trace-7");
    // (inject hands the path on percent-encoded, as a client would send it)
    assert.deepEqual(first.req, {
      method: "GET",
      url: "/nope/%22quoted%22/back?token=%5Bredacted%5D&x=1",
      remoteAddress: "127.0.0.1",
    });
    assert.deepEqual(first.res, { statusCode: 404 });
    assert.equal(typeof first.responseTime, "number");
    assert.ok(first.responseTime >= 0);
    assert.match(JSON.stringify(first.responseTime), /^\d+(\.\d{1,3})?$/);
    assert.match(second.reqId, /^[0-9a-f-]{36}$/);
    assert.equal(second.req.remoteAddress, '10.0.0.1"\n');
    assert.deepEqual(second.res, { statusCode: 200 });
  });
});
