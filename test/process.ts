// Runs the real service or CLI as a child process in a scratch directory,
// the way an operator would, for the tests where the process itself matters.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startArguments } from "../scripts/start-command.ts";

/** Node's arguments for the service exactly as npm start gives them (V8 options, then src/start.mjs). */
export const SERVER = startArguments();
export const CLI = resolve(import.meta.dirname, "../src/cli.ts");

/** Environment for a child: the parent's PATH only, nothing of the service's own settings. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", ...extra };
}

export function scratchDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), "service-test-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface RunningService {
  child: ChildProcessWithoutNullStreams;
  baseUrl: string;
  output: () => string;
  stop: () => Promise<number | null>;
}

/**
 * Starts the service (src/start.mjs and the bundle, as npm start does) and waits for its "listening" log line (PORT=0
 * picks a free port). SIGTERM drains without the production delay unless the test sets SHUTDOWN_DELAY_MS.
 */
export async function startService(
  cwd: string,
  env: Record<string, string> = {},
  command: string[] = SERVER,
): Promise<RunningService> {
  const child = spawn(process.execPath, command, {
    cwd,
    env: cleanEnv({ PORT: "0", SHUTDOWN_DELAY_MS: "0", ...env }),
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const baseUrl = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`service did not start:\n${output}`));
    }, 10_000);
    const check = () => {
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1] as string);
      }
    };
    child.stdout.on("data", check);
    child.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`service exited early:\n${output}`));
    });
  });
  const stop = async () => {
    if (child.exitCode !== null) return child.exitCode;
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    return code as number | null;
  };
  return { child, baseUrl, output: () => output, stop };
}

/** Runs a command (this Node.js unless another is named) to completion with the given standard input. */
export async function run(
  args: string[],
  {
    cwd,
    env = {},
    input = "",
    command = process.execPath,
  }: { cwd: string; env?: Record<string, string>; input?: string; command?: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd, env: cleanEnv(env) });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdin.end(input);
  const [code] = await once(child, "exit");
  return { code: code as number | null, stdout, stderr };
}

/**
 * A port that is free right now, for a service that must keep its address across restarts (its
 * default token issuer is its listen address).
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}
