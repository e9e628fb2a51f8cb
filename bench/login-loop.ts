// npm run bench:login-loop [-- --rounds 5 --seconds 6 --connections 4 --light --bundle before=dist.x.old/server.mjs]
//
// What a correct-password login costs the service's event loop (issue 34): the main thread's CPU
// time (/proc/<pid>/task/<pid>/stat, the thread whose tid is the pid) per answered login, beside
// the whole process's. Each server is started as npm start starts it (its V8 options) on a SQLite
// file of its own and pinned to core 0; the load generator (autocannon, in this process) is pinned
// to core 1, a few connections of the same user's correct-password logins. Every `--bundle
// name=path` (a built dist/server.mjs, e.g. a copy of an earlier build) is a server of its own; the
// default is this checkout's dist/server.mjs. Rounds alternate the servers' order; medians.
// `--light`: Argon2id at the settings' least (7 MiB, t=1) instead of OWASP's 19 MiB and t=2, so that
// a round holds several times the logins (the figure is per login, the hash is not in it) and the
// hashing thread on the same core sweeps less of its caches.
//
// `--statements` measures in-process instead, piece by piece: the app built from src/ on a SQLite
// file (the settings from the environment as npm start reads them, Argon2id at its least), one
// user's correct-password logins one after another through inject(), and the main thread's CPU
// time (process.threadCpuUsage) per login in all, and in each SQLite statement it runs (the user
// lookup, the second-factor check, BEGIN, the session, the audit events, the cap, the known device,
// COMMIT with its checkpoints). `--logins N` per round (default 1000).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import autocannon from "autocannon";
import { type Child, cpuTimes, ROOT, SERVICE, startChild } from "./processes.ts";

const argv = process.argv.slice(2);
const option = (name: string, fallback: number) =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback;
const bundles = argv.flatMap((arg, i) => (argv[i - 1] === "--bundle" ? [arg] : []));
const EMAIL = "bench@example.com";
const PASSWORD = "correct horse battery staple";
const SECRET = "bench-signing-secret-0123456789abcdefghij";

const log = (line: string) => process.stderr.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
/** Pins every thread of a process to one core (threads it starts later inherit it). */
const pin = (pid: number, core: number) =>
  execFileSync("taskset", ["-a", "-p", "-c", String(core), String(pid)], { stdio: "ignore" });

interface Sample {
  /** Main-thread CPU per login, ms. */
  eventLoop: number;
  /** Of which in the kernel (system time), ms. */
  eventLoopSystem: number;
  /** Whole-process CPU per login, ms. */
  process: number;
  served: number;
}

/** The main thread's system time so far, ms (stime, field 15 of /proc/<pid>/task/<pid>/stat; 10 ms ticks). */
function mainThreadSystemMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[12]) * 10;
}

async function measure(child: Child, seconds: number, connections: number): Promise<Sample> {
  const pid = child.process.pid as number;
  const before = cpuTimes(pid);
  const systemBefore = mainThreadSystemMs(pid);
  const result = await autocannon({
    url: `${child.url}/auth/token`,
    method: "POST",
    connections,
    duration: seconds,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username: EMAIL, password: PASSWORD }).toString(),
  });
  const after = cpuTimes(pid);
  const systemAfter = mainThreadSystemMs(pid);
  if (result.errors + result.non2xx > 0) throw new Error(`${result.errors + result.non2xx} failed logins`);
  const served = result.requests.total;
  return {
    eventLoop: (after.mainThread - before.mainThread) / served,
    eventLoopSystem: (systemAfter - systemBefore) / served,
    process: (after.process - before.process) / served,
    served,
  };
}

