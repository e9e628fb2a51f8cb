// The real process over real TCP (issue 15): clients that stall while sending
// a request are answered 408 and closed within the configured limits while
// everyone else is served; and SIGTERM drains: /readyz turns 503 at once,
// keep-alive clients sending across the signal lose no request, the request
// in flight finishes, the process exits 0.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { describe, test } from "node:test";
import { scratchDir, startService } from "./process.ts";
import { type Ending, ending, KeepAliveConnection, openSocket, parseResponse, requestText } from "./raw-http.ts";

const SECRET = "connections-test-secret-of-32-bytes-or-more";
const portOf = (baseUrl: string) => Number(new URL(baseUrl).port);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the service's output matches, failing after `ms`. */
async function outputMatches(output: () => string, pattern: RegExp, ms: number): Promise<void> {
  const started = performance.now();
  while (!pattern.test(output())) {
    if (performance.now() - started > ms) assert.fail(`no ${pattern} in the output within ${ms} ms:\n${output()}`);
    await sleep(10);
  }
}

/** A bound on a promise, so that a connection the old code never closes fails the test instead of hanging it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => assert.fail(`${what}: still open after ${ms} ms`) as never)]);
}

function assert408(end: Ending, what: string): void {
  const parsed = parseResponse(end.received);
  assert.ok(parsed, `${what}: a complete response before the close, got ${JSON.stringify(end.received)}`);
  assert.equal(parsed.response.status, 408, what);
  assert.equal(parsed.response.headers["content-type"], "application/json", what);
  assert.equal(parsed.response.headers.connection, "close", what);
  assert.deepEqual(JSON.parse(parsed.response.body), { detail: "The request was not received in time" }, what);
}

describe("slow and stalled clients", () => {
  test("stalled bodies, a trickled body and stalled headers get 408 and are closed within the limits; others are served meanwhile", async (t) => {
    const HEADERS_MS = 1000;
    const REQUEST_MS = 2000;
    const service = await startService(scratchDir(t), {
      SIGNING_SECRET: SECRET,
      HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      METRICS_PORT: "0",
    });
    t.after(() => service.stop());
    const port = portOf(service.baseUrl);
    // Node sweeps for expired requests every min(1000, HEADERS_TIMEOUT_MS / 2) ms.
    const SWEEP_MS = 500;
    const SLACK_MS = 1500;

    // (wrapped in an object: an async function returning the promise itself would wait for the close)
    const stalls = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const socket = await openSocket(port);
        const end = ending(socket);
        socket.write(
          "POST /users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 80\r\n\r\n" +
            '{"email": "stall',
        );
        return { end };
      }),
    );
    const stalledBodies = stalls.map((stall) => stall.end);
    // One byte every 250 ms: never idle, but never finished either.
    const trickle = await openSocket(port);
    const trickled = ending(trickle);
    trickle.write(
      "POST /users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n",
    );
    const dripping = setInterval(() => trickle.writable && trickle.write(" "), 250);
    t.after(() => clearInterval(dripping));
    const headersSocket = await openSocket(port);
    const stalledHeaders = ending(headersSocket);
    headersSocket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    // Sends nothing at all: Node counts its headers time from the connection's opening.
    const silent = ending(await openSocket(port));

    // Meanwhile ordinary requests are served promptly.
    const started = performance.now();
    let served = 0;
    while (performance.now() - started < REQUEST_MS + SWEEP_MS) {
      const before = performance.now();
      const response = await fetch(`${service.baseUrl}/readyz`);
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      assert.ok(performance.now() - before < 1000, "an ordinary request is answered within a second");
      served++;
      await sleep(50);
    }
    assert.ok(served >= 10, `served ${served} ordinary requests meanwhile`);

    // Each is answered 408 and closed no sooner than its limit and no later than one sweep (plus slack) after it.
    const closedAt = (end: Ending, what: string, limitMs: number) => {
      assert408(end, what);
      assert.ok(
        end.ms >= limitMs - 50,
        `${what} closed after ${Math.round(end.ms)} ms, before the ${limitMs} ms limit`,
      );
      assert.ok(end.ms < limitMs + SWEEP_MS + SLACK_MS, `${what} closed after ${Math.round(end.ms)} ms`);
    };
    const bodies = await within(Promise.all(stalledBodies), 5000, "stalled bodies");
    for (const [i, end] of bodies.entries()) closedAt(end, `stalled body ${i}`, REQUEST_MS);
    closedAt(await within(trickled, 5000, "trickled body"), "trickled body", REQUEST_MS);
    closedAt(await within(stalledHeaders, 5000, "stalled headers"), "stalled headers", HEADERS_MS);
    closedAt(await within(silent, 5000, "silent connection"), "silent connection", HEADERS_MS);

    assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200, "still serving afterwards");
    const metricsPort = /"address":\{"address":"127\.0\.0\.1","family":"IPv4","port":(\d+)\}/.exec(service.output());
    assert.ok(metricsPort, service.output());
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort[1]}/metrics`)).text();
    assert.match(
      metrics,
      /^http_connection_errors_total\{status="408"\} 43$/m,
      "40 stalled bodies, trickle, headers, silent",
    );
    assert.equal(await service.stop(), 0);
    assert.match(service.output(), /request not received in time: 408/);
  });
});

/** The listen backlog of the socket on `port` as the kernel reports it (ss's Send-Q), if `ss` is there. */
function listenBacklog(port: number): number | undefined {
  try {
    const line = execFileSync("ss", ["-ltnH", `sport = :${port}`], { encoding: "utf8" }).trim();
    return Number(line.split(/\s+/)[2]);
  } catch {
    return undefined;
  }
}

