// The operator's command line: `npm run cli -- <command>`. Passwords are
// read from a hidden prompt or from standard input, never from arguments
// (they would land in shell history and the process table).
//
// This file is the table of commands and its usage text; each group's
// commands are in src/cli/ (users, clients, mail, webhooks, setup), with
// what they share in src/cli/common.ts.
import { clientsCommand } from "./cli/clients.ts";
import { CliError, UsageError } from "./cli/common.ts";
import { listMail, retryMail } from "./cli/mail.ts";
import { generateKeyFile, migrate, resealSecondFactors } from "./cli/setup.ts";
import { createUser, deactivate, importUsers, listUsers, setPassword } from "./cli/users.ts";
import { webhooks } from "./cli/webhooks.ts";
import { ConfigError } from "./errors.ts";
import { generateSecret } from "./settings/secret-files.ts";
import { DEFAULT_DATABASE_URL } from "./store/settings.ts";

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
