// Shared test fixtures: an app on its own in-memory SQLite store with a fixed
// secret and a clock the test can move; users created straight in the store;
// and a token minter independent of the service's JWT library, so forged and
// altered tokens are built by the test itself.

import { createHmac, randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { buildApp } from "../src/app.ts";
import { DEFAULT_HASH_QUEUE_LIMIT } from "../src/auth/hash-capacity.ts";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { keyId } from "../src/auth/tokens.ts";
import type { Config } from "../src/config.ts";
import type { Metrics } from "../src/operations/metrics.ts";
import type { Resolve } from "../src/outbound/guard.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { NOTICE_KINDS, type UserRecord, type UserStore } from "../src/store/store.ts";

export const TEST_SECRET = "test-signing-secret-of-at-least-32-bytes!";
export const TEST_MFA_KEY = "test-mfa-encryption-key-of-at-least-32-bytes";
/** The iss and aud of test apps' tokens (an app built without them would use its listen address). */
export const TEST_ISSUER = "https://auth.test.example";
export const TEST_AUDIENCE = "https://api.test.example";
/** The service's hasher with its default (OWASP) parameters. */
export const passwords = createPasswordHasher();

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    host: "127.0.0.1",
    port: 0,
    logLevel: "silent",
    database: { kind: "sqlite", path: ":memory:", synchronous: "normal" },
    signingAlgorithm: "HS256",
    signingSecrets: [TEST_SECRET],
    signingKeys: [],
    tokenIssuer: TEST_ISSUER,
    tokenAudience: TEST_AUDIENCE,
    introspectionClients: [],
    oauthErrorFields: false,
    clockLeewaySeconds: 0,
    argon2: { memoryKib: 19_456, timeCost: 2, parallelism: 1 },
    passwordHashQueueLimit: DEFAULT_HASH_QUEUE_LIMIT,
    rateLimit: {
      enabled: false,
      windowSeconds: 900,
      loginPerAccountAndAddress: 5,
      loginPerAccount: 50,
      loginPerAddress: 20,
      signupPerAddress: 10,
      mailRequestsPerAddress: 10,
      mailRequestsPerEmail: 3,
      secondFactorPerAccount: 5,
      clientRequestsPerAddress: 100,
    },
    trustProxy: false,
    corsOrigins: [],
    shutdownTimeoutMs: 10_000,
    connections: {
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      checkIntervalMs: 1_000,
      listenBacklog: 4096,
      shutdownDelayMs: 0,
    },
    auditRetentionDays: 90,
    userCache: { ttlMs: 5000, maxEntries: 10_000 },
    sessions: { idleSeconds: 14 * 86_400, absoluteSeconds: 30 * 86_400, reuseGraceSeconds: 10, maxPerUser: 50 },
    signupOpen: true,
    // Tests that read mail give their own transport (a real SMTP server they start); the rest write nowhere.
    mail: {
      transport: { kind: "smtp", url: "smtp://127.0.0.1:9" },
      from: "User service <no-reply@service.test>",
      maxAttempts: 3,
      retryBaseSeconds: 1,
      pollIntervalMs: 1000,
    },
    accountRecovery: {
      passwordResetTtlSeconds: 1800,
      emailVerificationTtlSeconds: 86_400,
      verificationRequired: false,
      linkBaseUrl: "http://service.test",
    },
    passwordListCheck: true,
    securityNotifications: new Set(NOTICE_KINDS),
    mfa: { encryptionKeys: [TEST_MFA_KEY], totpIssuer: "Service Test" },
    webhooks: { refusePrivateAddresses: false, timeoutMs: 2000, secretGraceSeconds: 86_400, pollIntervalMs: 1000 },
    ...overrides,
  };
}

/** A clock in milliseconds that only moves when the test says so. */
export class TestClock {
  /** Starts at the real time (whole seconds), so store timestamps and token times agree. */
  now = Math.floor(Date.now() / 1000) * 1000;
  readonly read = () => this.now;
  advanceSeconds(seconds: number): void {
    this.now += seconds * 1000;
  }
  get seconds(): number {
    return Math.floor(this.now / 1000);
  }
}

export interface TestApp {
  app: FastifyInstance;
  store: UserStore;
  clock: TestClock;
}

