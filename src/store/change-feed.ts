// The listener list behind UserChangeFeed, shared by both backends: each
// backend decides when the feed is usable and calls changed() after every
// commit that touched a user (and with null when it may have missed some).
import type { UserChangeFeed } from "./users.ts";

export class ChangeListeners {
  readonly #listeners: ((userId: string | null) => void)[] = [];

  subscribe(listener: (userId: string | null) => void): void {
    this.#listeners.push(listener);
  }

  changed(userId: string | null): void {
    for (const listener of this.#listeners) listener(userId);
  }
}

/** A feed that is always usable: every change goes through this process's own store. */
export function localFeed(listeners: ChangeListeners, beforeUse: () => void = () => {}): UserChangeFeed {
  return {
    usable() {
      beforeUse();
      return true;
    },
    subscribe: (listener) => listeners.subscribe(listener),
  };
}
