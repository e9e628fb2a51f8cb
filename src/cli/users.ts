// The users commands: create (an admin with --admin), import (hashes from
// another system), list, set-password and deactivate. Passwords follow the
// service's rules; an operator's change queues the user's security notice
// as the service's own changes do.
import { readFile } from "node:fs/promises";
import { Compile } from "typebox/compile";
import { createPasswordPolicy } from "../auth/password-policy.ts";
import { createPasswordHasher, isSupportedHash } from "../auth/passwords.ts";
import { type Config, loadConfig } from "../config.ts";
import { readEnvironment } from "../env.ts";
import { EmailTaken, LastActiveAdmin } from "../errors.ts";
import { createAccountMails } from "../mail/messages.ts";
import { createNotices, type Notices } from "../mail/notices.ts";
import { createSealer } from "../mail/seal.ts";
import { openStore } from "../store/open.ts";
import type { UserStore } from "../store/store.ts";
import { normalizeEmail } from "../users/email.ts";
import { UserCreate } from "../users/schemas.ts";
import { CliError, readPassword, UsageError, withStore } from "./common.ts";

const checkNewUser = Compile(UserCreate);
const checkEmail = Compile(UserCreate.properties.email);
const checkPassword = Compile(UserCreate.properties.password);

export async function createUser(args: string[]): Promise<void> {
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
  checkPolicy(config, password, candidate.email);
  const store = await openStore(config.database);
  try {
    const hashedPassword = await createPasswordHasher(config.argon2).hash(password);
    const user = await store.create({
      email: candidate.email,
      hashedPassword,
      isAdmin,
      emailVerifiedAt: new Date().toISOString(),
    });
    process.stdout.write(`created ${isAdmin ? "admin" : "user"} ${user.email} (id ${user.id})\n`);
  } catch (error) {
    if (error instanceof EmailTaken) throw new CliError(`a user with the e-mail ${candidate.email} already exists`);
    throw error;
  } finally {
    await store.close();
  }
}

export async function importUsers(args: string[]): Promise<boolean> {
  const [file, ...rest] = args;
  if (file === undefined || rest.length > 0) throw new UsageError("users import takes exactly one file");
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}`);
  }
  const lines = text.split(/\r?\n/);
  const { config } = loadConfig(readEnvironment());
  const store = await openStore(config.database);
  let imported = 0;
  let skipped = 0;
  let invalid = 0;
  try {
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue;
      const problem = await importLine(store, line);
      if (problem === "imported") imported += 1;
      else if (problem === "exists") skipped += 1;
      else {
        invalid += 1;
        process.stderr.write(`line ${index + 1}: ${problem}\n`);
      }
      if ((imported + skipped + invalid) % 1000 === 0) {
        process.stderr.write(`... ${imported + skipped + invalid} lines read\n`);
      }
    }
  } finally {
    await store.close();
  }
  process.stdout.write(`imported ${imported}, skipped ${skipped} existing, ${invalid} invalid\n`);
  return invalid === 0;
}

/** Imports one line; answers "imported", "exists", or what is wrong with it (never echoing the hash). */
async function importLine(store: UserStore, line: string): Promise<string> {
  let record: { email?: unknown; hash?: unknown; full_name?: unknown };
  try {
    record = JSON.parse(line);
  } catch {
    return "not a JSON object";
  }
  if (typeof record !== "object" || record === null) return "not a JSON object";
  const { email, hash, full_name } = record;
  if (typeof email !== "string" || !checkEmail.Check(normalizeEmail(email))) return "email is missing or invalid";
  if (typeof hash !== "string" || !isSupportedHash(hash)) return "hash is missing or not a bcrypt or Argon2 hash";
  if (full_name !== undefined && full_name !== null && typeof full_name !== "string")
    return "full_name must be a string";
  try {
    await store.create({ email, hashedPassword: hash, fullName: full_name ?? null });
    return "imported";
  } catch (error) {
    if (error instanceof EmailTaken) return "exists";
    throw error;
  }
}

/** The service's password rules (NIST SP 800-63B): the list check and the e-mail check. */
function checkPolicy(config: Config, password: string, email: string): void {
  const problem = createPasswordPolicy({ listCheck: config.passwordListCheck }).problem(password, email);
  if (problem) throw new CliError(problem);
}

/**
 * The security notifications of an operator's change: queued in its transaction, delivered by the
 * running service's sender (any instance), as the service's own are.
 */
function operatorNotices(config: Config): Notices {
  const signingMaterial = [...config.signingSecrets, ...config.signingKeys];
  const mails = createAccountMails(
    { from: config.mail.from, ...config.accountRecovery, defaultLocale: config.defaultLocale },
    createSealer(signingMaterial),
  );
  const { notice: message, emailChanged } = mails;
  return createNotices({
    enabled: config.securityNotifications,
    message,
    emailChanged,
    wake: () => {},
    clock: Date.now,
  });
}

function oneEmail(args: string[], command: string): string {
  const [email, ...rest] = args;
  if (email === undefined || rest.length > 0) throw new UsageError(`${command} takes exactly one e-mail`);
  return email;
}

export async function listUsers(args: string[]): Promise<void> {
  if (args.length > 0) throw new UsageError("users list takes no arguments");
  await withStore(async (store) => {
    process.stdout.write("id\temail\tadmin\tactive\tcreated_at\n");
    let after: string | undefined;
    for (;;) {
      const page = await store.list({ limit: 500, ...(after ? { after } : {}) });
      for (const user of page) {
        process.stdout.write(`${user.id}\t${user.email}\t${user.isAdmin}\t${user.isActive}\t${user.createdAt}\n`);
      }
      if (page.length < 500) return;
      after = page.at(-1)?.id;
    }
  });
}

export async function setPassword(args: string[]): Promise<void> {
  const email = oneEmail(args, "users set-password");
  const password = await readPassword();
  const problem = checkPassword.Errors(password)[0];
  if (problem) throw new CliError(`password ${problem.message}`);
  await withStore(async (store, config) => {
    const user = await store.findByEmail(email);
    if (!user) throw new CliError(`no user with the e-mail ${normalizeEmail(email)}`);
    checkPolicy(config, password, user.email);
    const notice = operatorNotices(config).about("password_changed", user, null, { byAdmin: true });
    await store.update(
      user.id,
      { hashedPassword: await createPasswordHasher(config.argon2).hash(password) },
      {
        endSessions: true,
        events: [{ type: "password_change", outcome: "set_by_operator", clientAddress: null, notice }],
      },
    );
    process.stdout.write(`password set for ${user.email}; its sessions have ended\n`);
  });
}

export async function deactivate(args: string[]): Promise<void> {
  const email = oneEmail(args, "users deactivate");
  await withStore(async (store, config) => {
    const user = await store.findByEmail(email);
    if (!user) throw new CliError(`no user with the e-mail ${normalizeEmail(email)}`);
    const notice = operatorNotices(config).about("account_deactivated", user, null, { byAdmin: true });
    try {
      await store.update(
        user.id,
        { isActive: false },
        { endSessions: true, events: [{ type: "deactivation", outcome: "by_operator", clientAddress: null, notice }] },
      );
    } catch (error) {
      if (error instanceof LastActiveAdmin) throw new CliError(`${user.email} is the last active admin`);
      throw error;
    }
    process.stdout.write(`deactivated ${user.email}; its sessions have ended\n`);
  });
}
