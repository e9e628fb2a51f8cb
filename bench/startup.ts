// Start to first answer of the service against bare Fastify, and their
// memory: `npm run bench:startup [-- --starts N] [-- --me-load]`. Alternates
// the service (as npm start runs it, bundle built and compile cache warm), bare
// Fastify as written (bench/baseline.ts) and the same bare server bundled with
// the compile cache, N times each, every server pinned to core 0 (`taskset`)
// when taskset exists, and prints the medians and the ratios that bench group 6
// reports. Small enough to run beside other work: no load generator unless
// --me-load, which then adds each server's idle RSS and its peak RSS under a
// short GET /me load (autocannon pinned to core 1). A busy machine moves the
// absolute figures; compare only the ratios of one sitting.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { bundleBaseline, cpuTimes, freePort, nodeArguments, ROOT, SERVICE, sampleMemory, stopOf } from "./processes.ts";

const { values } = parseArgs({
  options: {
    starts: { type: "string", default: "11" },
    "me-load": { type: "boolean", default: false },
    // Another checkout of the project (built), measured in the same rounds: before and after a change.
    compare: { type: "string" },
  },
});
const starts = Number(values.starts);
const work = mkdtempSync(join(tmpdir(), "bench-startup-"));
const SECRET = "bench-startup-signing-secret-0123456789abcdef";
const hasTaskset = spawnSync("taskset", ["--version"]).status === 0;
const pinned = (core: number, command: string, args: readonly string[]): [string, string[]] =>
  hasTaskset ? ["taskset", ["-c", String(core), command, ...args]] : [command, [...args]];

const serviceEnv = {
  SIGNING_SECRET: SECRET,
  MFA_ENCRYPTION_KEY: `mfa-${SECRET}`,
  DATABASE_URL: `sqlite:${join(work, "startup.db")}`,
  LOG_LEVEL: "info",
  RATE_LIMIT: "off",
  SHUTDOWN_DELAY_MS: "0",
};

interface Server {
  name: string;
  args: readonly string[];
  path: string;
  env: Record<string, string>;
}

interface Started {
  ms: number;
  /** CPU time (ms, all threads) the process had used when it first answered: steadier than `ms` on a busy machine. */
  cpuMs: number;
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/** Spawns a server pinned to core 0 and polls `path` every 2 ms; milliseconds from spawn to its first 200. */
async function start(server: Server): Promise<Started> {
  const port = await freePort();
  const [command, args] = pinned(0, process.execPath, server.args);
  const begun = performance.now();
  const child = spawn(command, args, {
    cwd: work,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? work, ...server.env, PORT: String(port) },
    stdio: ["ignore", "ignore", process.env.STARTUP_DEBUG ? "inherit" : "ignore"],
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      if ((await fetch(`${url}${server.path}`)).ok) break;
    } catch {}
    if (child.exitCode !== null) throw new Error(`${server.name} exited with ${child.exitCode}`);
    if (performance.now() - begun > 60_000) throw new Error(`${server.name} did not answer within 60 s`);
    await new Promise((wait) => setTimeout(wait, 2));
  }
  const ms = performance.now() - begun;
  return {
    ms,
    cpuMs: cpuTimes(child.pid as number).process,
    pid: child.pid as number,
    url,
    stop: stopOf(child),
  };
}

/** A token for GET /me: one user signed up and logged in on a running service. */
async function tokenFor(url: string): Promise<string> {
  const credentials = { email: "startup@example.com", password: "startup bench password 1" };
  await fetch(`${url}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(credentials),
  });
  const answer = await fetch(`${url}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: credentials.email, password: credentials.password }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
}

function rssMb(pid: number): number {
  const sampler = sampleMemory(pid);
  return sampler.stop();
}

/** Idle RSS after start, then peak RSS under 5 s of GET /me from autocannon on core 1. */
async function memoryUnderMe(server: Server, withToken: boolean): Promise<{ idle: number; peak: number }> {
  const started = await start(server);
  try {
    const headers = withToken ? { authorization: `Bearer ${await tokenFor(started.url)}` } : {};
    await new Promise((wait) => setTimeout(wait, 500));
    const idle = rssMb(started.pid);
    if (hasTaskset) spawnSync("taskset", ["-pc", "1", String(process.pid)], { stdio: "ignore" });
    const sampler = sampleMemory(started.pid);
    await autocannon({ url: `${started.url}/me`, connections: 64, duration: 5, headers });
    return { idle, peak: sampler.stop() };
  } finally {
    await started.stop();
  }
}

