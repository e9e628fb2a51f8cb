// The one outbox mechanism behind every outbound delivery (mail, webhooks,
// back-channel logout tokens). Each instance runs one worker per kind: it
// claims due messages with a lease (the store makes a claim exclusive across
// instances), delivers them one by one, and records the outcome. A failure is
// retried later by the kind's backoff schedule, across restarts, because the
// schedule lives in the table; when the schedule is spent the message is
// given up: the kind makes that visible (status, audit event, metrics, log).
// HTTP requests only write to the outbox and wake the worker; they never
// wait for a delivery. Delivery is at least once: if the process dies after
// the receiver accepted a message and before it was recorded, the lease runs
// out and it goes again, under the same message id.
//
// Adding a kind (oidc/backchannel-logout.ts is the smallest example):
// 1. a table with the outbox columns (status, attempts, next_attempt_at,
//    lease_owner, lease_until, last_error) and store verbs to claim due rows
//    for an owner until a lease ends, counting an attempt, and to record an
//    outcome only while the owner still holds the lease (see store/sql/outbox-rows.ts);
// 2. an OutboxKind: claim (that verb), deliver (render and send one message,
//    answering an error message or undefined), retryDelayMs (the backoff
//    schedule: undefined gives up) and record (write the outcome, audit, log);
// 3. createOutboxWorker(kind, ...) in the install.ts of the capability that
//    delivers it (the shared mail outbox's in platform/services.ts), stopped
//    in an onClose hook.
import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { DeliveryOutcome } from "../store/store.ts";

/** How one delivery attempt ended: sent, to be tried again later, or given up. */
export type DeliveryResult = "sent" | "retry" | "failed";

/** What the worker decided about one attempt, for the kind to write down. */
export type AttemptOutcome =
  | { result: "sent"; at: string }
  | { result: "retry"; error: string; retryInMs: number; nextAttemptAt: string }
  | { result: "failed"; error: string };

/** The store's record of an attempt's outcome: what every kind's complete verb takes. */
export function deliveryOutcome(outcome: AttemptOutcome): DeliveryOutcome {
  if (outcome.result === "sent") return { status: "sent", at: outcome.at };
  if (outcome.result === "retry")
    return { status: "pending", nextAttemptAt: outcome.nextAttemptAt, error: outcome.error };
  return { status: "failed", error: outcome.error };
}

/** What a message must tell the worker: how many attempts it has had, this claim included. */
export interface Claimed {
  attempts: number;
}

export interface OutboxKind<M extends Claimed> {
  /** Named in log lines ("mail outbox unavailable"). */
  readonly name: string;
  /** Claims up to `limit` due messages for `owner` until `leaseUntil` (ISO), counting an attempt on each. */
  claim(owner: string, now: string, leaseUntil: string, limit: number): Promise<M[]>;
  /**
   * Sends one message: undefined when it was delivered, an error message when not. `final` marks an
   * error that no retry can mend (the message cannot even be rendered): it is given up at once.
   */
  deliver(message: M): Promise<{ error: string; final?: boolean } | undefined>;
  /** The wait before the next attempt after `attempts` failed ones; undefined gives the message up. */
  retryDelayMs(attempts: number): number | undefined;
  /** Writes the outcome (only while `owner` holds the lease), with the kind's audit events and log lines. */
  record(message: M, owner: string, outcome: AttemptOutcome): Promise<void>;
}

export interface OutboxWorker {
  /** Looks at the outbox now (after a request queued a message) instead of at the next poll. */
  wake(): void;
  /** Stops polling and waits for the delivery in progress. */
  stop(): Promise<void>;
}

export interface WorkerOptions<M> {
  clock: () => number;
  log: FastifyBaseLogger;
  pollIntervalMs: number;
  /** Longer than the worst case of one delivery, so that a lease outlives a send. */
  leaseMs: number;
  batch?: number;
  /** The metrics hook: one call per attempt. */
  onAttempt?: (message: M, result: DeliveryResult) => void;
}

/** Doubling from `baseMs` (base, 2x, 4x, ...), capped, for `maxAttempts` attempts in all. */
export function doublingBackoff(baseMs: number, capMs: number, maxAttempts: number) {
  return (attempts: number) => (attempts < maxAttempts ? Math.min(capMs, baseMs * 2 ** (attempts - 1)) : undefined);
}

export function createOutboxWorker<M extends Claimed>(
  kind: OutboxKind<M>,
  { clock, log, pollIntervalMs, leaseMs, batch = 10, onAttempt }: WorkerOptions<M>,
): OutboxWorker {
  const owner = randomUUID();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const iso = (ms: number) => new Date(ms).toISOString();

  async function deliver(message: M): Promise<void> {
    const failure = await kind.deliver(message);
    let outcome: AttemptOutcome;
    if (failure === undefined) outcome = { result: "sent", at: iso(clock()) };
    else {
      const delay = failure.final ? undefined : kind.retryDelayMs(message.attempts);
      outcome =
        delay === undefined
          ? { result: "failed", error: failure.error }
          : { result: "retry", error: failure.error, retryInMs: delay, nextAttemptAt: iso(clock() + delay) };
    }
    await kind.record(message, owner, outcome);
    onAttempt?.(message, outcome.result);
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      let claimed: M[];
      do {
        const now = clock();
        claimed = await kind.claim(owner, iso(now), iso(now + leaseMs), batch);
        for (const message of claimed) {
          if (stopped) return;
          await deliver(message);
        }
      } while (claimed.length === batch && !stopped);
    } while (again && !stopped);
  }

  function run(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    running = drain()
      .catch((error) => log.warn({ err: error }, `${kind.name} outbox unavailable; will retry`))
      .finally(() => {
        running = undefined;
        if (!stopped) {
          timer = setTimeout(run, pollIntervalMs);
          timer.unref();
        }
      });
  }

  timer = setTimeout(run, 0);
  timer.unref();

  return {
    wake: run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