describe("connection storms", () => {
  test("LISTEN_BACKLOG reaches the listening socket", {
    skip: listenBacklog(1) === undefined && "needs ss",
  }, async (t) => {
    const service = await startService(scratchDir(t), { SIGNING_SECRET: SECRET, LISTEN_BACKLOG: "123" });
    t.after(() => service.stop());
    assert.equal(listenBacklog(portOf(service.baseUrl)), 123);
  });
});

describe("drain on SIGTERM", () => {
  test("/readyz turns 503 at once, keep-alive clients sending across the signal lose no request, the request in flight finishes, exit 0", async (t) => {
    const DELAY_MS = 1500;
    const service = await startService(scratchDir(t), {
      SIGNING_SECRET: SECRET,
      SHUTDOWN_DELAY_MS: String(DELAY_MS),
      SHUTDOWN_TIMEOUT_MS: "8000",
    });
    t.after(() => service.stop());
    const port = portOf(service.baseUrl);

    // Idle keep-alive connections: one answered request each, then silence.
    const idle = await Promise.all(Array.from({ length: 4 }, () => KeepAliveConnection.open(port)));
    for (const connection of idle) assert.equal((await connection.send("GET", "/healthz")).status, 200);

    // A request in flight across the whole drain: its body is completed only once the listener has closed.
    const request = requestText(
      "POST",
      "/users",
      { "Content-Type": "application/json" },
      JSON.stringify({ email: "late@example.com", password: "correct horse battery" }),
    );
    const bodyStart = request.indexOf("\r\n\r\n") + 4;
    const slow = await KeepAliveConnection.open(port);
    const slowResponse = slow.sendRaw(request.slice(0, bodyStart + 10));

    // Keep-alive clients sending one request after another, as a load balancer's pool would. Told
    // `Connection: close`, a client reconnects until the "load balancer" has noticed /readyz failing,
    // which it does 400 ms after the first 503, as a health check interval would.
    let noticed = false;
    const tally = { sent: 0, answered: 0, closedByServer: 0, refused: 0, failures: [] as string[] };
    const client = async () => {
      while (!noticed) {
        let connection: KeepAliveConnection;
        try {
          connection = await KeepAliveConnection.open(port);
        } catch (error) {
          tally.refused++;
          return `refused: ${(error as Error).message}`;
        }
        for (;;) {
          tally.sent++;
          let response: Awaited<ReturnType<KeepAliveConnection["send"]>>;
          try {
            response = await connection.send("GET", "/healthz");
          } catch (error) {
            tally.failures.push((error as Error).message);
            return "failed";
          }
          tally.answered++;
          if (response.status !== 200) tally.failures.push(`status ${response.status}`);
          if (response.headers.connection === "close") {
            tally.closedByServer++;
            await connection.closed;
            break;
          }
          await sleep(Math.random() * 3);
        }
      }
      return "stopped";
    };
    const clients = Array.from({ length: 8 }, client);
    await sleep(300);

    const signalled = performance.now();
    service.child.kill("SIGTERM");
    // What a load balancer's health check sees: /readyz on a new connection, every 20 ms.
    let readyz: Response | undefined;
    let probeError: unknown;
    while (performance.now() - signalled < DELAY_MS) {
      readyz = await fetch(`${service.baseUrl}/readyz`, { headers: { connection: "close" } }).catch((error) => {
        probeError = error;
        return undefined;
      });
      if (readyz?.status !== 200) break;
      await readyz.arrayBuffer();
      await sleep(20);
    }
    const notReadyAfter = performance.now() - signalled;
    const healthz = await fetch(`${service.baseUrl}/healthz`, { headers: { connection: "close" } }).catch(
      (error: Error) => error,
    );
    await sleep(400);
    noticed = true;
    const outcomes = await within(Promise.all(clients), 8000, "keep-alive clients");
    assert.deepEqual(tally.failures, [], `every request sent got a 200 (${JSON.stringify(tally)})`);
    assert.equal(tally.answered, tally.sent, JSON.stringify(tally));
    assert.ok(tally.sent > 50, `the clients kept sending (${JSON.stringify(tally)}, ${outcomes.join(", ")})`);
    assert.ok(tally.closedByServer >= 8, "every client was told Connection: close");

    assert.ok(readyz, `/readyz answered during the delay (${probeError})`);
    assert.equal(readyz.status, 503);
    assert.deepEqual(await readyz.json(), { detail: "The service is shutting down" });
    assert.ok(notReadyAfter < DELAY_MS, `/readyz was 503 ${Math.round(notReadyAfter)} ms after SIGTERM`);
    assert.ok(healthz instanceof Response && healthz.status === 200, `/healthz still 200 during the delay: ${healthz}`);

    await outputMatches(service.output, /closing the listener/, 8000);
    slow.socket.write(request.slice(bodyStart + 10));
    const late = await within(slowResponse, 5000, "request in flight");
    assert.equal(late.status, 201, "the request in flight when the listener closed is answered");
    assert.equal(late.headers.connection, "close");

    const idleEnds = await within(Promise.all(idle.map((connection) => connection.closed)), 5000, "idle connections");
    for (const end of idleEnds) {
      assert.equal(end.error, undefined, "an idle connection is closed, not reset");
      assert.equal(parseResponse(end.received)?.rest, "", "and nothing is written to it after its one answer");
    }
    const [code] = await within(once(service.child, "exit"), 8000, "process");
    const shutdownMs = performance.now() - signalled;
    assert.equal(code, 0);
    assert.ok(shutdownMs >= DELAY_MS, `exited ${Math.round(shutdownMs)} ms after SIGTERM, after the delay`);
    assert.ok(shutdownMs < 8000, `exited ${Math.round(shutdownMs)} ms after SIGTERM, within SHUTDOWN_TIMEOUT_MS`);
    assert.match(service.output(), /"msg":"stopped"/);
  });
});