/**
 * The store under test: in-memory SQLite by default; with TEST_BACKEND=postgres, a fresh
 * PostgreSQL schema at POSTGRES_URL, dropped when the test ends.
 */
export async function openTestStore(t: TestContext, clock: () => number = Date.now): Promise<UserStore> {
  if (process.env.TEST_BACKEND !== "postgres") return openSqliteStore(":memory:", clock);
  const url = process.env.POSTGRES_URL;
  if (!url) throw new Error("TEST_BACKEND=postgres needs POSTGRES_URL");
  const schema = `test_${process.pid}_${randomBytes(6).toString("hex")}`;
  const store = await openPostgresStore({ url, schema, poolSize: 4, timeoutMs: 10_000, clock });
  t.after(async () => {
    await store.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  return store;
}

/**
 * A store on a fresh PostgreSQL schema at POSTGRES_URL, with a connection of its own for reading or
 * changing that schema behind the store's back; the schema is dropped when the test ends.
 */
export async function openPostgresSchema(
  t: TestContext,
  prefix: string,
  clock: () => number = Date.now,
): Promise<{ store: UserStore; admin: pg.Client; schema: string }> {
  const url = process.env.POSTGRES_URL;
  if (!url) throw new Error("TEST_BACKEND=postgres needs POSTGRES_URL");
  const schema = `${prefix}_${randomBytes(6).toString("hex")}`;
  const store = await openPostgresStore({ url, schema, poolSize: 2, timeoutMs: 10_000, clock });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.after(async () => {
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  return { store, admin, schema };
}

export async function buildTestApp(
  t: TestContext,
  config: Partial<Config> = {},
  extra: { metrics?: Metrics; resolve?: Resolve } = {},
): Promise<TestApp> {
  const clock = new TestClock();
  const store = await openTestStore(t, clock.read);
  const app = await buildApp({ config: testConfig(config), store, clock: clock.read, ...extra });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { app, store, clock };
}

export async function createUser(store: UserStore, email: string, password: string): Promise<UserRecord> {
  return store.create({ email, hashedPassword: await passwords.hash(password) });
}

/** A user made straight in the store (an admin with isAdmin), with an access token from the token endpoint. */
export async function signedInUser(
  app: FastifyInstance,
  store: UserStore,
  email: string,
  password: string,
  isAdmin = false,
): Promise<{ id: string; token: string }> {
  const user = await store.create({ email, hashedPassword: await passwords.hash(password), isAdmin });
  return { id: user.id, token: await loginToken(app, email, password) };
}

/** inject() by method and URL, with a bearer token and a JSON body when given. */
export function caller(app: FastifyInstance) {
  return (method: string, url: string, token?: string, payload?: object) =>
    app.inject({ method: method as "GET", url, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });
}

export function bearer(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/** POST /auth/token as a form, the way OAuth 2.0 clients send it. */
export function requestToken(
  app: FastifyInstance,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: "POST",
    url: "/auth/token",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    payload: new URLSearchParams(fields).toString(),
  });
}

export async function loginToken(app: FastifyInstance, username: string, password: string): Promise<string> {
  const response = await requestToken(app, { username, password });
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
  return response.json().access_token as string;
}

export function base64url(value: string | Buffer | object): string {
  const buffer =
    typeof value === "string" || Buffer.isBuffer(value) ? Buffer.from(value) : Buffer.from(JSON.stringify(value));
  return buffer.toString("base64url");
}

const HMAC_BY_ALG: Record<string, string> = { HS256: "sha256", HS384: "sha384", HS512: "sha512" };

/**
 * Builds a JWT by hand: any header, any payload, any HMAC algorithm or none. The test apps' iss and
 * aud are filled in unless the payload names its own (or sets them to undefined to leave them out).
 */
export function mintToken(
  payload: object,
  { secret = TEST_SECRET, header = {} }: { secret?: string; header?: Record<string, unknown> } = {},
): string {
  const fullHeader = { alg: "HS256", typ: "at+jwt", kid: keyId(secret), ...header };
  const signingInput = `${base64url(fullHeader)}.${base64url({ iss: TEST_ISSUER, aud: TEST_AUDIENCE, ...payload })}`;
  const hmac = HMAC_BY_ALG[String(fullHeader.alg)];
  const signature = hmac ? createHmac(hmac, secret).update(signingInput).digest("base64url") : "";
  return `${signingInput}.${signature}`;
}
