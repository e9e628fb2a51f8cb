// Brute-force limits (RFC 6749 section 4.3.2, OWASP authentication guidance).
// Failed logins are counted per (account, address), per account over all
// addresses, and per address over all accounts, in fixed windows. The
// per-(account, address) limit is the tight one; the per-account one is ten
// times looser, so an attacker elsewhere cannot lock the owner out cheaply
// (the limit is not a denial-of-service lever), yet a botnet still meets a
// ceiling. Unknown accounts are counted exactly like known ones, and the
// refusal is the same 429, so the limits never reveal whether an account
// exists. A successful login clears its account's counts. The counters live
// behind CounterStore: in this process by default, in Redis (store/redis.ts)
// when REDIS_URL is set, so that limits hold across instances.
// Second factors have their own count per user (MFA_LIMIT_PER_ACCOUNT in the
// same window): a six-digit code falls to about a million guesses, so a
// handful per window keeps the odds of a guess near one in a hundred
// thousand a window. Whoever meets that limit already knows the password.

import { HttpError } from "../errors.ts";
import { normalizeEmail } from "../users/email.ts";
import type { RateLimitConfig } from "./rate-limit-settings.ts";

export const TOO_MANY_LOGIN_ATTEMPTS = "Too many failed login attempts; try again later";
export const TOO_MANY_SIGNUPS = "Too many sign-ups from this address; try again later";
export const TOO_MANY_MAIL_REQUESTS = "Too many requests for e-mails; try again later";
export const TOO_MANY_SECOND_FACTOR_ATTEMPTS = "Too many failed second-factor attempts; try again later";
export const TOO_MANY_CLIENT_REQUESTS = "Too many authorization requests from this address; try again later";

export interface Counter {
  count: number;
  /** When the window ends (epoch milliseconds). */
  resetAt: number;
}

export interface CounterStore {
  get(key: string): Promise<Counter | undefined>;
  /** Adds one, starting a new window of `windowMs` when none is running. */
  increment(key: string, windowMs: number): Promise<Counter>;
  delete(key: string): Promise<void>;
  /** Resolves when the counters can be reached (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface RateLimits {
  /** Throws 429 when this login attempt is over a limit, before any password work. */
  checkLogin(account: string, address: string): Promise<void>;
  recordLoginFailure(account: string, address: string): Promise<void>;
  recordLoginSuccess(account: string, address: string): Promise<void>;
  /** Counts a sign-up attempt; throws 429 when the address is over its limit. */
  countSignup(address: string): Promise<void>;
  /**
   * Counts a request for a reset or verification mail, per client address and per target e-mail
   * (known or not, so the limit reveals nothing); throws 429 when either is over its limit.
   */
  countMailRequest(address: string, email: string): Promise<void>;
  /** Throws 429 when this user is over the limit of failed second-factor (or password) checks. */
  checkSecondFactor(userId: string): Promise<void>;
  recordSecondFactorFailure(userId: string): Promise<void>;
  recordSecondFactorSuccess(userId: string): Promise<void>;
  /**
   * Throws 429 when this address is over its limit of requests that leave a row behind without a
   * secret (a public client's device or pushed authorization requests) or were refused; before any work.
   */
  checkClientRequests(address: string): Promise<void>;
  /** Counts one such request from this address. */
  countClientRequest(address: string): Promise<void>;
}

/** Counters in this process's memory; expired windows are swept as new ones start. */
export class MemoryCounterStore implements CounterStore {
  readonly #counters = new Map<string, Counter>();
  readonly #clock: () => number;
  #nextSweep = 0;

  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  async get(key: string): Promise<Counter | undefined> {
    const counter = this.#counters.get(key);
    return counter && counter.resetAt > this.#clock() ? counter : undefined;
  }

  async increment(key: string, windowMs: number): Promise<Counter> {
    const now = this.#clock();
    this.#sweep(now);
    let counter = this.#counters.get(key);
    if (!counter || counter.resetAt <= now) {
      counter = { count: 0, resetAt: now + windowMs };
      this.#counters.set(key, counter);
    }
    counter.count += 1;
    return counter;
  }

