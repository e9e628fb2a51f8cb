// Connection storm (issue 15, item 8): while the service is busy with logins,
// CLIENTS new connections arrive at once, each sending GET /healthz and then
// staying open, as a fleet of clients reconnecting after a network blip would.
// Meanwhile a new client probes GET /healthz every 500 ms on a fresh connection.
// Reports how many storm connections were answered over time, the probes'
// latencies, the kernel's listen-queue overflow counters and the service's
// event-loop delay. Loopback only; stops by itself after SECONDS.
//
//   node bench/connection-storm.ts [LISTEN_BACKLOG=511] [CLIENTS=2000] [SECONDS=20] [LOGIN_LOOPS=8] [STORM=healthz]
//
// STORM=login makes every storm client log in (POST /auth/token) instead of GET /healthz, as
// clients re-authenticating after an outage would: then Argon2id work queues up behind them.
//
// Compare backlogs by running it twice, e.g. with 511 and 4096. The kernel caps the backlog at
// net.core.somaxconn (printed). Figures vary with whatever else runs on the machine: run it more
// than once and read the spread, not one number.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, SERVICE, startChild } from "./processes.ts";

const [backlog = "511", clients = "2000", seconds = "20", loginLoops = "8", storm = "healthz"] = process.argv.slice(2);
const CLIENTS = Number(clients);
const DURATION_MS = Number(seconds) * 1000;
const PASSWORD = "correct horse battery staple";

function kernel(name: string): string {
  try {
    return readFileSync(`/proc/sys/net/${name}`, "utf8").trim();
  } catch {
    return "?";
  }
}

/** TcpExt ListenOverflows and ListenDrops: machine-wide counters, so other work on the machine shows too. */
function listenCounters(): { overflows: number; drops: number } {
  const lines = readFileSync("/proc/net/netstat", "utf8").split("\n");
  const header = lines.find((line) => line.startsWith("TcpExt:"))?.split(/\s+/) ?? [];
  const values = lines.filter((line) => line.startsWith("TcpExt:"))[1]?.split(/\s+/) ?? [];
  const read = (key: string) => Number(values[header.indexOf(key)] ?? Number.NaN);
  return { overflows: read("ListenOverflows"), drops: read("ListenDrops") };
}

async function eventLoopDelay(metricsUrl: string): Promise<string> {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  const ms = (name: string) => `${Math.round(value(name) * 1000)}`;
  return `p50 ${ms("nodejs_eventloop_lag_p50_seconds")} ms, p99 ${ms("nodejs_eventloop_lag_p99_seconds")} ms, max ${ms("nodejs_eventloop_lag_max_seconds")} ms`;
}

const LOGIN_BODY = new URLSearchParams({ username: "storm@example.com", password: PASSWORD }).toString();
const REQUESTS = {
  healthz: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
  login:
    "POST /auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
    `Content-Length: ${LOGIN_BODY.length}\r\n\r\n${LOGIN_BODY}`,
};

/** Opens a connection, sends a request, resolves with ms to the TCP handshake and to the answer. */
function send(
  port: number,
  sockets: Socket[],
  request: string,
  onConnect: (ms: number) => void = () => {},
): Promise<{ connectMs: number; answerMs: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    sockets.push(socket);
    let connectMs = Number.NaN;
    socket.once("connect", () => {
      connectMs = performance.now() - started;
      onConnect(connectMs);
      socket.write(request);
    });
    socket.once("data", () => resolve({ connectMs, answerMs: performance.now() - started }));
    socket.once("error", reject);
    socket.once("close", () => reject(new Error("closed without an answer")));
  });
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0
    ? Number.NaN
    : Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
};

