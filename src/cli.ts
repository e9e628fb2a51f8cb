// The operator's command line: `npm run cli -- <command>`. Passwords are
// read from a hidden prompt or from standard input, never from arguments
// (they would land in shell history and the process table).

import { writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { Compile } from "typebox/compile";
import { type AsymmetricAlgorithm, generatePrivateKeyPem, parsePrivateKey } from "./auth/keys.ts";
import { createPasswordPolicy } from "./auth/password-policy.ts";
import { createPasswordHasher, isSupportedHash } from "./auth/passwords.ts";
import { createRateLimits, MemoryCounterStore } from "./auth/rate-limits.ts";
import { createSecondFactors } from "./auth/second-factors.ts";
import { type Config, DEFAULT_DATABASE_URL, generateSecret, loadConfig } from "./config.ts";
import { readEnvironment } from "./env.ts";
import { ConfigError, EmailTaken, HttpError, LastActiveAdmin } from "./errors.ts";
import { createAccountMails } from "./mail/messages.ts";
import { createNotices, type Notices } from "./mail/notices.ts";
import { createSealer } from "./mail/seal.ts";
import { ClientCreate } from "./oidc/client-schemas.ts";
import { clientMetadata, createClientRegistry, MAX_SECRET_GRACE_SECONDS } from "./oidc/clients.ts";
import { toClientOut, withSecret } from "./oidc/present.ts";
import { UserCreate } from "./schemas.ts";
import { migrations } from "./store/migrations.ts";
import { openStore } from "./store/open.ts";
import type { MailStatus, UserStore } from "./store/store.ts";
import { normalizeEmail } from "./users/email.ts";
import { createWebhookEndpoints, webhookAudit } from "./webhooks/endpoints.ts";
import { WEBHOOK_EVENT_TYPES } from "./webhooks/events.ts";
import { webhookSecretSealer } from "./webhooks/secrets.ts";

const USAGE = `Usage: npm run cli -- <command>

Commands:
  users create <email> [--admin]
                         Create a user (an admin with --admin). The password is read from a
                         hidden prompt, or from the first line of standard input when piped:
                           printf '%s\\n' "$PASSWORD" | npm run cli -- users create ada@example.com
  users import <file>    Import users with password hashes from another system, one JSON object
                         per line: {"email": "...", "hash": "...", "full_name": "..."}. Accepted
                         hashes: bcrypt ($2a$, $2b$, $2y$) and Argon2 PHC strings. Each is upgraded
                         to this service's Argon2id on the user's first login. Existing e-mails
                         are skipped; bad lines are reported by number (exit code 1).
  users list             Every user: id, e-mail, admin, active, created.
  users set-password <email>
                         Set a user's password (read as for users create). Ends all of the
                         user's sessions and the access tokens issued before.
  users deactivate <email>
                         Deactivate a user: it can no longer log in, and its sessions and
                         access tokens end at once. The last active admin cannot be deactivated.
  clients create <json>   Register an OAuth client from its RFC 7591 metadata, the same JSON that
                         POST /clients takes, e.g.
                           npm run cli -- clients create '{"client_name": "Billing",
                             "grant_types": ["client_credentials"], "scope": "invoices:read"}'
                         Prints the client as JSON, with its client_secret (confidential clients):
                         shown this once, stored only as a hash.
  clients list           Every client: client_id, name, auth method, grant types, created.
  clients show <client_id>
                         One client as JSON (never its secret).
  clients rotate-secret <client_id> [--grace-seconds N]
                         A new secret, printed once; the current one keeps working N seconds
                         (default 0: it stops at once; at most 2592000, 30 days).
  clients delete <client_id>
                         Delete a client: its secret stops working, its tokens introspect inactive.
  mail list [--status pending|sent|failed]
                         The mail outbox, newest first (at most 1000): id, status, kind,
                         recipient, attempts, created, next attempt or sent time, last error.
  mail retry <id>|--all-failed
                         Put one failed message, or every failed one, back in the queue: the
                         running service sends it within seconds.
  mfa reseal             Re-seal every stored TOTP secret under the first MFA_ENCRYPTION_KEY, so
                         that older keys can be removed from the list. Exit code 1 when some
                         secret opens with none of the listed keys. Recovery codes are hashed, not
                         sealed: those made under an older key work while it is listed; users can
                         make new ones (POST /me/recovery-codes).
  webhooks list          Every webhook endpoint: id, enabled, url, event types, why it was turned off.
  webhooks create <url> <type>[,<type>...] [--description <text>]
                         Create an endpoint for these event types (user.created, session.ended, ...)
                         and print its id and signing secret (whsec_...): shown this once.
  webhooks rotate <id>   Print a new signing secret (shown this once); the previous one keeps
                         signing beside it for WEBHOOK_SECRET_GRACE_SECONDS.
  webhooks enable <id>   Turn an endpoint on again (after the service turned it off): what waited
                         in its queue is delivered, in order.
  webhooks delete <id>   Delete an endpoint, its queue and its delivery log.
  webhooks deliveries <id>
                         Its delivery log, newest first (at most 100): time, event id, type, attempt,
                         status code, duration, error.
  webhooks redeliver <id> <event-id>
                         Queue one event again for the endpoint, due now.
  migrate                Bring the database schema up to date and exit (the service also does
                         this at start-up; several instances at once apply each step once).
  secret generate        Print a new random signing secret (256 bits, base64url) for SIGNING_SECRET.
  key generate <EdDSA|ES256> <file>
                         Write a new private key for SIGNING_KEY_FILE to <file> (PEM, owner-only,
                         never overwriting a file) and print its kid. The key itself is never printed.
  serve                  Start the service (the same as npm start).
  help                   Show this text.

Passwords set here follow the service's rules: common or breached passwords (unless
PASSWORD_LIST_CHECK=off) and passwords containing the e-mail are refused. Users created
here count as verified: the operator vouches for the address.

The settings (DATABASE_URL, default ${DEFAULT_DATABASE_URL}; the ARGON2_* parameters) are read
from the environment or a .env file, and checked, exactly as the service does.`;

/** A failure the operator can fix: printed as one line, exit code 1. */
class CliError extends Error {}
/** The command line itself is wrong: the message and the usage, exit code 2. */
class UsageError extends Error {}

const checkNewUser = Compile(UserCreate);
const checkEmail = Compile(UserCreate.properties.email);
const checkPassword = Compile(UserCreate.properties.password);

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

async function importUsers(args: string[]): Promise<boolean> {
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

/** Opens the configured store for one command and always closes it. */
async function withStore<T>(work: (store: UserStore, config: Config) => Promise<T>): Promise<T> {
  const { config } = loadConfig(readEnvironment());
  const store = await openStore(config.database);
  try {
    return await work(store, config);
  } finally {
    await store.close();
  }
}

/**
 * The security notifications of an operator's change: queued in its transaction, delivered by the
 * running service's sender (any instance), as the service's own are.
 */
function operatorNotices(config: Config): Notices {
  const signingMaterial = [...config.signingSecrets, ...config.signingKeys];
  const mails = createAccountMails(
    { from: config.mail.from, ...config.accountRecovery },
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

async function listUsers(args: string[]): Promise<void> {
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

async function setPassword(args: string[]): Promise<void> {
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

async function deactivate(args: string[]): Promise<void> {
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

const checkClient = Compile(ClientCreate);
/** Changes made here are the operator's: no admin user, no client address. */
const OPERATOR = { userId: null, clientAddress: null };

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function oneClientId(args: string[], command: string): string {
  const [id, ...rest] = args;
  if (id === undefined || rest.length > 0) throw new UsageError(`${command} takes exactly one client_id`);
  return id;
}

async function clientsCommand(command: string | undefined, args: string[]): Promise<void> {
  if (command === "create") {
    const [json, ...rest] = args;
    if (json === undefined || rest.length > 0) throw new UsageError("clients create takes one JSON argument");
    let input: unknown;
    try {
      input = JSON.parse(json);
    } catch {
      throw new CliError("the client metadata is not JSON");
    }
    const problems = checkClient.Errors(input);
    // The summary of an unknown field says which; its first entry only says "schema is false".
    const problem = problems.find((entry) => entry.keyword !== "boolean") ?? problems[0];
    if (problem) throw new CliError(`${problem.instancePath.slice(1) || "metadata"} ${problem.message}`);
    await withClients(async (clients) => {
      printJson(withSecret(await clients.register(clientMetadata(input as ClientCreate), OPERATOR)));
    });
  } else if (command === "list") {
    if (args.length > 0) throw new UsageError("clients list takes no arguments");
    await withClients(async (clients) => {
      process.stdout.write("client_id\tclient_name\ttoken_endpoint_auth_method\tgrant_types\tcreated_at\n");
      let after: string | undefined;
      for (;;) {
        const page = await clients.list({ limit: 500, ...(after ? { after } : {}) });
        for (const c of page) {
          process.stdout.write(
            `${[c.id, c.name, c.tokenEndpointAuthMethod, c.grantTypes.join(","), c.createdAt].join("\t")}\n`,
          );
        }
        if (page.length < 500) return;
        after = page.at(-1)?.id;
      }
    });
  } else if (command === "show") {
    const id = oneClientId(args, "clients show");
    await withClients(async (clients) => {
      const client = await clients.find(id);
      if (client === undefined) throw new CliError(`no client with the id ${id}`);
      printJson(toClientOut(client));
    });
  } else if (command === "rotate-secret") {
    const graceAt = args.indexOf("--grace-seconds");
    const grace = graceAt < 0 ? "0" : args[graceAt + 1];
    const rest = graceAt < 0 ? args : args.filter((_, index) => index !== graceAt && index !== graceAt + 1);
    const id = oneClientId(rest, "clients rotate-secret");
    if (grace === undefined || !/^\d{1,10}$/.test(grace) || Number(grace) > MAX_SECRET_GRACE_SECONDS)
      throw new UsageError(`--grace-seconds takes a whole number from 0 to ${MAX_SECRET_GRACE_SECONDS}`);
    await withClients(async (clients) => {
      const client = await clients.find(id);
      if (client === undefined) throw new CliError(`no client with the id ${id}`);
      if (!client.confidential) throw new CliError(`${id} is a public client: it has no secret`);
      const rotated = await clients.rotateSecret(id, Number(grace), OPERATOR);
      if (rotated === undefined) throw new CliError(`no client with the id ${id}`);
      printJson(withSecret(rotated));
    });
  } else if (command === "delete") {
    const id = oneClientId(args, "clients delete");
    await withClients(async (clients) => {
      if (!(await clients.remove(id, OPERATOR))) throw new CliError(`no client with the id ${id}`);
      process.stdout.write(`deleted client ${id}\n`);
    });
  } else {
    throw new UsageError(`unknown command: clients ${command ?? ""}`.trim());
  }
}

/**
 * The client registry over the configured store, checking back-channel logout URIs under the service's
 * WEBHOOK_REFUSE_PRIVATE_ADDRESSES; a refused metadata rule is one line, exit code 1.
 */
async function withClients(work: (clients: ReturnType<typeof createClientRegistry>) => Promise<void>): Promise<void> {
  await withStore(async (store, config) => {
    // The declared first-party audiences (without PUBLIC_URL, the listen address is not known here).
    const reserved = [config.tokenIssuer, config.tokenAudience, config.publicUrl].filter(
      (audience): audience is string => audience !== undefined,
    );
    try {
      await work(
        createClientRegistry(store, Date.now, undefined, {
          settings: config.webhooks,
          reservedAudiences: () => reserved,
        }),
      );
    } catch (error) {
      if (error instanceof HttpError) throw new CliError(error.detail);
      throw error;
    }
  });
}

const MAIL_STATUSES: readonly MailStatus[] = ["pending", "sent", "failed"];

async function listMail(args: string[]): Promise<void> {
  let status: MailStatus | undefined;
  if (args.length === 2 && args[0] === "--status" && (MAIL_STATUSES as readonly string[]).includes(args[1] ?? "")) {
    status = args[1] as MailStatus;
  } else if (args.length > 0) {
    throw new UsageError("mail list takes only --status pending|sent|failed");
  }
  await withStore(async (store) => {
    process.stdout.write("id\tstatus\tkind\trecipient\tattempts\tcreated_at\tnext_attempt_or_sent_at\tlast_error\n");
    for (const message of await store.listMail({ limit: 1000, ...(status ? { status } : {}) })) {
      const when =
        message.status === "sent" ? message.sentAt : message.status === "pending" ? message.nextAttemptAt : "";
      process.stdout.write(
        `${[message.id, message.status, message.kind, message.recipient, message.attempts, message.createdAt, when ?? "", message.lastError ?? ""].join("\t")}\n`,
      );
    }
  });
}

async function retryMail(args: string[]): Promise<void> {
  const [target, ...rest] = args;
  if (target === undefined || rest.length > 0) throw new UsageError("mail retry takes one message id or --all-failed");
  const all = target === "--all-failed";
  if (!all && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(target)) {
    throw new UsageError("mail retry takes one message id (a UUID) or --all-failed");
  }
  await withStore(async (store) => {
    const count = await store.retryFailedMail(all ? undefined : target.toLowerCase(), new Date().toISOString());
    if (!all && count === 0) throw new CliError(`no failed message with the id ${target}`);
    process.stdout.write(`${count} failed message${count === 1 ? "" : "s"} queued again\n`);
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The webhooks commands; `args` after the subcommand. Each names the endpoint by id. */
async function webhooks(command: string | undefined, args: string[]): Promise<void> {
  const [id, ...rest] = args;
  const needsId = command !== "list" && command !== "create";
  if (needsId && (id === undefined || !UUID.test(id))) throw new UsageError(`webhooks ${command} takes an endpoint id`);
  const write = (line: (string | number | null)[]) => process.stdout.write(`${line.map((v) => v ?? "").join("\t")}\n`);
  await withStore(async (store, config) => {
    const sealer = webhookSecretSealer(config.mfa.encryptionKeys, [...config.signingSecrets, ...config.signingKeys]);
    const endpoints = createWebhookEndpoints(store, sealer, config.webhooks, Date.now);
    const endpointId = (id ?? "").toLowerCase();
    if (command === "list") {
      if (args.length > 0) throw new UsageError("webhooks list takes no arguments");
      write(["id", "enabled", "url", "event_types", "disabled_reason"]);
      for (const endpoint of await store.listWebhookEndpoints({ limit: 1000 })) {
        write([
          endpoint.id,
          String(endpoint.enabled),
          endpoint.url,
          endpoint.eventTypes.join(","),
          endpoint.disabledReason,
        ]);
      }
    } else if (command === "create") {
      const [url, types, flag, description, ...extra] = args;
      if (
        url === undefined ||
        types === undefined ||
        extra.length > 0 ||
        (flag !== undefined && flag !== "--description")
      )
        throw new UsageError("webhooks create takes <url> <type>[,<type>...] [--description <text>]");
      const eventTypes = [...new Set(types.split(","))];
      const unknown = eventTypes.find((type) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(type));
      if (unknown) throw new CliError(`unknown event type ${unknown}; known: ${WEBHOOK_EVENT_TYPES.join(", ")}`);
      if (!URL.canParse(url) || !/^https?:\/\//.test(url)) throw new CliError("the url must be an http or https URL");
      await endpoints.checkUrl(url).catch((error: Error) => {
        throw new CliError(error.message);
      });
      const created = await endpoints.create(
        { url, eventTypes, enabled: true, description: description ?? null },
        null,
        null,
      );
      process.stdout.write(`created ${created.endpoint.id}\nsecret ${created.secret}\n(shown this once)\n`);
    } else if (command === "rotate" && rest.length === 0) {
      const rotated = await endpoints.rotate(endpointId, null, null);
      if (!rotated) throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(
        `secret ${rotated.secret}\n(shown this once; the previous one signs too until ${rotated.endpoint.previousSecretUntil})\n`,
      );
    } else if (command === "enable" && rest.length === 0) {
      if (
        !(await store.updateWebhookEndpoint(endpointId, { enabled: true }, [
          webhookAudit("endpoint_updated", null, null),
        ]))
      )
        throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(`enabled ${endpointId}\n`);
    } else if (command === "delete" && rest.length === 0) {
      if (!(await store.removeWebhookEndpoint(endpointId, [webhookAudit("endpoint_deleted", null, null)])))
        throw new CliError(`no webhook endpoint with the id ${id}`);
      process.stdout.write(`deleted ${endpointId}\n`);
    } else if (command === "deliveries" && rest.length === 0) {
      if (!(await store.findWebhookEndpoint(endpointId))) throw new CliError(`no webhook endpoint with the id ${id}`);
      write(["created_at", "event_id", "type", "attempt", "status_code", "duration_ms", "error"]);
      for (const a of await store.listWebhookAttempts(endpointId, { limit: 100 })) {
        write([a.createdAt, a.eventId, a.type, a.attempt, a.statusCode, a.durationMs, a.error]);
      }
    } else if (command === "redeliver" && rest.length === 1 && UUID.test(rest[0] as string)) {
      const eventId = (rest[0] as string).toLowerCase();
      if (!(await store.redeliverWebhookEvent(endpointId, eventId, new Date().toISOString())))
        throw new CliError(`no event ${eventId} for the webhook endpoint ${id}`);
      process.stdout.write(`event ${eventId} queued again; the running service delivers it within seconds\n`);
    } else throw new UsageError(`unknown command: webhooks ${[command, ...args].filter(Boolean).join(" ")}`);
  });
}

/** A new signing key straight into an owner-only file: a private key never passes through a terminal. */
function generateKeyFile(args: string[]): void {
  const [algorithm, file] = args;
  if (args.length !== 2 || (algorithm !== "EdDSA" && algorithm !== "ES256"))
    throw new UsageError("key generate takes an algorithm (EdDSA or ES256) and a file");
  const pem = generatePrivateKeyPem(algorithm as AsymmetricAlgorithm);
  try {
    writeFileSync(file as string, pem, { mode: 0o600, flag: "wx" });
  } catch (error) {
    throw new CliError(`cannot write ${file}: ${(error as NodeJS.ErrnoException).code}`);
  }
  process.stdout.write(`${parsePrivateKey(algorithm as AsymmetricAlgorithm, pem).kid}\n`);
}

async function resealSecondFactors(args: string[]): Promise<void> {
  if (args.length > 0) throw new UsageError("mfa reseal takes no arguments");
  const { resealed, unreadable } = await withStore((store, config) =>
    createSecondFactors({
      store,
      keys: config.mfa.encryptionKeys,
      signingMaterial: [...config.signingSecrets, ...config.signingKeys],
      issuer: config.mfa.totpIssuer,
      limits: createRateLimits({ ...config.rateLimit, enabled: false }, new MemoryCounterStore()),
      clock: Date.now,
    }).reseal(),
  );
  process.stdout.write(`${resealed} TOTP secret(s) sealed under the first MFA_ENCRYPTION_KEY\n`);
  if (unreadable > 0) {
    throw new CliError(
      `${unreadable} TOTP secret(s) open with none of the keys in MFA_ENCRYPTION_KEY; left as they were`,
    );
  }
}

async function migrate(): Promise<void> {
  const { config } = loadConfig(readEnvironment());
  let store: UserStore;
  try {
    store = await openStore(config.database);
  } catch (error) {
    throw new CliError(`cannot migrate the database named by DATABASE_URL: ${(error as Error).message}`);
  }
  await store.close();
  const latest = Math.max(...migrations.map((migration) => migration.version));
  process.stdout.write(`database schema is up to date (version ${latest})\n`);
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
    if (group === "users" && command === "import") return (await importUsers(args)) ? 0 : 1;
    if (group === "users" && command === "list") await listUsers(args);
    else if (group === "users" && command === "set-password") await setPassword(args);
    else if (group === "users" && command === "deactivate") await deactivate(args);
    else if (group === "clients") await clientsCommand(command, args);
    else if (group === "mail" && command === "list") await listMail(args);
    else if (group === "mail" && command === "retry") await retryMail(args);
    else if (group === "mfa" && command === "reseal") await resealSecondFactors(args);
    else if (group === "webhooks") await webhooks(command, args);
    else if (group === "migrate" && command === undefined) await migrate();
    else if (group === "secret" && command === "generate" && args.length === 0)
      process.stdout.write(`${generateSecret()}\n`);
    else if (group === "key" && command === "generate") generateKeyFile(args);
    else if (group === "serve" && command === undefined) await import("./server.ts");
    else throw new UsageError(`unknown command: ${[group, command, ...args].filter(Boolean).join(" ")}`);
    return 0;
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