  async delete(key: string): Promise<void> {
    this.#counters.delete(key);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.#counters.clear();
  }

  #sweep(now: number): void {
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 60_000;
    for (const [key, counter] of this.#counters) if (counter.resetAt <= now) this.#counters.delete(key);
  }
}

const NO_LIMITS: RateLimits = {
  checkLogin: async () => {},
  recordLoginFailure: async () => {},
  recordLoginSuccess: async () => {},
  countSignup: async () => {},
  countMailRequest: async () => {},
  checkSecondFactor: async () => {},
  recordSecondFactorFailure: async () => {},
  recordSecondFactorSuccess: async () => {},
  checkClientRequests: async () => {},
  countClientRequest: async () => {},
};

export function createRateLimits(
  config: RateLimitConfig,
  counters: CounterStore,
  clock: () => number = Date.now,
): RateLimits {
  if (!config.enabled) return NO_LIMITS;
  const windowMs = config.windowSeconds * 1000;
  const loginKeys = (account: string, address: string) => {
    const email = normalizeEmail(account);
    return [
      { key: `login:account+address:${email}|${address}`, limit: config.loginPerAccountAndAddress },
      { key: `login:account:${email}`, limit: config.loginPerAccount },
      { key: `login:address:${address}`, limit: config.loginPerAddress },
    ];
  };
  const refuse = (detail: string, resetAt: number) =>
    new HttpError(429, detail, { "retry-after": String(Math.max(1, Math.ceil((resetAt - clock()) / 1000))) });

  return {
    async checkLogin(account, address) {
      for (const { key, limit } of loginKeys(account, address)) {
        const counter = await counters.get(key);
        if (counter && counter.count >= limit) throw refuse(TOO_MANY_LOGIN_ATTEMPTS, counter.resetAt);
      }
    },

    async recordLoginFailure(account, address) {
      for (const { key } of loginKeys(account, address)) await counters.increment(key, windowMs);
    },

    async recordLoginSuccess(account, address) {
      const [accountAndAddress, accountOnly] = loginKeys(account, address);
      await counters.delete(accountAndAddress!.key);
      await counters.delete(accountOnly!.key);
    },

    async countSignup(address) {
      const counter = await counters.increment(`signup:address:${address}`, windowMs);
      if (counter.count > config.signupPerAddress) throw refuse(TOO_MANY_SIGNUPS, counter.resetAt);
    },

    async countMailRequest(address, email) {
      const byAddress = await counters.increment(`mail:address:${address}`, windowMs);
      const byEmail = await counters.increment(`mail:email:${normalizeEmail(email)}`, windowMs);
      if (byAddress.count > config.mailRequestsPerAddress) throw refuse(TOO_MANY_MAIL_REQUESTS, byAddress.resetAt);
      if (byEmail.count > config.mailRequestsPerEmail) throw refuse(TOO_MANY_MAIL_REQUESTS, byEmail.resetAt);
    },

    async checkSecondFactor(userId) {
      const counter = await counters.get(`mfa:user:${userId}`);
      if (counter && counter.count >= config.secondFactorPerAccount)
        throw refuse(TOO_MANY_SECOND_FACTOR_ATTEMPTS, counter.resetAt);
    },

    async recordSecondFactorFailure(userId) {
      await counters.increment(`mfa:user:${userId}`, windowMs);
    },

    async recordSecondFactorSuccess(userId) {
      await counters.delete(`mfa:user:${userId}`);
    },

    async checkClientRequests(address) {
      const counter = await counters.get(`client-requests:address:${address}`);
      if (counter && counter.count >= config.clientRequestsPerAddress)
        throw refuse(TOO_MANY_CLIENT_REQUESTS, counter.resetAt);
    },

    async countClientRequest(address) {
      await counters.increment(`client-requests:address:${address}`, windowMs);
    },
  };
}
