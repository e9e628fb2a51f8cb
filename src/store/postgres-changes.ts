// Changes to users across instances through PostgreSQL's LISTEN/NOTIFY.
// Every write to a user sends pg_notify(CHANNEL, id) inside its own
// transaction, so a notification is delivered if and only if the write
// committed, whichever process made it (an instance or the CLI). Each
// instance listens on one dedicated connection, opened the first time a
// cache asks; until it listens, after it fails, and until it has been
// re-established, the feed is not usable and caches are bypassed. A
// heartbeat finds a connection that went silent (a partition sends no
// error). Every (re)start tells the listeners "anything may have changed",
// since notifications sent while nobody listened are lost.
import pg from "pg";
import type { ChangeListeners } from "./change-feed.ts";
import type { UserChangeFeed } from "./users.ts";

export const USER_CHANGES_CHANNEL = "uts_user_changes";
/** The listening connection's name in pg_stat_activity (unless the URL names one). */
export const LISTENER_APPLICATION_NAME = "uts-user-changes";
const HEARTBEAT_MS = 1000;
const MAX_RETRY_MS = 5000;

export class PostgresChangeFeed implements UserChangeFeed {
  readonly #config: pg.ClientConfig;
  readonly #listeners: ChangeListeners;
  #client: pg.Client | undefined;
  #listening = false;
  #started = false;
  #closed = false;
  #retryMs = 250;
  #timer: NodeJS.Timeout | undefined;

  constructor(config: pg.ClientConfig, listeners: ChangeListeners) {
    this.#config = { application_name: LISTENER_APPLICATION_NAME, ...config };
    this.#listeners = listeners;
  }

  usable(): boolean {
    if (!this.#started && !this.#closed) {
      this.#started = true;
      void this.#connect();
    }
    return this.#listening;
  }

  subscribe(listener: (userId: string | null) => void): void {
    this.#listeners.subscribe(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#listening = false;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.#config);
    this.#client = client;
    const down = () => this.#down(client);
    client.on("error", down);
    client.on("end", down);
    client.on("notification", (message) => this.#listeners.changed(message.payload || null));
    try {
      await client.connect();
      await client.query(`LISTEN ${USER_CHANGES_CHANNEL}`);
    } catch {
      down();
      return;
    }
    if (this.#client !== client) return;
    this.#listeners.changed(null);
    this.#listening = true;
    this.#retryMs = 250;
    this.#timer = setTimeout(() => this.#heartbeat(client), HEARTBEAT_MS);
    this.#timer.unref();
  }

  #heartbeat(client: pg.Client): void {
    client.query("SELECT 1").then(
      () => {
        if (this.#client !== client) return;
        this.#timer = setTimeout(() => this.#heartbeat(client), HEARTBEAT_MS);
        this.#timer.unref();
      },
      () => this.#down(client),
    );
  }

  #down(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#listening = false;
    this.#listeners.changed(null);
    clearTimeout(this.#timer);
    client.end().catch(() => {});
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.#connect(), this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }
}
