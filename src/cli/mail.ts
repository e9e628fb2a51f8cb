// The mail commands: the outbox listed (by status), and failed messages put
// back in the queue for the running service to send.
import type { MailStatus } from "../store/store.ts";
import { CliError, UsageError, withStore } from "./common.ts";

const MAIL_STATUSES: readonly MailStatus[] = ["pending", "sent", "failed"];

export async function listMail(args: string[]): Promise<void> {
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

export async function retryMail(args: string[]): Promise<void> {
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
