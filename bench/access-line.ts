// What one access line costs (issue 34), in CPU time per request of the server process: the
// server pinned to core 0, the load generator (autocannon, in this process) to core 1, so that
// the figure does not move with the load generator's share of a core. In one sitting, alternating
// the servers' order from round to round, medians of the rounds:
//   (a) bare Fastify, a constant GET /me, logging off;
//   (b) the same with Fastify's own request logging on, to pino's asynchronous destination
//       (`pino.destination({ sync: false, dest })`): what pino's asynchronous destination costs;
//   (c) the same bare Fastify with the service's access line (src/platform/access-log.ts,
//       src/log-destination.ts, src/platform/request-logger.ts), Fastify's request logging off;
//   (d) the real service's GET /me (as npm start runs it, SERVICE) at LOG_LEVEL=info and at warn.
// The access line's cost is (c) - (a), pino's (b) - (a), and the service's info - warn gap.
//
//   npm run bench:access-line [-- --rounds 5 --seconds 5 --connections 64]
//
// Run with `--server a|b|c` it is itself one of the bare servers (listening on PORT, logging to
// LOG_FILE), which is how the benchmark starts them.
import { execFileSync } from "node:child_process";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import Fastify, { LogController } from "fastify";
import pino from "pino";
import { BatchedLogDestination } from "../src/log-destination.ts";
import { accessLogHook } from "../src/platform/access-log.ts";
import { requestLoggerOnFirstUse } from "../src/platform/request-logger.ts";
import { type Child, cpuTimes, ROOT, SERVICE, sampleMemory, startChild } from "./processes.ts";

const USER = {
  id: "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f",
  email: "bench@example.com",
  full_name: null,
  is_active: true,
  is_admin: false,
  created_at: "2026-11-22T16:40:03.123Z",
  updated_at: "2026-11-22T16:40:03.123Z",
};

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback;

async function serve(kind: string): Promise<void> {
  const file = process.env.LOG_FILE ?? "/dev/null";
  let app: ReturnType<typeof Fastify>;
  if (kind === "a") app = Fastify({ logger: false });
  else if (kind === "b")
    app = Fastify({ loggerInstance: pino({ level: "info" }, pino.destination({ sync: false, dest: file })) });
  else if (kind === "c" || kind === "c-logger" || kind === "c-hook") {
    // c-logger and c-hook take (c) apart: the logger alone (as the service has it at warn too), and
    // the logger with an onResponse hook that does nothing.
    const destination = new BatchedLogDestination(openSync(file, "a"));
    app = Fastify({
      logger: { level: "info", stream: destination },
      logController: new LogController({ disableRequestLogging: true }),
      childLoggerFactory: requestLoggerOnFirstUse,
    }) as unknown as ReturnType<typeof Fastify>;
    const hook = accessLogHook(app);
    if (!hook) throw new Error("the access line is off");
    if (kind === "c") app.addHook("onResponse", hook);
    else if (kind === "c-hook")
      app.addHook("onResponse", (_request: unknown, _reply: unknown, done: () => void) => done());
  } else throw new Error(`--server: unknown server '${kind}' (a, b, c, c-logger, c-hook)`);
  app.get("/me", async () => USER);
  app.get("/healthz", async () => ({ status: "ok" }));
  await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
  process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
}

/** Requests a second for every load (all servers alike), or 0 for as many as each server answers. */
const rate = option("--rate", 0);
const log = (message: string) => process.stderr.write(`access-line: ${message}\n`);
const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/** Pins every thread of a process to one core (threads it starts later inherit it). */
function pin(pid: number, core: number): void {
  execFileSync("taskset", ["-a", "-p", "-c", String(core), String(pid)], { stdio: "ignore" });
}

interface Sample {
  rps: number;
  /** CPU time of the whole server process per request answered, in microseconds. */
  cpuUs: number;
  /** The server's peak resident memory during the load, in MB. */
  peakMb: number;
  errors: number;
}

async function measure(child: Child, seconds: number, connections: number, headers: Record<string, string>) {
  const pid = child.process.pid as number;
  const memory = sampleMemory(pid);
  const before = cpuTimes(pid);
  const result = await autocannon({
    url: `${child.url}/me`,
    connections,
    duration: seconds,
    headers,
    ...(rate > 0 ? { overallRate: rate } : {}),
  });
  const after = cpuTimes(pid);
  return {
    rps: result.requests.average,
    cpuUs: ((after.process - before.process) * 1000) / result.requests.total,
    peakMb: memory.stop(),
    errors: result.errors + result.non2xx,
  } satisfies Sample;
}

