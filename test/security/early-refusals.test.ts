// Refusals answered while the client is still sending (issue 32, defect 13),
// on the real process over real TCP: a body over the limit (413, with a
// Content-Length or chunked), a body of the wrong media type (415) and
// headers over Node's limit (431) reach a client that keeps writing a 2-8 MB
// body, every time, status and whole body; closing at once used to reset the
// connection under the answer (EPIPE, no answer). And the lingering has its
// bounds: a client whose body never ends is closed after LINGER_MS, and no
// more than LINGER_BYTES of what it sends is read.
import assert from "node:assert/strict";
import { once } from "node:events";
import { request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import { connect } from "node:net";
import { describe, test } from "node:test";
import { LINGER_BYTES, LINGER_MS } from "../../src/platform/lingering-close.ts";
import { scratchDir, startService } from "../process.ts";
import { ending, parseResponse } from "../raw-http.ts";

const SECRET = "early-refusals-secret-of-32-bytes-or-more";
const REPETITIONS = 30;
const JSON_TYPE = "application/json; charset=utf-8";

type Outcome = { status: number; headers: Record<string, unknown>; body: string } | { failure: string };

/**
 * One POST whose body (`size` bytes) is still being written when the answer comes, as node:http sends
 * it, as fast as the connection takes it (as a piped stream writes): the answer as the client read it
 * (status, headers, whole body), or what it saw instead. An error of the writing after the whole
 * answer was read is no failure.
 */
function postWhileAnswered(port: number, path: string, headers: OutgoingHttpHeaders, size: number): Promise<Outcome> {
  const chunk = Buffer.alloc(64 * 1024, "a");
  return new Promise((resolve) => {
    let answered = false;
    const request = httpRequest({ host: "127.0.0.1", port, method: "POST", path, headers, agent: false });
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => {
        body += text;
      });
      response.on("end", () => {
        answered = true;
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
      response.on("aborted", () => resolve({ failure: "the answer was cut short" }));
    });
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (!answered) resolve({ failure: `${error.code ?? error.message} and no answer` });
    });
    let sent = 0;
    const writeMore = () => {
      if (answered || request.destroyed) return;
      if (sent >= size) {
        request.end();
        return;
      }
      const piece = chunk.subarray(0, Math.min(chunk.length, size - sent));
      sent += piece.length;
      if (request.write(piece)) setImmediate(writeMore);
      else request.once("drain", writeMore);
    };
    writeMore();
  });
}

/**
 * Runs `REPETITIONS` requests one after another, checks every answer that came whole, and returns
 * how many got none.
 */
async function unanswered(
  what: string,
  send: (size: number) => Promise<Outcome>,
  expected: { status: number; contentType: string; detail: string },
): Promise<number> {
  const failures: string[] = [];
  for (let i = 0; i < REPETITIONS; i++) {
    // 2 to 8 MB, each a different size.
    const size = 2_000_000 + Math.round((6_000_000 * i) / (REPETITIONS - 1));
    const outcome = await send(size);
    if ("failure" in outcome) {
      failures.push(`${size} bytes: ${outcome.failure}`);
      continue;
    }
    assert.equal(outcome.status, expected.status, `${what}, ${size} bytes`);
    assert.equal(outcome.headers["content-type"], expected.contentType, what);
    assert.equal(outcome.headers.connection, "close", what);
    assert.deepEqual(JSON.parse(outcome.body), { detail: expected.detail }, `${what}, ${size} bytes`);
  }
  if (failures.length > 0)
    console.log(`${what}: no answer for ${failures.length} of ${REPETITIONS}, e.g. ${failures[0]}`);
  return failures.length;
}

