// The operator's command line: `npm run cli -- <command>`. Passwords are
// read from a hidden prompt or from standard input, never from arguments
// (they would land in shell history and the process table).
import { Compile } from "typebox/compile";
import { createPasswordHasher } from "./auth/passwords.ts";
import { DEFAULT_DATABASE_URL, loadConfig } from "./config.ts";
import { readEnvironment } from "./env.ts";
import { ConfigError, EmailTaken } from "./errors.ts";
import { UserCreate } from "./schemas.ts";
import { openStore } from "./store/store.ts";
import { normalizeEmail } from "./users/email.ts";

const USAGE = `Usage: npm run cli -- <command>

Commands:
  users create <email> [--admin]
                         Create a user (an admin with --admin). The password is read from a
                         hidden prompt, or from the first line of standard input when piped:
                           printf '%s\\n' "$PASSWORD" | npm run cli -- users create ada@example.com
  help                   Show this text.

The settings (DATABASE_URL, default ${DEFAULT_DATABASE_URL}; the ARGON2_* parameters) are read
from the environment or a .env file, and checked, exactly as the service does.`;

/** A failure the operator can fix: printed as one line, exit code 1. */
class CliError extends Error {}
/** The command line itself is wrong: the message and the usage, exit code 2. */
class UsageError extends Error {}

const checkNewUser = Compile(UserCreate);

async function createUser(args: string[]): Promise<void> {
  const isAdmin = args.includes("--admin");
  const unknownOption = args.find((arg) => arg.startsWith("--") && arg !== "--admin");
  if (unknownOption) throw new UsageError(`unknown option ${unknownOption}`);
  const [rawEmail, ...rest] = args.filter((arg) => arg !== "--admin");
  if (rawEmail === undefined || rest.length > 0) throw new UsageError("users create takes exactly one e-mail");
  const password = await readPassword();
  const candidate = { email: normalizeEmail(rawEmail), password };
  const problem = checkNewUser.Errors(candidate)[0];
  if (problem) throw new CliError(`${problem.instancePath.slice(1) || "input"} ${problem.message}`);

  const { config } = loadConfig(readEnvironment());
  const store = openStore(config.database);
  try {
    const hashedPassword = await createPasswordHasher(config.argon2).hash(password);
    const user = await store.create({ email: candidate.email, hashedPassword, isAdmin });
    process.stdout.write(`created ${isAdmin ? "admin" : "user"} ${user.email} (id ${user.id})\n`);
  } catch (error) {
    if (error instanceof EmailTaken) throw new CliError(`a user with the e-mail ${candidate.email} already exists`);
    throw error;
  } finally {
    await store.close();
  }
}

async function readPassword(): Promise<string> {
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

async function main(argv: string[]): Promise<number> {
  const [group, command, ...args] = argv;
  try {
    if (group === undefined || group === "help" || group === "--help" || group === "-h") {
      process.stdout.write(`${USAGE}\n`);
      return group === undefined ? 2 : 0;
    }
    if (group === "users" && command === "create") {
      await createUser(args);
      return 0;
    }
    throw new UsageError(`unknown command: ${[group, command].filter(Boolean).join(" ")}`);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof CliError || error instanceof ConfigError) {
      process.stderr.write(`error: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

process.exitCode = await main(process.argv.slice(2));