async function tokenFor(base: string): Promise<string> {
  const email = "bench@example.com";
  const password = "correct horse battery staple";
  const signUp = await fetch(`${base}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  if (signUp.status !== 201 && signUp.status !== 409) throw new Error(`sign-up failed: ${signUp.status}`);
  const response = await fetch(`${base}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: email, password }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

async function main(): Promise<void> {
  const rounds = option("--rounds", 5);
  const seconds = option("--seconds", 5);
  const connections = option("--connections", 64);
  const work = mkdtempSync(join(tmpdir(), "access-line-"));
  pin(process.pid, 1);
  const secret = "bench-signing-secret-0123456789abcdefghij";
  const serviceEnv = (level: string) => ({
    SIGNING_SECRET: secret,
    MFA_ENCRYPTION_KEY: `mfa-${secret}`,
    DATABASE_URL: `sqlite://${join(work, `service-${level}.db`)}`,
    LOG_LEVEL: level,
    RATE_LIMIT: "off",
    SHUTDOWN_DELAY_MS: "0",
  });
  const servers: { name: string; child: Child; headers: Record<string, string> }[] = [];
  try {
    const chosen = argv.includes("--only") ? (argv[argv.indexOf("--only") + 1] ?? "").split(",") : undefined;
    const wanted = (name: string) => chosen === undefined || chosen.includes(name);
    // The bare servers run with npm start's V8 options (the young generation's fixed size) too.
    for (const kind of ["a", "b", "c", "c-logger", "c-hook"]) {
      if (!wanted(kind) || (chosen === undefined && kind.startsWith("c-"))) continue;
      const child = await startChild(
        [...SERVICE.filter((arg) => arg.startsWith("-")), join(ROOT, "bench/access-line.ts"), "--server", kind],
        { LOG_FILE: join(work, `${kind}.log`) },
        work,
        "/healthz",
      );
      servers.push({ name: kind, child, headers: {} });
    }
    for (const level of ["info", "warn"]) {
      if (!wanted(`d-${level}`)) continue;
      const child = await startChild(SERVICE, serviceEnv(level), work, "/healthz");
      servers.push({ name: `d-${level}`, child, headers: { authorization: `Bearer ${await tokenFor(child.url)}` } });
    }
    for (const server of servers) pin(server.child.process.pid as number, 0);
    log(`warming up (${servers.length} servers)`);
    for (const server of servers) await measure(server.child, 2, connections, server.headers);
    const samples = new Map<string, Sample[]>(servers.map((server) => [server.name, []]));
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) {
        const sample = await measure(server.child, seconds, connections, server.headers);
        if (sample.errors > 0) throw new Error(`${server.name}: ${sample.errors} errors`);
        samples.get(server.name)?.push(sample);
        log(
          `round ${round + 1}/${rounds} ${server.name}: ${sample.cpuUs.toFixed(2)} us/request, ${sample.rps.toFixed(0)}/s, ${sample.peakMb.toFixed(0)} MB`,
        );
      }
    }
    const cpu = (name: string) => median((samples.get(name) ?? []).map((sample) => sample.cpuUs));
    const rps = (name: string) => median((samples.get(name) ?? []).map((sample) => sample.rps));
    const peak = (name: string) => Math.max(...(samples.get(name) ?? []).map((sample) => sample.peakMb));
    /** A difference as the median of the rounds' own differences (each round's loads ran seconds apart). */
    const gap = (side: string, reference: string) =>
      samples.has(side) && samples.has(reference)
        ? median((samples.get(side) ?? []).map((sample, i) => sample.cpuUs - (samples.get(reference)?.[i]?.cpuUs ?? 0)))
        : undefined;
    const labels: Record<string, string> = {
      a: "(a) bare Fastify, logging off",
      b: "(b) bare Fastify, request logging to pino's asynchronous destination",
      c: "(c) bare Fastify with the service's access line",
      "d-info": "(d) the service's GET /me, LOG_LEVEL=info",
      "d-warn": "(d) the service's GET /me, LOG_LEVEL=warn",
      "c-logger": "(c) without the access line: the logger alone",
      "c-hook": "(c) with an empty onResponse hook instead of the access line",
    };
    const result = {
      rounds,
      seconds,
      connections,
      servers: Object.fromEntries(
        servers.map((server) => [
          server.name,
          {
            cpuUs: cpu(server.name),
            rps: rps(server.name),
            peakMb: peak(server.name),
            samples: samples.get(server.name),
          },
        ]),
      ),
      rate,
      pinoCostUs: gap("b", "a"),
      accessLineCostUs: gap("c", "a"),
      serviceInfoWarnGapUs: gap("d-info", "d-warn"),
    };
    process.stdout.write(
      `\n| server | CPU per request (median) | req/s (server on one core) | peak RSS (highest) |\n|---|---|---|---|\n`,
    );
    for (const server of servers)
      process.stdout.write(
        `| ${labels[server.name]} | ${cpu(server.name).toFixed(2)} us | ${rps(server.name).toFixed(0)} | ${peak(server.name).toFixed(0)} MB |\n`,
      );
    process.stdout.write(
      `\npino's asynchronous destination, (b) - (a): ${result.pinoCostUs?.toFixed(2)} us\n` +
        `the service's access line, (c) - (a): ${result.accessLineCostUs?.toFixed(2)} us\n` +
        `the service at info - at warn: ${result.serviceInfoWarnGapUs?.toFixed(2)} us\n\n${JSON.stringify(result)}\n`,
    );
  } finally {
    await Promise.all(servers.map((server) => server.child.stop()));
    rmSync(work, { recursive: true, force: true });
  }
}

const serverIndex = argv.indexOf("--server");
if (serverIndex >= 0) await serve(argv[serverIndex + 1] ?? "");
else await main();
