// Child processes for the benchmark: the real service (exactly as npm start runs it) and
// the bare baseline, each started with the project's Node and stopped with
// SIGTERM; plus a sampler of a process's resident memory; and the run's pinning:
// every server on one core, the load generator (the runner itself) on the other.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { startArguments } from "../scripts/start-command.ts";

const ROOT = resolve(import.meta.dirname, "..");

export interface Child {
  process: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** The core every server runs on, and the load generator's, when the run is pinned. */
export const SERVER_CORE = 0;
export const LOAD_GENERATOR_CORE = 1;

/**
 * Why the run cannot be pinned (taskset missing, or one core), or undefined when it can. Read before
 * the runner pins itself: pinned, this process would see one core.
 */
export const UNPINNED_BECAUSE: string | undefined = (() => {
  if (availableParallelism() < 2) return "this machine has one core";
  try {
    execFileSync("taskset", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "taskset (util-linux) is missing";
  }
})();

/**
 * Pins every thread of this process (autocannon runs in it) to the load generator's core. Threads
 * started later inherit it; children are started under `taskset -c SERVER_CORE`, which overrides it.
 * Without pinning, says so in one line and goes on.
 */
export function pinLoadGenerator(log: (message: string) => void): void {
  if (UNPINNED_BECAUSE !== undefined) {
    log(`the run is not pinned (${UNPINNED_BECAUSE}): servers and the load generator share the cores`);
    return;
  }
  execFileSync("taskset", ["-a", "-p", "-c", String(LOAD_GENERATOR_CORE), String(process.pid)], { stdio: "ignore" });
  log(`servers pinned to core ${SERVER_CORE}, the load generator to core ${LOAD_GENERATOR_CORE}`);
}

/**
 * A command line run on the servers' core: taskset execs the command, so the child's pid is the
 * server's own (its /proc CPU times and memory are the server's). Unchanged when the run is not pinned.
 */
export function onServerCore(command: string, args: readonly string[]): { command: string; args: string[] } {
  return UNPINNED_BECAUSE === undefined
    ? { command: "taskset", args: ["-c", String(SERVER_CORE), command, ...args] }
    : { command, args: [...args] };
}

/** Cores a server sees (os.availableParallelism()): one when pinned. */
export const SERVER_CORES = UNPINNED_BECAUSE === undefined ? 1 : availableParallelism();

/** A port that was free a moment ago (the kernel picks it; the child binds it next). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolveClose) => server.close(resolveClose));
  return port;
}

/** Node's arguments for a script: a file under the project, or arguments given as they are (SERVICE). */
export function nodeArguments(script: string | readonly string[]): string[] {
  return typeof script === "string" ? [resolve(ROOT, script)] : [...script];
}

/** The service exactly as npm start runs it: its V8 options and entry file (scripts/start-command.ts). */
export const SERVICE: readonly string[] = startArguments();

/**
 * Starts a script (a file under the project, or Node arguments such as SERVICE) on a free port and resolves once GET `readyPath` answers. Its output goes to a
 * file, as a production deployment's logs would, not to a pipe this busy process must drain.
 */
/**
 * BENCH_CPU_PROF_DIR=DIR: every server a bench starts writes a V8 CPU profile (.cpuprofile, for Chrome's
 * DevTools or speedscope) into DIR when it stops; for finding where a figure's time goes, not for figures.
 */
function profiling(): Record<string, string> {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } : {};
}

export async function startChild(
  script: string | readonly string[],
  env: Record<string, string>,
  cwd: string,
  readyPath: string,
): Promise<Child> {
  const port = await freePort();
  const args = nodeArguments(script);
  const name = typeof script === "string" ? script : "service";
  const logFile = openSync(join(cwd, `${name.replaceAll("/", "_")}-${port}.log`), "a");
  const pinned = onServerCore(process.execPath, args);
  const child = spawn(pinned.command, pinned.args, {
    cwd,
    env: { PATH: process.env.PATH ?? "", ...env, ...profiling(), PORT: String(port) },
    stdio: ["ignore", logFile, logFile],
  });
  closeSync(logFile);
  const url = `http://127.0.0.1:${port}`;
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}${readyPath}`)).status < 500) break;
    } catch {}
    if (performance.now() - started > 15_000) throw new Error(`${name} did not start`);
    await new Promise((wait) => setTimeout(wait, 10));
  }
  return {
    process: child,
    url,
    stop: stopOf(child),
  };
}

/** Stops a child with SIGTERM and resolves once it has exited (at once if it already has). */
export function stopOf(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    });
}

/**
 * bench/baseline.ts bundled into one ES module in `work`, started with the compile cache on as
 * src/start.mjs does: the bare server built and started the way the service is. Returns its entry.
 */
export async function bundleBaseline(work: string): Promise<string> {
  const { build } = await import("esbuild");
  await build({
    entryPoints: [join(ROOT, "bench/baseline.ts")],
    outfile: join(work, "baseline-bundle.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    logLevel: "warning",
    banner: { js: 'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);' },
  });
  const entry = join(work, "baseline-start.mjs");
  writeFileSync(
    entry,
    'import { enableCompileCache } from "node:module";\nenableCompileCache();\nawait import("./baseline-bundle.mjs");\n',
  );
  return entry;
}

/**
 * CPU time (user + system, ms) a process has used so far: all its threads, and its main thread
 * alone (the event loop). Linux's clock tick is 10 ms, fine over loads of seconds.
 */
export function cpuTimes(pid: number): { process: number; mainThread: number } {
  const ticks = (path: string) => {
    const stat = readFileSync(path, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  return { process: ticks(`/proc/${pid}/stat`), mainThread: ticks(`/proc/${pid}/task/${pid}/stat`) };
}

/** Samples VmRSS every 100 ms until stopped; resolves with the peak in MB. */
export function sampleMemory(pid: number): { stop(): number } {
  let peakKb = 0;
  const read = () => {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (match) peakKb = Math.max(peakKb, Number(match[1]));
    } catch {}
  };
  read();
  const timer = setInterval(read, 100);
  return {
    stop() {
      clearInterval(timer);
      read();
      return peakKb / 1024;
    },
  };
}

export { ROOT };