const work = mkdtempSync(join(tmpdir(), "storm-"));
const metricsPort = await freePort();
const service = await startChild(
  SERVICE,
  {
    SIGNING_SECRET: "connection-storm-secret-of-32-bytes-or-more",
    DATABASE_URL: `sqlite:${join(work, "storm.db")}`,
    LOG_LEVEL: "info",
    RATE_LIMIT: "off",
    SHUTDOWN_DELAY_MS: "0",
    LISTEN_BACKLOG: backlog,
    METRICS_PORT: String(metricsPort),
  },
  work,
  "/healthz",
);
const port = Number(new URL(service.url).port);
const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
const sockets: Socket[] = [];
let stopping = false;
try {
  await fetch(`${service.url}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "storm@example.com", password: PASSWORD }),
  });
  // Busy: logins back to back on keep-alive connections (Argon2id on the thread pool, JSON and logs on the loop).
  let logins = 0;
  const busy = Array.from({ length: Number(loginLoops) }, async () => {
    while (!stopping) {
      const response = await fetch(`${service.url}/auth/token`, {
        method: "POST",
        body: new URLSearchParams({ username: "storm@example.com", password: PASSWORD }),
      }).catch(() => undefined);
      await response?.arrayBuffer();
      logins++;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await eventLoopDelay(metricsUrl); // resets the histogram: the next reading covers the storm only
  const before = listenCounters();
  const loginsBefore = logins;

  console.log(
    `storm of ${storm}; backlog ${backlog} (somaxconn ${kernel("core/somaxconn")}, tcp_max_syn_backlog ${kernel("ipv4/tcp_max_syn_backlog")}, ` +
      `syncookies ${kernel("ipv4/tcp_syncookies")}), ${CLIENTS} clients, ${loginLoops} login loops, ${seconds} s`,
  );
  const stormStarted = performance.now();
  const answers: number[] = [];
  const connects: number[] = [];
  let failures = 0;
  const stormRequest = storm === "login" ? REQUESTS.login : REQUESTS.healthz;
  for (let i = 0; i < CLIENTS; i++) {
    send(port, sockets, stormRequest, (ms) => connects.push(ms)).then(
      ({ answerMs }) => {
        answers.push(answerMs);
      },
      () => {
        failures++;
      },
    );
  }
  // A new client every 500 ms, each given until the end of the run to be answered.
  const probes: { at: number; result?: string }[] = [];
  const marks = new Map<number, [number, number]>();
  while (performance.now() - stormStarted < DURATION_MS && answers.length + failures < CLIENTS) {
    const probe: { at: number; result?: string } = { at: performance.now() - stormStarted };
    probes.push(probe);
    send(port, sockets, REQUESTS.healthz).then(
      ({ answerMs }) => {
        probe.result = `${Math.round(answerMs)}`;
      },
      (error: Error) => {
        probe.result = `failed (${error.message})`;
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const mark of [1, 2, 5, 10, 20]) {
      if (!marks.has(mark) && performance.now() - stormStarted >= mark * 1000)
        marks.set(mark, [connects.length, answers.length]);
    }
  }
  const elapsed = performance.now() - stormStarted;
  const after = listenCounters();
  console.log(
    `answered ${answers.length}/${CLIENTS} in ${Math.round(elapsed)} ms; failed ${failures}; ` +
      `connected/answered by 1, 2, 5, 10, 20 s: ${[1, 2, 5, 10, 20]
        .map((m) => (marks.get(m) ?? [connects.length, answers.length]).join("/"))
        .join(", ")}`,
  );
  console.log(
    `time to answer: p50 ${quantile(answers, 0.5)} ms, p90 ${quantile(answers, 0.9)} ms, max ${quantile(answers, 1)} ms; ` +
      `TCP handshake (${connects.length} done): p50 ${quantile(connects, 0.5)} ms, p90 ${quantile(connects, 0.9)} ms, max ${quantile(connects, 1)} ms`,
  );
  const probeText = probes.map(({ at, result }) => result ?? `unanswered after ${Math.round(elapsed - at)}`);
  console.log(`new-client probes every 500 ms (ms to answer): ${probeText.join(" ")}`);
  console.log(
    `ListenOverflows +${after.overflows - before.overflows}, ListenDrops +${after.drops - before.drops} (whole machine)`,
  );
  console.log(`event-loop delay during the storm: ${await eventLoopDelay(metricsUrl)}`);
  console.log(`logins during the storm: ${logins - loginsBefore}`);
  stopping = true;
  await Promise.race([Promise.all(busy), new Promise((resolve) => setTimeout(resolve, 3000))]);
} finally {
  stopping = true;
  for (const socket of sockets) socket.destroy();
  await service.stop();
  rmSync(work, { recursive: true, force: true });
}