describe("a refusal answered while the client is still sending", () => {
  test("413, 415 and 431 reach a client still writing a 2-8 MB body, every time", async (t) => {
    const service = await startService(scratchDir(t), { SIGNING_SECRET: SECRET });
    t.after(() => service.stop());
    const port = Number(new URL(service.baseUrl).port);

    const missed: Record<string, number> = {};
    missed["413, Content-Length over the limit"] = await unanswered(
      "413, Content-Length over the limit",
      (size) => postWhileAnswered(port, "/users", { "content-type": "application/json", "content-length": size }, size),
      { status: 413, contentType: JSON_TYPE, detail: "Request body is too large" },
    );
    missed["413, chunked"] = await unanswered(
      "413, a chunked body that grows over the limit",
      (size) => postWhileAnswered(port, "/users", { "content-type": "application/json" }, size),
      { status: 413, contentType: JSON_TYPE, detail: "Request body is too large" },
    );
    missed["415"] = await unanswered(
      "415, a body of the wrong media type",
      (size) => postWhileAnswered(port, "/users", { "content-type": "text/plain", "content-length": size }, size),
      { status: 415, contentType: JSON_TYPE, detail: "Unsupported Media Type" },
    );
    missed["431"] = await unanswered(
      "431, headers over the limit before the body",
      (size) =>
        postWhileAnswered(
          port,
          "/users",
          { "content-type": "application/json", "content-length": size, "x-padding": "p".repeat(20_000) },
          size,
        ),
      // Answered by the HTTP server's error handler, before any route: its own Content-Type.
      { status: 431, contentType: "application/json", detail: "The request headers are too large" },
    );
    assert.deepEqual(
      missed,
      { "413, Content-Length over the limit": 0, "413, chunked": 0, "415": 0, "431": 0 },
      `clients (of ${REPETITIONS} each) that got no answer`,
    );
    // Still serving, and no refusal counted as the service's fault.
    assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200);
    assert.doesNotMatch(service.output(), /"level":50/);
  });

  test("a client that never stops sending is read for LINGER_BYTES at most and closed after LINGER_MS", async (t) => {
    const service = await startService(scratchDir(t), { SIGNING_SECRET: SECRET });
    t.after(() => service.stop());
    const port = Number(new URL(service.baseUrl).port);

    /**
     * A chunked POST whose chunks never end, `chunkBytes` each, written as fast as the connection takes
     * them (`everyMs` 0) or one every `everyMs`, on a socket that ignores the service's FIN (it keeps
     * its own side open, as a hostile client would): when and with what the connection ended, and how
     * many bytes the connection took.
     */
    async function endlessBody(chunkBytes: number, everyMs: number) {
      const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
      await once(socket, "connect");
      const end = ending(socket);
      socket.write(
        "POST /users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      );
      const piece = Buffer.from(`${chunkBytes.toString(16)}\r\n${"a".repeat(chunkBytes)}\r\n`);
      let taken = 0;
      let stopped = false;
      const writeMore = () => {
        if (stopped || !socket.writable) return;
        taken += piece.length;
        if (!socket.write(piece)) socket.once("drain", writeMore);
        else if (everyMs === 0) setImmediate(writeMore);
        else setTimeout(writeMore, everyMs);
      };
      writeMore();
      const ended = await Promise.race([
        end,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("still open after 10 s")), 10_000).unref()),
      ]).finally(() => {
        stopped = true;
        socket.destroy();
      });
      const parsed = parseResponse(ended.received);
      assert.ok(parsed, `a whole answer before the close, got ${JSON.stringify(ended.received.slice(0, 200))}`);
      assert.equal(parsed.response.status, 413);
      assert.equal(parsed.response.headers.connection, "close");
      assert.deepEqual(JSON.parse(parsed.response.body), { detail: "Request body is too large" });
      return { ms: ended.ms, taken };
    }
    const closedAtTheBound = (ms: number, what: string) => {
      assert.ok(ms >= LINGER_MS - 100, `${what}: closed after ${Math.round(ms)} ms, before the ${LINGER_MS} ms bound`);
      assert.ok(
        ms < LINGER_MS + 1000,
        `${what}: closed after ${Math.round(ms)} ms, long after the ${LINGER_MS} ms bound`,
      );
    };

    // 4 KiB every 10 ms (about 400 KB/s): read and dropped until the time bound ends it.
    const slow = await endlessBody(4096, 10);
    closedAtTheBound(slow.ms, "a slow endless body");
    // As fast as the connection takes it: past LINGER_BYTES the service stops reading, so the client
    // stalls with what the socket buffers on both sides hold (a few MiB on loopback); read on, two
    // seconds of loopback would take hundreds of MiB.
    const fast = await endlessBody(64 * 1024, 0);
    closedAtTheBound(fast.ms, "a fast endless body");
    assert.ok(
      fast.taken < LINGER_BYTES + 32 * 1024 * 1024,
      `the connection took ${(fast.taken / 1048576).toFixed(1)} MiB: the service did not stop reading`,
    );
    assert.equal((await fetch(`${service.baseUrl}/healthz`)).status, 200);
  });
});