/** The SQLite statements one login runs, with the main thread's CPU in each (in-process, serial logins). */
async function statements(): Promise<void> {
  const { StatementSync } = await import("node:sqlite");
  const { loadConfig } = await import("../src/config.ts");
  const { buildApp } = await import("../src/app.ts");
  const { createPasswordHasher } = await import("../src/auth/passwords.ts");
  const { openSqliteStore } = await import("../src/store/sqlite.ts");
  const cpu = () => {
    const { user, system } = process.threadCpuUsage();
    return user + system;
  };
  const spent = new Map<string, { calls: number; us: number }>();
  let counting = false;
  for (const method of ["get", "all", "run"] as const) {
    const original = StatementSync.prototype[method] as (...args: unknown[]) => unknown;
    Object.defineProperty(StatementSync.prototype, method, {
      value(this: import("node:sqlite").StatementSync, ...args: unknown[]) {
        if (!counting) return original.apply(this, args);
        const started = cpu();
        try {
          return original.apply(this, args);
        } finally {
          const text = this.sourceSQL.replace(/\s+/g, " ").slice(0, 90);
          const entry = spent.get(text) ?? { calls: 0, us: 0 };
          entry.calls += 1;
          entry.us += cpu() - started;
          spent.set(text, entry);
        }
      },
    });
  }
  const work = mkdtempSync(join(tmpdir(), "login-loop-"));
  const { config } = loadConfig(
    {
      SIGNING_SECRET: SECRET,
      MFA_ENCRYPTION_KEY: `mfa-${SECRET}`,
      DATABASE_URL: `sqlite://${join(work, "login.db")}`,
      LOG_LEVEL: "silent",
      RATE_LIMIT: "off",
      ARGON2_MEMORY_KIB: "7168",
      ARGON2_TIME_COST: "1",
    },
    work,
  );
  const store = openSqliteStore(join(work, "login.db"));
  const app = await buildApp({ config, store });
  try {
    await store.create({ email: EMAIL, hashedPassword: await createPasswordHasher(config.argon2).hash(PASSWORD) });
    const login = async () => {
      const response = await app.inject({
        method: "POST",
        url: "/auth/token",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "user-agent": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
        },
        payload: new URLSearchParams({ username: EMAIL, password: PASSWORD }).toString(),
      });
      if (response.statusCode !== 200) throw new Error(`login answered ${response.statusCode}`);
    };
    for (let i = 0; i < 200; i++) await login();
    const logins = option("--logins", 1000);
    counting = true;
    const started = cpu();
    for (let i = 0; i < logins; i++) await login();
    const total = (cpu() - started) / logins;
    counting = false;
    process.stdout.write(
      `main thread, per login: ${total.toFixed(1)} us (inject() and the serial logins' cold caches included)\n`,
    );
    process.stdout.write("calls/login\tus/login\tstatement\n");
    let inStatements = 0;
    for (const [text, { calls, us }] of [...spent].sort((a, b) => b[1].us - a[1].us)) {
      inStatements += us / logins;
      process.stdout.write(`${(calls / logins).toFixed(2)}\t${(us / logins).toFixed(1)}\t${text}\n`);
    }
    process.stdout.write(`\t${inStatements.toFixed(1)}\tall statements\n`);
  } finally {
    await app.close();
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rounds = option("--rounds", 5);
  const seconds = option("--seconds", 6);
  const connections = option("--connections", 4);
  const work = mkdtempSync(join(tmpdir(), "login-loop-"));
  pin(process.pid, 1);
  const plan = bundles.length > 0 ? bundles : ["this=dist/server.mjs"];
  const servers: { name: string; child: Child }[] = [];
  try {
    for (const entry of plan) {
      const [name, path] = entry.includes("=") ? (entry.split("=", 2) as [string, string]) : [entry, entry];
      const args = [...SERVICE.filter((arg) => arg.startsWith("-")), resolve(ROOT, path)];
      const child = await startChild(
        args,
        {
          SIGNING_SECRET: SECRET,
          MFA_ENCRYPTION_KEY: `mfa-${SECRET}`,
          DATABASE_URL: `sqlite://${join(work, `${name}.db`)}`,
          LOG_LEVEL: "info",
          RATE_LIMIT: "off",
          SHUTDOWN_DELAY_MS: "0",
          ...(argv.includes("--light") ? { ARGON2_MEMORY_KIB: "7168", ARGON2_TIME_COST: "1" } : {}),
        },
        work,
        "/healthz",
      );
      servers.push({ name, child });
      const signUp = await fetch(`${child.url}/users`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
      });
      if (signUp.status !== 201) throw new Error(`${name}: sign-up answered ${signUp.status}`);
      pin(child.process.pid as number, 0);
    }
    log(`warming up ${servers.length} server(s)`);
    for (const server of servers) await measure(server.child, 3, connections);
    const samples = new Map<string, Sample[]>(servers.map((server) => [server.name, []]));
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) {
        const sample = await measure(server.child, seconds, connections);
        samples.get(server.name)?.push(sample);
        log(
          `round ${round + 1}/${rounds} ${server.name}: event loop ${sample.eventLoop.toFixed(3)} ms (kernel ${sample.eventLoopSystem.toFixed(3)}), process ${sample.process.toFixed(3)} ms per login (${sample.served} logins)`,
        );
      }
    }
    process.stdout.write(
      "server\tevent loop ms/login (median)\tof it kernel\tprocess ms/login (median)\tlogins/round\n",
    );
    for (const [name, list] of samples) {
      process.stdout.write(
        `${name}\t${median(list.map((s) => s.eventLoop)).toFixed(3)}\t${median(list.map((s) => s.eventLoopSystem)).toFixed(3)}\t${median(list.map((s) => s.process)).toFixed(3)}\t${median(list.map((s) => s.served))}\n`,
      );
    }
  } finally {
    for (const server of servers) await server.child.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await (argv.includes("--statements") ? statements() : main());