const median = (list: number[]): number => {
  const sorted = [...list].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

const service: Server = { name: "service", args: SERVICE, path: "/healthz", env: serviceEnv };
const bare: Server = { name: "bare Fastify", args: nodeArguments("bench/baseline.ts"), path: "/me", env: {} };
const bundled: Server = { name: "bare Fastify bundled", args: [await bundleBaseline(work)], path: "/me", env: {} };
const other: Server | undefined = values.compare
  ? {
      name: `service at ${values.compare}`,
      args: SERVICE.map((arg) => arg.replace(ROOT, values.compare as string)),
      path: "/healthz",
      env: { ...serviceEnv, DATABASE_URL: `sqlite:${join(work, "compare.db")}` },
    }
  : undefined;
const servers = [service, bare, bundled, ...(other ? [other] : [])];

try {
  // One start of each first: builds the bundle if stale, creates the database, fills the compile caches.
  for (const server of servers) await (await start(server)).stop();
  const times: Record<string, number[]> = Object.fromEntries(servers.map((server) => [server.name, []]));
  const cpu: Record<string, number[]> = Object.fromEntries(servers.map((server) => [server.name, []]));
  for (let round = 0; round < starts; round++) {
    // Rotating the order, so that no server always follows the same one.
    const order = [...servers];
    for (let shift = 0; shift < round % servers.length; shift++) order.push(order.shift() as Server);
    for (const server of order) {
      const started = await start(server);
      (times[server.name] as number[]).push(started.ms);
      (cpu[server.name] as number[]).push(started.cpuMs);
      await started.stop();
    }
  }
  const serviceMs = median(times[service.name] as number[]);
  const bareMs = median(times[bare.name] as number[]);
  const bundledMs = median(times[bundled.name] as number[]);
  const otherLine = other
    ? [
        `  ${other.name}  ${median(times[other.name] as number[]).toFixed(1)} ms   ${(median(times[other.name] as number[]) / bareMs).toFixed(2)}x bare`,
      ]
    : [];
  const lines = [
    `start to first answer (wall), medians of ${starts}${hasTaskset ? ", servers on core 0" : ""}:`,
    `  service               ${serviceMs.toFixed(1)} ms`,
    `  bare Fastify          ${bareMs.toFixed(1)} ms   service ${(serviceMs / bareMs).toFixed(2)}x (target <= 1.5x)`,
    `  bare Fastify bundled  ${bundledMs.toFixed(1)} ms   service ${(serviceMs / bundledMs).toFixed(2)}x`,
    ...otherLine,
  ];
  const cpuOf = (server: Server) => median(cpu[server.name] as number[]);
  lines.push(
    "CPU time (all threads) at the first answer, medians:",
    ...servers.map(
      (server) =>
        `  ${server.name.padEnd(20)}  ${cpuOf(server).toFixed(0)} ms   ${(cpuOf(server) / cpuOf(bare)).toFixed(2)}x bare, ${(cpuOf(server) / cpuOf(bundled)).toFixed(2)}x bundled`,
    ),
  );
  if (values["me-load"]) {
    const serviceMemory = await memoryUnderMe(service, true);
    const bareMemory = await memoryUnderMe(bare, false);
    lines.push(
      "RSS (MB), idle after start / peak under 5 s of GET /me:",
      `  service       ${serviceMemory.idle.toFixed(1)} / ${serviceMemory.peak.toFixed(1)}`,
      ...(other
        ? [
            await memoryUnderMe(other, true).then(
              (memory) => `  ${other.name}  ${memory.idle.toFixed(1)} / ${memory.peak.toFixed(1)}`,
            ),
          ]
        : []),
      `  bare Fastify  ${bareMemory.idle.toFixed(1)} / ${bareMemory.peak.toFixed(1)}   service +${(serviceMemory.peak - bareMemory.peak).toFixed(1)} MB (target <= +30)`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
