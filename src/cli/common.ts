// What every command of the operator's command line shares: its two kinds
// of failure, the configured store opened for one command, the password
// prompt (hidden, or the first line of standard input) and JSON output.
import { type Config, loadConfig } from "../config.ts";
import { readEnvironment } from "../env.ts";
import { openStore } from "../store/open.ts";
import type { UserStore } from "../store/store.ts";

/** A failure the operator can fix: printed as one line, exit code 1. */
export class CliError extends Error {}
/** The command line itself is wrong: the message and the usage, exit code 2. */
export class UsageError extends Error {}

/** Opens the configured store for one command and always closes it. */
export async function withStore<T>(work: (store: UserStore, config: Config) => Promise<T>): Promise<T> {
  const { config } = loadConfig(readEnvironment());
  const store = await openStore(config.database);
  try {
    return await work(store, config);
  } finally {
    await store.close();
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const line = Buffer.concat(chunks).toString("utf8").split(/\r?\n/)[0] ?? "";
    if (line === "") throw new CliError("no password on standard input");
    return line;
  }
  const first = await promptHidden("Password: ");
  const second = await promptHidden("Repeat password: ");
  if (first !== second) throw new CliError("the passwords do not match");
  return first;
}

/** Reads one line from the terminal without echoing it. */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  let typed = "";
  return new Promise((resolve, reject) => {
    const onData = (data: Buffer) => {
      for (const char of data.toString("utf8")) {
        if (char === "\r" || char === "\n") {
          finish();
          resolve(typed);
          return;
        }
        if (char === "\u0003") {
          finish();
          reject(new CliError("cancelled"));
          return;
        }
        if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    stdin.on("data", onData);
  });
}
