// The access line: one per request at info, in pino's shape, built by hand (src/platform/access-log.ts). These
// tests read the lines back as JSON, so a field written without the escaping it needs (here the client
// address, which a trusted proxy's header supplies), or a number written wrongly, fails here.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import Fastify from "fastify";
import { buildApp } from "../src/app.ts";
import { accessLogHook, milliseconds } from "../src/platform/access-log.ts";
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
  test("each line carries its own path and address when they change from line to line; a vanished address is left out", () => {
    const written: string[] = [];
    const app = Fastify({ logger: { level: "info", stream: { write: (line: string) => written.push(line) } } });
    const hook = accessLogHook(app);
    assert.ok(hook);
    const requests = [
      { url: "/me", ip: "10.0.0.1" },
      { url: "/me", ip: "10.0.0.1" },
      { url: "/me?code=x", ip: "10.0.0.1" },
      { url: "/me?code=x", ip: "10.0.0.2" },
      { url: "/me", ip: undefined },
      { url: "/me", ip: "10.0.0.1" },
      { url: "/no", ip: "10.0.0.9" },
    ];
    for (const [i, { url, ip }] of requests.entries()) {
      const request = { id: `r${i}`, method: "GET", url, ip };
      hook(request as never, { statusCode: 200, elapsedTime: 1.5 } as never, () => {});
    }
    const lines = written.map((line) => JSON.parse(line));
    assert.deepEqual(
      lines.map((line) => [line.reqId, line.req]),
      [
        ["r0", { method: "GET", url: "/me", remoteAddress: "10.0.0.1" }],
        ["r1", { method: "GET", url: "/me", remoteAddress: "10.0.0.1" }],
        ["r2", { method: "GET", url: "/me?code=%5Bredacted%5D", remoteAddress: "10.0.0.1" }],
        ["r3", { method: "GET", url: "/me?code=%5Bredacted%5D", remoteAddress: "10.0.0.2" }],
        ["r4", { method: "GET", url: "/me" }],
        ["r5", { method: "GET", url: "/me", remoteAddress: "10.0.0.1" }],
        ["r6", { method: "GET", url: "/no", remoteAddress: "10.0.0.9" }],
      ],
    );
    assert.deepEqual(Object.keys(lines[4]), [
      "level",
      "time",
      "pid",
      "hostname",
      "reqId",
      "req",
      "res",
      "responseTime",
      "msg",
    ]);
    assert.deepEqual(lines[4].res, { statusCode: 200 });
    assert.equal(lines[4].responseTime, 1.5);
  });
});
