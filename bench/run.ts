// npm run bench [-- --quick] [-- --postgres URL] [-- --only clients|codes|memory|dpop|device|console|pages]
//
// Measures the service against ceilings taken in the same run, on this
// machine, over loopback: a bare Fastify server for GET /me, bare Argon2id
// verifies for POST /auth/token, and a peer, panva's oidc-provider, for the
// OAuth client endpoints. Loads alternate service and ceiling
// (A, B, A, B) so that drift hits both, and the table reports medians and
// ratios. Every server (and the hashing ceiling) runs on core 0 and this
// process, the load generator, on core 1 (taskset; where it is missing or
// the machine has one core, the run says so and goes on unpinned), so that a
// ratio does not move with how the two happen to share the cores. --quick runs everything in seconds to prove the benchmark works
// (no figure is asserted); the full run takes a few minutes. With
// --postgres URL, GET /me and POST /auth/token are measured on PostgreSQL
// too. Results also go to bench/results/latest.json. --only dpop runs only
// the DPoP group (bench/dpop.ts: DPoP-bound GET /me against bearer GET /me),
// --only device only the device grant's polls (bench/device-poll.ts),
// --only console only the admin console's first screen and GET /me with the
// console on and off (bench/console.ts), --only pages the sign-in page against
// GET /me (issue 37), --only clients the OAuth client endpoints with their
// floors and the peer (group 8), --only codes the full code exchanges with
// the peer (group 9), --only memory the fresh pairs' peak RSS under
// GET /me (group 4); each writes bench/results/<group>.json.
import { spawn } from "node:child_process";
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { simpleParser } from "mailparser";
import pg from "pg";
import { HASH_QUEUE_PER_CORE } from "../src/auth/hash-capacity.ts";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { firstScreens } from "./console.ts";
import { measureDevicePolls } from "./device-poll.ts";
import { measureDpopMe } from "./dpop.ts";
import { peerBrowserSession } from "./peer-browser-sessions.ts";
import {
  bundleBaseline,
  type Child,
  cpuTimes,
  freePort,
  nodeArguments,
  onServerCore,
  pinLoadGenerator,
  ROOT,
  SERVER_CORES,
  SERVICE,
  sampleMemory,
  startChild,
} from "./processes.ts";
import { registerBenchClient, registerCodeClient, registerDeviceClient, seedUsers } from "./seed.ts";

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const postgresUrl = argv.includes("--postgres") ? argv[argv.indexOf("--postgres") + 1] : undefined;
const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1] : undefined;
const GROUPS = ["clients", "codes", "memory", "dpop", "device", "console", "pages"];
if (only !== undefined && !GROUPS.includes(only))
  throw new Error(`--only: unknown group '${only}' (${GROUPS.join(", ")})`);
const plan = quick
  ? {
      rounds: 1,
      meRounds: 1,
      meSeconds: 2,
      loginRounds: 1,
      seconds: 2,
      bigUsers: 10_000,
      timingAttempts: 30,
      starts: 2,
      hashSeconds: 2,
      consoleScreens: 20,
      memoryPairs: 1,
    }
  : {
      rounds: 3,
      meRounds: 5,
      meSeconds: 6,
      loginRounds: 5,
      seconds: 10,
      bigUsers: 1_000_000,
      timingAttempts: 200,
      starts: 5,
      hashSeconds: 8,
      /** The admin console's cold first screens per round (of meRounds). */
      consoleScreens: 100,
      /** Fresh (bare, service) pairs whose peak RSS under GET /me is compared, each on its own. */
      memoryPairs: 3,
    };

const SECRET = "bench-signing-secret-0123456789abcdefghij";
const EMAIL = "bench@example.com";
const PASSWORD = "correct horse battery staple";
const LOGIN_CONNECTIONS = 8;
const work = mkdtempSync(join(tmpdir(), "bench-"));
const children: Child[] = [];

const log = (message: string) => process.stderr.write(`bench: ${message}\n`);
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
/**
 * The median of the rounds' own ratios: each round's two loads ran seconds apart, so a machine
 * whose speed drifts between rounds (this one varies by a third) moves both sides of a round
 * alike. The ratio of the two medians would pair loads from different rounds; it is kept in
 * latest.json for comparison.
 */
const pairedRatio = (side: number[], reference: number[]): number =>
  median(side.map((value, round) => value / (reference[round] as number)));
const rates = (runs: Load[]) => runs.map((run) => run.rps);

function serviceEnv(databaseUrl: string, logLevel = "info"): Record<string, string> {
  // Production logging (info, JSON to stdout); rate limits off, as for any load test.
  // No drain delay on SIGTERM: nothing balances load onto these instances.
  return {
    SIGNING_SECRET: SECRET,
    MFA_ENCRYPTION_KEY: `mfa-${SECRET}`,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: logLevel,
    RATE_LIMIT: "off",
    SHUTDOWN_DELAY_MS: "0",
  };
}

async function startService(databaseUrl: string, logLevel = "info"): Promise<Child> {
  const child = await startChild(SERVICE, serviceEnv(databaseUrl, logLevel), work, "/healthz");
  children.push(child);
  return child;
}

interface Load {
  rps: number;
  /** Requests answered in the whole load. */
  served: number;
  p99: number;
  errors: number;
}

async function load(
  url: string,
  options: {
    connections: number;
    seconds?: number;
    method?: "POST";
    body?: string;
    headers?: Record<string, string>;
    /** Whether an answer's body has the right shape; those that have not count as errors. */
    check?: (body: string) => boolean;
  },
): Promise<Load> {
  // autocannon's own percentiles come from a histogram of whole milliseconds, where one step is
  // 20 % of a 5 ms p99; each answer's own time (in fractions of a millisecond) is kept instead.
  const latencies: number[] = [];
  const { check } = options;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections: options.connections,
        duration: options.seconds ?? plan.seconds,
        method: options.method ?? "GET",
        ...(options.body ? { body: options.body } : {}),
        headers: options.headers ?? {},
        // Answers that fail it count as mismatches (a refused answer fails it as well as counting non-2xx).
        ...(check ? { verifyBody: (body: string | Buffer | undefined) => check(String(body ?? "")) } : {}),
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
    instance.on("response", (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  return {
    rps: result.requests.average,
    served: result.requests.total,
    p99: percentile(latencies, 0.99),
    errors: result.errors + result.non2xx + result.mismatches,
  };
}

/** The value below which `share` of the values lie (nearest rank); 0 for none. */
function percentile(values: number[], share: number): number {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number;
}

async function tokenFor(base: string): Promise<string> {
  const signUp = await fetch(`${base}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  if (signUp.status !== 201 && signUp.status !== 409) throw new Error(`sign-up failed: ${signUp.status}`);
  const response = await fetch(`${base}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: EMAIL, password: PASSWORD }),
  });
  if (response.status !== 200) throw new Error(`login failed: ${response.status}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

interface Exchanges {
  /** Whole exchanges (a code, then its tokens) per second. */
  rps: number;
  exchanges: number;
  /** The server's CPU time (whole process, ms) per whole exchange. */
  cpuMs: number;
  /** Authorization requests not answered with a code, and token requests not answered 200. */
  failures: number;
}

const CODE_REDIRECT = "http://127.0.0.1/callback";
const CODE_PKCE = (() => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
})();

interface CodeService {
  url: string;
  /** The server's process id (its CPU time is read from /proc). */
  pid: number;
  /** Where the authorization requests and the token requests go. */
  paths: { authorize: string; token: string };
  client: { id: string; secret: string };
  /** Opens browser sessions for `count` users new to this round: their cookies (name=value). */
  browserSessions(round: number, count: number): Promise<string[]>;
  stop(): Promise<void>;
}

const CODE_USERS = 64;
const CODE_PASSWORD = "code exchange password";

/**
 * The service as shipped, on the same database, with an RS256 key for ID tokens (OIDC_SIGNING_KEY_FILE)
 * and a registered first-party app. Every exchange starts a session of its user, and a user keeps at
 * most MAX_SESSIONS_PER_USER (50 by default): past it, the oldest, the browser session itself, would
 * end. So each round signs in users of its own, one per connection, and this instance allows 10,000
 * sessions a user (the cap's query then reads up to a few hundred live sessions of a user, not 50).
 */
async function startCodeService(databaseUrl: string): Promise<CodeService> {
  const path = databaseUrl.slice("sqlite:".length);
  const keyFile = join(work, "oidc-signing-key.pem");
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  const client = await registerCodeClient(path, CODE_REDIRECT);
  const hashed = await createPasswordHasher().hash(CODE_PASSWORD);
  const child = await startChild(
    SERVICE,
    { ...serviceEnv(databaseUrl), OIDC_SIGNING_KEY_FILE: keyFile, MAX_SESSIONS_PER_USER: "10000" },
    work,
    "/healthz",
  );
  children.push(child);
  async function browserSession(email: string): Promise<string> {
    const login = await fetch(`${child.url}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ username: email, password: CODE_PASSWORD }),
    });
    if (login.status !== 200) throw new Error(`code exchange user sign-in failed: ${login.status}`);
    const opened = await fetch(`${child.url}/oauth/browser-session`, {
      method: "POST",
      headers: { authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}` },
    });
    const cookie = opened.headers.get("set-cookie")?.split(";")[0];
    if (opened.status !== 204 || cookie === undefined) throw new Error(`browser session failed: ${opened.status}`);
    return cookie;
  }
  return {
    url: child.url,
    pid: child.process.pid as number,
    paths: { authorize: "/oauth/authorize", token: "/auth/token" },
    client,
    async browserSessions(round, count) {
      const prefix = `code${round}-`;
      await seedUsers(path, count, hashed, prefix);
      const cookies: string[] = [];
      // A few at a time, as the hashing threads take them.
      for (let i = 0; i < count; i += 4) {
        const batch = Array.from({ length: Math.min(4, count - i) }, (_, j) => `${prefix}${i + j}@example.com`);
        cookies.push(...(await Promise.all(batch.map(browserSession))));
      }
      return cookies;
    },
    stop: child.stop,
  };
}

/** The same first-party app at the peer (bench/peer-oidc-provider.ts), with browser sessions of its own. */
async function startPeerCodeService(client: { id: string; secret: string }): Promise<CodeService> {
  const child = await startChild(
    "bench/peer-oidc-provider.ts",
    {
      BENCH_CODE_CLIENT_ID: client.id,
      BENCH_CODE_CLIENT_SECRET: client.secret,
      BENCH_CODE_REDIRECT_URI: CODE_REDIRECT,
      NODE_ENV: "production",
    },
    work,
    "/.well-known/openid-configuration",
  );
  children.push(child);
  const paths = { authorize: "/auth", token: "/token" };
  return {
    url: child.url,
    pid: child.process.pid as number,
    paths,
    client,
    async browserSessions(round, count) {
      const cookies: string[] = [];
      for (let i = 0; i < count; i += 4) {
        const batch = Array.from({ length: Math.min(4, count - i) }, (_, j) => `peer${round}-${i + j}@example.com`);
        cookies.push(
          ...(await Promise.all(
            batch.map((email) => peerBrowserSession(child.url, authorizePath(paths, client), email)),
          )),
        );
      }
      return cookies;
    },
    stop: child.stop,
  };
}

/** The app's authorization request (with PKCE), path and query. */
function authorizePath(paths: CodeService["paths"], client: { id: string }): string {
  return `${paths.authorize}?${new URLSearchParams({
    response_type: "code",
    client_id: client.id,
    redirect_uri: CODE_REDIRECT,
    scope: "openid email",
    code_challenge: CODE_PKCE.challenge,
    code_challenge_method: "S256",
    state: "bench",
  })}`;
}

/** Whether a body is a code exchange's token answer: an access token and an ID token. */
function hasTokens(body: string): boolean {
  try {
    const answer = JSON.parse(body) as { access_token?: unknown; id_token?: unknown };
    return typeof answer.access_token === "string" && typeof answer.id_token === "string";
  } catch {
    return false;
  }
}

/** One load of code exchanges: each connection asks for a code, then redeems it, and again. */
async function codeExchanges({ url, pid, paths, client }: CodeService, cookies: readonly string[]): Promise<Exchanges> {
  const authorize = authorizePath(paths, client);
  const basic = `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`;
  let exchanges = 0;
  let failures = 0;
  // One browser session (one user) per connection: the context is the connection's own.
  type Context = { code?: string | null; cookie?: string };
  let connections = 0;
  const cpuBefore = cpuTimes(pid).process;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url,
        connections: 64,
        duration: plan.seconds,
        requests: [
          {
            method: "GET",
            path: authorize,
            setupRequest: (request, context: Context) => {
              context.cookie ??= cookies[connections++ % cookies.length] as string;
              return { ...request, headers: { ...request.headers, cookie: context.cookie } };
            },
            onResponse: (status, _body, context: Context, headers) => {
              // Header names as the server wrote them (oidc-provider writes Location).
              const location =
                status === 303
                  ? Object.entries(headers as Record<string, string>).find(
                      ([name]) => name.toLowerCase() === "location",
                    )?.[1]
                  : undefined;
              context.code = location ? new URL(location, url).searchParams.get("code") : null;
              if (!context.code) failures += 1;
            },
          },
          {
            method: "POST",
            path: paths.token,
            headers: { ...formHeaders, authorization: basic },
            setupRequest: (request, context: Context) => ({
              ...request,
              body: new URLSearchParams({
                grant_type: "authorization_code",
                code: context.code ?? "none",
                redirect_uri: CODE_REDIRECT,
                code_verifier: CODE_PKCE.verifier,
              }).toString(),
            }),
            onResponse: (status, body) => {
              if (status === 200 && hasTokens(body)) exchanges += 1;
              else failures += 1;
            },
          },
        ],
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    );
  });
  const cpuMs = (cpuTimes(pid).process - cpuBefore) / exchanges;
  return { rps: exchanges / result.duration, exchanges, cpuMs, failures };
}

interface Ceiling {
  perSecond: number;
  /** CPU time of the whole ceiling process per verify, in ms. */
  cpuMsPerVerify: number;
}

/**
 * The ceiling runs pinned to the servers' core, as the service does: pinned to one core, the service
 * sees os.availableParallelism() = 1 and lets one hash run at a time (src/auth/hash-capacity.ts), and
 * the ceiling's hasher (the same module, offered `parallel` verifies at once as the service is offered
 * its connections' logins) then does too. A ceiling on both cores would hash two at a time, and the
 * token endpoint's ratio would halve for no fault of the service's.
 */
function hashCeiling(parallel: number, seconds: number): Promise<Ceiling> {
  return new Promise((resolve, reject) => {
    const pinned = onServerCore(process.execPath, [
      join(ROOT, "bench/hash-ceiling.ts"),
      String(parallel),
      String(seconds),
    ]);
    const child = spawn(pinned.command, pinned.args, {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(output) as Ceiling) : reject(new Error(`hash ceiling exited ${code}`)),
    );
  });
}

const loginBody = new URLSearchParams({ username: EMAIL, password: PASSWORD }).toString();
const formHeaders = { "content-type": "application/x-www-form-urlencoded" };

interface Row {
  figure: string;
  value: string;
  reference: string;
  ratio: string;
  target: string;
  holds: boolean;
}
const rows: Row[] = [];
const record: Record<string, unknown> = { quick, plan, node: process.version, started: new Date().toISOString() };

async function main(): Promise<void> {
  log(`${quick ? "quick" : "full"} run in ${work}`);
  pinLoadGenerator(log);
  const smallDb = `sqlite:${join(work, "small.db")}`;
  if (only !== undefined) {
    const groups: Record<string, (databaseUrl: string) => Promise<void>> = {
      clients: async (databaseUrl) => {
        const service = await startService(databaseUrl);
        const baseline = await startChild("bench/baseline.ts", {}, work, "/me");
        children.push(baseline);
        await measureClients(service, baseline, join(work, "small.db"));
      },
      memory: measureMemory,
      codes: async (databaseUrl) => {
        const baseline = await startChild("bench/baseline.ts", {}, work, "/me");
        children.push(baseline);
        await measureCodeExchanges(databaseUrl, baseline);
      },
      dpop: measureDpop,
      device: measureDevice,
      console: measureConsole,
      pages: measurePages,
    };
    await (groups[only] as (databaseUrl: string) => Promise<void>)(smallDb);
    printTable();
    mkdirSync(join(ROOT, "bench/results"), { recursive: true });
    writeFileSync(join(ROOT, `bench/results/${only}.json`), `${JSON.stringify({ ...record, rows }, null, 2)}\n`);
    return;
  }
  const service = await startService(smallDb);
  const baseline = await startChild("bench/baseline.ts", {}, work, "/me");
  children.push(baseline);
  const token = await tokenFor(service.url);
  for (let i = 0; i < 9; i++) {
    await fetch(`${service.url}/users`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `user${i}@example.com`, password: PASSWORD }),
    });
  }
  const auth = { authorization: `Bearer ${token}` };

  // 1 and 4a: GET /me against the bare baseline, alternating: the service as shipped (info: one access
  // line per request), the service at warn (no access line), the ceiling. Peak memory of each meanwhile.
  const quiet = await startService(smallDb, "warn");
  const quietAuth = { authorization: `Bearer ${await tokenFor(quiet.url)}` };
  const me: Load[] = [];
  const meQuiet: Load[] = [];
  const base: Load[] = [];
  const meMemory = sampleMemory(service.process.pid as number);
  const quietMemory = sampleMemory(quiet.process.pid as number);
  const baseMemory = sampleMemory(baseline.process.pid as number);
  await load(`${service.url}/me`, { connections: 64, seconds: 1, headers: auth });
  await load(`${quiet.url}/me`, { connections: 64, seconds: 1, headers: quietAuth });
  await load(`${baseline.url}/me`, { connections: 64, seconds: 1 });
  // Shorter loads in more rounds than elsewhere: the paired loads lie closer together, and the median
  // of five round ratios moves less with one odd round. Every other round runs in reverse order, so a
  // machine that speeds up or slows down during a round favours neither side.
  const meLoads = [
    { runs: me, url: `${service.url}/me`, headers: auth },
    { runs: meQuiet, url: `${quiet.url}/me`, headers: quietAuth },
    { runs: base, url: `${baseline.url}/me`, headers: {} },
  ];
  for (let round = 0; round < plan.meRounds; round++) {
    log(`GET /me round ${round + 1}/${plan.meRounds}`);
    for (const { runs, url, headers } of round % 2 === 0 ? meLoads : [...meLoads].reverse()) {
      runs.push(await load(url, { connections: 64, seconds: plan.meSeconds, headers }));
    }
  }
  const mePeak = meMemory.stop();
  const quietPeak = quietMemory.stop();
  const basePeak = baseMemory.stop();
  await quiet.stop();
  const meRps = median(me.map((run) => run.rps));
  const quietRps = median(meQuiet.map((run) => run.rps));
  const baseRps = median(base.map((run) => run.rps));
  const meRatio = pairedRatio(rates(me), rates(base));
  const quietRatio = pairedRatio(rates(meQuiet), rates(base));
  const meP99 = median(me.map((run) => run.p99));
  const baseP99 = median(base.map((run) => run.p99));
  const p99Ratio = pairedRatio(
    me.map((run) => run.p99),
    base.map((run) => run.p99),
  );
  record.me = {
    runs: me,
    warn: meQuiet,
    baseline: base,
    peakMb: { info: mePeak, warn: quietPeak, baseline: basePeak },
    ratioOfMedians: { info: meRps / baseRps, warn: quietRps / baseRps, p99: meP99 / baseP99 },
  };
  rows.push({
    figure: "1. GET /me req/s, 64 connections (LOG_LEVEL=info, as shipped)",
    value: meRps.toFixed(0),
    reference: `${baseRps.toFixed(0)} (bare Fastify)`,
    ratio: pct(meRatio),
    // Issue 34's target (issue 13's was 60 %), now that servers and load generator have a core each.
    target: ">= 75%",
    holds: meRatio >= 0.75,
  });
  rows.push({
    figure: "1. GET /me req/s, 64 connections (LOG_LEVEL=warn)",
    value: quietRps.toFixed(0),
    reference: `${baseRps.toFixed(0)} (bare Fastify)`,
    ratio: pct(quietRatio),
    target: ">= 90%",
    holds: quietRatio >= 0.9,
  });
  rows.push({
    figure: "1. GET /me p99 latency, 64 connections",
    value: `${meP99.toFixed(2)} ms`,
    reference: `${baseP99.toFixed(2)} ms (bare Fastify)`,
    ratio: `${p99Ratio.toFixed(2)}x`,
    target: "<= 1.5x",
    holds: p99Ratio <= 1.5,
  });
  // The same requests with and without the access line: the difference in time per request is what a
  // line costs (the server is saturated in both, so time per request is the inverse of the rate).
  rows.push({
    figure: "1. access-log line, cost per request",
    value: `${((1 / meRps - 1 / quietRps) * 1e6).toFixed(1)} us`,
    reference: `${((1 / quietRps) * 1e6).toFixed(1)} us per request at warn`,
    ratio: "",
    target: "(reported)",
    holds: true,
  });

  await measureClients(service, baseline, join(work, "small.db"));

  await measureCodeExchanges(smallDb, baseline);

  // 2: POST /auth/token against bare Argon2id verifies with the same parallelism, alternating.
  // CPU time per login as well: what the service spends beyond the hash does not drift with the
  // machine's speed the way rates do, and it is what takes cores from hashing.
  const logins: Load[] = [];
  const ceilings: Ceiling[] = [];
  const loginCpu: { process: number; eventLoop: number; loadGenerator: number }[] = [];
  const servicePid = service.process.pid as number;
  for (let round = 0; round < plan.loginRounds; round++) {
    log(`POST /auth/token round ${round + 1}/${plan.loginRounds}`);
    // The ceiling goes first in every other round, as GET /me's loads alternate above.
    const ceilingFirst = round % 2 === 1;
    if (ceilingFirst) ceilings.push(await hashCeiling(LOGIN_CONNECTIONS, plan.hashSeconds));
    const before = cpuTimes(servicePid);
    const generatorBefore = process.cpuUsage();
    const run = await load(`${service.url}/auth/token`, {
      connections: LOGIN_CONNECTIONS,
      method: "POST",
      body: loginBody,
      headers: formHeaders,
    });
    const after = cpuTimes(servicePid);
    const generator = process.cpuUsage(generatorBefore);
    logins.push(run);
    loginCpu.push({
      process: (after.process - before.process) / run.served,
      eventLoop: (after.mainThread - before.mainThread) / run.served,
      // autocannon runs in this process, on its own core when the run is pinned (on the service's otherwise).
      loadGenerator: (generator.user + generator.system) / 1000 / run.served,
    });
    if (!ceilingFirst) ceilings.push(await hashCeiling(LOGIN_CONNECTIONS, plan.hashSeconds));
  }
  const loginRps = median(logins.map((run) => run.rps));
  const ceiling = median(ceilings.map((run) => run.perSecond));
  const loginRatio = pairedRatio(
    rates(logins),
    ceilings.map((run) => run.perSecond),
  );
  record.login = { runs: logins, ceilings, cpuMsPerLogin: loginCpu, ratioOfMedians: loginRps / ceiling };
  rows.push({
    figure: `2. POST /auth/token req/s, ${LOGIN_CONNECTIONS} connections`,
    value: loginRps.toFixed(1),
    reference: `${ceiling.toFixed(1)} (bare Argon2id verifies/s)`,
    ratio: pct(loginRatio),
    target: ">= 90%",
    holds: loginRatio >= 0.9,
  });
  const processCpu = median(loginCpu.map((cpu) => cpu.process));
  const verifyCpu = median(ceilings.map((run) => run.cpuMsPerVerify));
  rows.push({
    figure: "2. CPU per login (whole process; event loop; load generator)",
    value: `${processCpu.toFixed(2)} ms; ${median(loginCpu.map((cpu) => cpu.eventLoop)).toFixed(2)} ms; ${median(loginCpu.map((cpu) => cpu.loadGenerator)).toFixed(2)} ms`,
    reference: `${verifyCpu.toFixed(2)} ms per bare verify`,
    ratio: pct(verifyCpu / processCpu),
    target: "(reported)",
    holds: true,
  });

  // 3 and 4b: GET /me p99 while a login storm saturates hashing; peak memory meanwhile.
  log("login storm with GET /me alongside");
  const stormMemory = sampleMemory(service.process.pid as number);
  const [storm, meDuringStorm] = await Promise.all([
    load(`${service.url}/auth/token`, { connections: 32, method: "POST", body: loginBody, headers: formHeaders }),
    load(`${service.url}/me`, { connections: 8, headers: auth }),
  ]);
  const stormPeak = stormMemory.stop();
  record.storm = { storm, meDuringStorm };
  rows.push({
    figure: "3. GET /me p99 during a login storm",
    value: `${meDuringStorm.p99.toFixed(2)} ms`,
    reference: `${storm.rps.toFixed(1)} logins/s alongside`,
    ratio: "",
    target: "< 20 ms",
    holds: meDuringStorm.p99 < 20,
  });
  await measureOverload(smallDb);
  await measureMemory(smallDb);

  // The same in group 1's long-lived pair (the service had signed users up and in first); the target
  // is judged on fresh pairs (measureMemory).
  rows.push({
    figure: "4. peak RSS under the GET /me loads of group 1 (long-lived processes)",
    value: `${mePeak.toFixed(0)} MB`,
    reference: `${basePeak.toFixed(0)} MB (bare Fastify, same loads)`,
    ratio: `${mePeak >= basePeak ? "+" : ""}${(mePeak - basePeak).toFixed(0)} MB`,
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "4. peak RSS under the login storm",
    value: `${stormPeak.toFixed(0)} MB`,
    reference: "",
    ratio: "",
    target: "< 200 MB",
    holds: stormPeak < 200,
  });

  // 5: GET /me with many users in the database against the 10-user database, alternating.
  log(`seeding ${plan.bigUsers} users`);
  const seedStarted = performance.now();
  const hash = await createPasswordHasher().hash("seeded user password");
  await seedUsers(join(work, "big.db"), plan.bigUsers, hash);
  log(`seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
  // Both sides start fresh in every round, so neither carries the earlier loads' heap and log backlog,
  // and one process that happens to run slower than its twin (seen in single pairs kept for all
  // rounds: 79 % to 146 % between runs) weighs one round, not the figure.
  await service.stop();
  const bigDb = `sqlite:${join(work, "big.db")}`;
  const big: Load[] = [];
  const small: Load[] = [];
  for (let round = 0; round < plan.meRounds; round++) {
    log(`GET /me, ${plan.bigUsers} users against 10, round ${round + 1}/${plan.meRounds}`);
    // A B, then B A: whichever goes first in a round does not always go first.
    const sides = [
      { runs: big, database: bigDb },
      { runs: small, database: smallDb },
    ];
    if (round % 2 === 1) sides.reverse();
    for (const { runs, database } of sides) {
      const instance = await startService(database);
      const headers = { authorization: `Bearer ${await tokenFor(instance.url)}` };
      await load(`${instance.url}/me`, { connections: 64, seconds: 1, headers });
      runs.push(await load(`${instance.url}/me`, { connections: 64, seconds: plan.meSeconds, headers }));
      await instance.stop();
    }
  }
  const smallService = await startService(smallDb);
  const bigRps = median(big.map((run) => run.rps));
  const smallRps = median(small.map((run) => run.rps));
  const bigRatio = pairedRatio(rates(big), rates(small));
  record.bigDatabase = { users: plan.bigUsers, big, small, ratioOfMedians: bigRps / smallRps };
  rows.push({
    figure: `5. GET /me req/s with ${plan.bigUsers.toLocaleString("en")} users`,
    value: bigRps.toFixed(0),
    reference: `${smallRps.toFixed(0)} (10 users)`,
    ratio: pct(bigRatio),
    target: ">= 95%",
    holds: bigRatio >= 0.95,
  });

  // 7: timing enumeration, sequential and interleaved: unknown e-mail against wrong password.
  log(`timing: ${plan.timingAttempts} interleaved attempts each`);
  const unknown: number[] = [];
  const wrong: number[] = [];
  const attempt = async (username: string) => {
    const started = performance.now();
    const response = await fetch(`${smallService.url}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ username, password: "not the password" }),
    });
    await response.arrayBuffer();
    if (response.status !== 401) throw new Error(`expected 401, got ${response.status}`);
    return performance.now() - started;
  };
  for (let i = 0; i < plan.timingAttempts; i++) {
    if (i % 2 === 0) {
      unknown.push(await attempt(`nobody${i}@example.com`));
      wrong.push(await attempt(EMAIL));
    } else {
      wrong.push(await attempt(EMAIL));
      unknown.push(await attempt(`nobody${i}@example.com`));
    }
  }
  const unknownMedian = median(unknown);
  const wrongMedian = median(wrong);
  const difference = (unknownMedian - wrongMedian) / wrongMedian;
  record.timing = { unknownMedian, wrongMedian, difference };
  rows.push({
    figure: "7. login median: unknown e-mail vs wrong password",
    value: `${unknownMedian.toFixed(2)} ms`,
    reference: `${wrongMedian.toFixed(2)} ms`,
    ratio: `${(difference * 100).toFixed(2)}%`,
    target: "|diff| < 5%",
    holds: Math.abs(difference) < 0.05,
  });

  await smallService.stop();
  await baseline.stop();

  // 6: time from spawn to the first answered request, median of several starts, alternating with the
  // bare ceiling's. The ceiling is bare Fastify as its users write and start it; the service is
  // bundled and uses Node's compile cache, so the same bare server bundled and started that way is
  // reported beside it.
  const bundledBaseline = await bundleBaseline(work);
  const startups: number[] = [];
  const baseStartups: number[] = [];
  const bundledStartups: number[] = [];
  for (let i = 0; i < plan.starts; i++) {
    startups.push(await timeToFirstAnswer(SERVICE, "/healthz", serviceEnv(smallDb)));
    baseStartups.push(await timeToFirstAnswer("bench/baseline.ts", "/me", {}));
    bundledStartups.push(await timeToFirstAnswer(bundledBaseline, "/me", {}));
  }
  // The README's own command for a restart (the bundle already built, as after any first start),
  // against the bare server started through npm as well: both pay npm's own start.
  const npmStartups: number[] = [];
  const npmBaseStartups: number[] = [];
  for (let i = 0; i < plan.starts; i++) {
    npmStartups.push(
      await timeToFirstAnswer(
        { command: "npm", args: ["start", "--silent"], cwd: ROOT },
        "/healthz",
        serviceEnv(smallDb),
      ),
    );
    npmBaseStartups.push(
      await timeToFirstAnswer({ command: "npm", args: ["run", "--silent", "bench:bare"], cwd: ROOT }, "/me", {}),
    );
  }
  const startup = median(startups);
  const baseStartup = median(baseStartups);
  const bundledStartup = median(bundledStartups);
  const npmStartup = median(npmStartups);
  const npmBaseStartup = median(npmBaseStartups);
  record.startup = {
    service: startups,
    baseline: baseStartups,
    bundledBaseline: bundledStartups,
    npmStart: npmStartups,
    npmBaseline: npmBaseStartups,
  };
  rows.push({
    figure: "6. `npm start` (a restart) to first answered request",
    value: `${npmStartup.toFixed(0)} ms`,
    reference: `${npmBaseStartup.toFixed(0)} ms (bare Fastify through \`npm run\`), medians of ${plan.starts}`,
    ratio: `${(npmStartup / npmBaseStartup).toFixed(2)}x`,
    target: "<= 1.5x",
    holds: npmStartup <= 1.5 * npmBaseStartup,
  });
  rows.push({
    figure: "6. process start to first answered request",
    value: `${startup.toFixed(0)} ms`,
    reference: `${baseStartup.toFixed(0)} ms (bare Fastify), medians of ${plan.starts}`,
    ratio: `${(startup / baseStartup).toFixed(2)}x`,
    target: "<= 1.5x",
    holds: startup <= 1.5 * baseStartup,
  });
  rows.push({
    figure: "6. the same, against bare Fastify bundled and started like the service",
    value: `${startup.toFixed(0)} ms`,
    reference: `${bundledStartup.toFixed(0)} ms (bare Fastify, esbuild bundle, compile cache)`,
    ratio: `${(startup / bundledStartup).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });

  if (postgresUrl) await measurePostgres(postgresUrl, meRps, loginRps);
  await measureDpop(smallDb);
  await measureDevice(smallDb);
  await measureConsole(smallDb);
  await measurePages(smallDb);

  rows.sort((a, b) => a.figure.localeCompare(b.figure, "en", { numeric: true }));
  printTable();
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/latest.json"), `${JSON.stringify({ ...record, rows }, null, 2)}\n`);
}

/**
 * 9: full code exchanges (issue 24): a confidential first-party app's authorization request with a
 * live browser session (GET /oauth/authorize with PKCE, answered 303 with a code), then its token
 * request (authorization_code: client authentication, the code redeemed once, the verifier checked,
 * an access token and an RS256 ID token signed). Each connection runs the two in turn. An instance
 * of its own with an ID-token key (OpenID Connect is off without one), against bare Fastify's
 * GET /me and against the peer (oidc-provider, the same app registered with the same id and secret,
 * GET /auth then POST /token, its sessions opened through its sign-in and consent pages) in the same
 * rounds, alternating (each round's browser sessions are opened before its load, outside the timed
 * part). Every token answer must hold an access token and an ID token. Reported; no target was set.
 */
async function measureCodeExchanges(databaseUrl: string, baseline: Child): Promise<void> {
  const codeService = await startCodeService(databaseUrl);
  const peer = await startPeerCodeService(codeService.client);
  const exchanges: Exchanges[] = [];
  const peerExchanges: Exchanges[] = [];
  const exchangeBase: Load[] = [];
  // A warm-up of the peer, cold here where the service has answered sign-ins.
  await codeExchanges(peer, await peer.browserSessions(-1, 4));
  for (let round = 0; round < plan.rounds; round++) {
    log(`code exchange round ${round + 1}/${plan.rounds}`);
    const order = [
      async () =>
        exchanges.push(await codeExchanges(codeService, await codeService.browserSessions(round, CODE_USERS))),
      async () => peerExchanges.push(await codeExchanges(peer, await peer.browserSessions(round, CODE_USERS))),
      async () => exchangeBase.push(await load(`${baseline.url}/me`, { connections: 64 })),
    ];
    for (const run of round % 2 === 0 ? order : order.reverse()) await run();
  }
  await codeService.stop();
  await peer.stop();
  const exchangeRates = exchanges.map((run) => run.rps);
  const peerRates = peerExchanges.map((run) => run.rps);
  const exchangeRatio = pairedRatio(exchangeRates, rates(exchangeBase));
  const peerRatio = pairedRatio(exchangeRates, peerRates);
  record.codeExchanges = {
    runs: exchanges,
    baseline: exchangeBase,
    peer: { name: "oidc-provider", version: peerVersion(), runs: peerExchanges, serviceRatio: peerRatio },
  };
  rows.push({
    figure: "9. full code exchanges/s (authorize with a browser session, then the token request), 64 connections",
    value: median(exchangeRates).toFixed(0),
    reference: `${median(rates(exchangeBase)).toFixed(0)} (bare Fastify GET /me)`,
    ratio: pct(exchangeRatio),
    target: "(reported)",
    holds: exchanges.every((run) => run.failures === 0),
  });
  rows.push({
    figure: `9. the service's full code exchanges/s against oidc-provider ${peerVersion()}'s, 64 connections`,
    value: median(exchangeRates).toFixed(0),
    reference: `${median(peerRates).toFixed(0)} (oidc-provider, same exchanges; ${peerExchanges.reduce((sum, run) => sum + run.failures, 0)} failures)`,
    ratio: `${peerRatio.toFixed(2)}x`,
    target: "(reported)",
    holds: [...exchanges, ...peerExchanges].every((run) => run.failures === 0),
  });
  const cpuPerExchange = median(exchanges.map((run) => run.cpuMs));
  const peerCpuPerExchange = median(peerExchanges.map((run) => run.cpuMs));
  rows.push({
    figure: "9. server CPU per full code exchange, the service against oidc-provider",
    value: `${cpuPerExchange.toFixed(2)} ms`,
    reference: `${peerCpuPerExchange.toFixed(2)} ms (oidc-provider)`,
    ratio: `${(peerCpuPerExchange / cpuPerExchange).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
}

/**
 * 4a (issue 34): peak RSS under the GET /me load in `plan.memoryPairs` pairs of fresh processes, the
 * bare server and the service as shipped, one after the other (the first of a pair alternating), each
 * sampled from its start through a warm-up and one load of group 1's shape. The target holds for each
 * pair on its own, not for a median: one process in a run that grows out of bounds is what a
 * deployment meets.
 */
async function measureMemory(databaseUrl: string): Promise<void> {
  const pairs: { serviceMb: number; bareMb: number }[] = [];
  const peakUnderLoad = async (server: "bare" | "service"): Promise<number> => {
    const child =
      server === "bare" ? await startChild("bench/baseline.ts", {}, work, "/me") : await startService(databaseUrl);
    if (server === "bare") children.push(child);
    const memory = sampleMemory(child.process.pid as number);
    const headers: Record<string, string> =
      server === "bare" ? {} : { authorization: `Bearer ${await tokenFor(child.url)}` };
    const runs = [
      await load(`${child.url}/me`, { connections: 64, seconds: 1, headers }),
      await load(`${child.url}/me`, { connections: 64, seconds: plan.meSeconds, headers }),
    ];
    const peak = memory.stop();
    await child.stop();
    if (runs.some((run) => run.errors > 0)) throw new Error(`GET /me on the ${server} server failed under load`);
    return peak;
  };
  for (let pair = 0; pair < plan.memoryPairs; pair++) {
    log(`peak RSS under GET /me, fresh pair ${pair + 1}/${plan.memoryPairs}`);
    const bareFirst = pair % 2 === 0;
    const first = await peakUnderLoad(bareFirst ? "bare" : "service");
    const second = await peakUnderLoad(bareFirst ? "service" : "bare");
    pairs.push(bareFirst ? { bareMb: first, serviceMb: second } : { serviceMb: first, bareMb: second });
  }
  record.memoryPairs = pairs;
  pairs.forEach(({ serviceMb, bareMb }, index) => {
    rows.push({
      figure: `4. peak RSS under the GET /me load, fresh pair ${index + 1} of ${pairs.length}`,
      value: `${serviceMb.toFixed(0)} MB`,
      reference: `${bareMb.toFixed(0)} MB (bare Fastify, same load)`,
      ratio: `${serviceMb >= bareMb ? "+" : ""}${(serviceMb - bareMb).toFixed(0)} MB`,
      target: "<= bare + 30 MB",
      holds: serviceMb - bareMb <= 30,
    });
  });
}

/** Whether a body is a client_credentials grant's answer: a bearer access token and its lifetime. */
function isTokenAnswer(body: string): boolean {
  try {
    const answer = JSON.parse(body) as { access_token?: unknown; token_type?: unknown; expires_in?: unknown };
    return (
      typeof answer.access_token === "string" &&
      answer.access_token.length > 0 &&
      String(answer.token_type).toLowerCase() === "bearer" &&
      typeof answer.expires_in === "number"
    );
  } catch {
    return false;
  }
}

/** A check that a body is an introspection's answer for an active token of `clientId`. */
function isActiveFor(clientId: string): (body: string) => boolean {
  return (body) => {
    try {
      const answer = JSON.parse(body) as { active?: unknown; client_id?: unknown };
      return answer.active === true && answer.client_id === clientId;
    } catch {
      return false;
    }
  };
}

/**
 * 8: OAuth clients. A confidential client's client_credentials grants (client authentication, an
 * RFC 9068 token signed) and introspections of such a token by the client (authentication, the
 * token verified, its client looked up), each against bare Fastify's GET /me in the same rounds,
 * alternating; beside them the same work's floor in bare Fastify, and the peer, panva's
 * oidc-provider (bench/peer-oidc-provider.ts), answering the same grant and the same introspection
 * (of a token it issued) for a client with the same id and secret. Every answer's body is checked.
 */
async function measureClients(service: Child, baseline: Child, databasePath: string): Promise<void> {
  const oauthClient = await registerBenchClient(databasePath);
  const clientAuth = {
    authorization: `Basic ${Buffer.from(`${oauthClient.id}:${oauthClient.secret}`).toString("base64")}`,
  };
  const grantBody = "grant_type=client_credentials";
  const isIntrospection = isActiveFor(oauthClient.id);
  /** A token for the client from `url`'s token endpoint, its answer checked. */
  const issue = async (url: string): Promise<string> => {
    const answer = await fetch(url, { method: "POST", headers: { ...formHeaders, ...clientAuth }, body: grantBody });
    const body = await answer.text();
    if (answer.status !== 200 || !isTokenAnswer(body)) throw new Error(`${url} answered ${answer.status}: ${body}`);
    return (JSON.parse(body) as { access_token: string }).access_token;
  };
  const introspectBody = new URLSearchParams({ token: await issue(`${service.url}/auth/token`) }).toString();
  // The same grants and introspections' least work in bare Fastify (bench/bare-client-endpoints.ts):
  // what the service's own layers cost on top of them, apart from what any such answer costs.
  const clientEnv = { BENCH_CLIENT_ID: oauthClient.id, BENCH_CLIENT_SECRET: oauthClient.secret };
  const bareClients = await startChild("bench/bare-client-endpoints.ts", clientEnv, work, "/healthz");
  children.push(bareClients);
  const peer = await startChild(
    "bench/peer-oidc-provider.ts",
    { ...clientEnv, NODE_ENV: "production" },
    work,
    "/.well-known/openid-configuration",
  );
  children.push(peer);
  await issue(`${bareClients.url}/token`);
  const peerIntrospectBody = new URLSearchParams({ token: await issue(`${peer.url}/token`) }).toString();
  for (const [url, body] of [
    [`${service.url}/auth/introspect`, introspectBody],
    [`${bareClients.url}/introspect`, introspectBody],
    [`${peer.url}/token/introspection`, peerIntrospectBody],
  ] as const) {
    const answer = await fetch(url, { method: "POST", headers: { ...formHeaders, ...clientAuth }, body });
    const text = await answer.text();
    if (answer.status !== 200 || !isIntrospection(text)) throw new Error(`${url} answered ${answer.status}: ${text}`);
  }
  interface ClientLoad {
    runs: Load[];
    /** The server's CPU (whole process, ms) per answer, in each round. */
    cpuMs: number[];
    server: Child;
    url: string;
    body?: string;
    check?: (body: string) => boolean;
  }
  const side = (server: Child, path: string, body?: string, check?: (body: string) => boolean): ClientLoad => ({
    runs: [],
    cpuMs: [],
    server,
    url: `${server.url}${path}`,
    ...(body === undefined ? {} : { body }),
    ...(check === undefined ? {} : { check }),
  });
  const grants = side(service, "/auth/token", grantBody, isTokenAnswer);
  const bareGrants = side(bareClients, "/token", grantBody, isTokenAnswer);
  const peerGrants = side(peer, "/token", grantBody, isTokenAnswer);
  const introspections = side(service, "/auth/introspect", introspectBody, isIntrospection);
  // The floor decodes the service's token: its claims name the same client.
  const bareIntrospections = side(bareClients, "/introspect", introspectBody, isIntrospection);
  const peerIntrospections = side(peer, "/token/introspection", peerIntrospectBody, isIntrospection);
  const clientBase = side(baseline, "/me");
  const clientLoads = [
    grants,
    bareGrants,
    peerGrants,
    introspections,
    bareIntrospections,
    peerIntrospections,
    clientBase,
  ];
  const options = ({ body, check }: ClientLoad, seconds = plan.seconds) =>
    body === undefined
      ? { connections: 64, seconds }
      : {
          connections: 64,
          seconds,
          method: "POST" as const,
          body,
          headers: { ...formHeaders, ...clientAuth },
          ...(check ? { check } : {}),
        };
  // Warm-ups: the bare servers and the peer start cold here, and the service is warm from group 1.
  for (const side of clientLoads) await load(side.url, options(side, 1));
  for (let round = 0; round < plan.rounds; round++) {
    log(`OAuth clients round ${round + 1}/${plan.rounds}`);
    for (const side of round % 2 === 0 ? clientLoads : [...clientLoads].reverse()) {
      const pid = side.server.process.pid as number;
      const before = cpuTimes(pid).process;
      const run = await load(side.url, options(side));
      side.cpuMs.push((cpuTimes(pid).process - before) / run.served);
      side.runs.push(run);
    }
  }
  await bareClients.stop();
  await peer.stop();
  const clientBaseRps = median(rates(clientBase.runs));
  const grantRatio = pairedRatio(rates(grants.runs), rates(clientBase.runs));
  const introspectionRatio = pairedRatio(rates(introspections.runs), rates(clientBase.runs));
  const peerRatios = {
    grants: pairedRatio(rates(grants.runs), rates(peerGrants.runs)),
    introspections: pairedRatio(rates(introspections.runs), rates(peerIntrospections.runs)),
  };
  const runsAndCpu = ({ runs, cpuMs }: ClientLoad) => ({ runs, cpuMsPerAnswer: cpuMs });
  record.oauthClients = {
    grants: runsAndCpu(grants),
    bareGrants: runsAndCpu(bareGrants),
    introspections: runsAndCpu(introspections),
    bareIntrospections: runsAndCpu(bareIntrospections),
    baseline: runsAndCpu(clientBase),
    peer: {
      name: "oidc-provider",
      version: peerVersion(),
      grants: runsAndCpu(peerGrants),
      introspections: runsAndCpu(peerIntrospections),
      // The service's rate as a multiple of the peer's, the median of the rounds' own ratios.
      serviceRatio: peerRatios,
    },
  };
  rows.push({
    figure: "8. client_credentials grants/s, 64 connections",
    value: median(rates(grants.runs)).toFixed(0),
    reference: `${clientBaseRps.toFixed(0)} (bare Fastify GET /me)`,
    ratio: pct(grantRatio),
    target: ">= 25%",
    holds: grantRatio >= 0.25 && grants.runs.every((run) => run.errors === 0),
  });
  rows.push({
    figure: "8. introspections/s of a client's token by a client, 64 connections",
    value: median(rates(introspections.runs)).toFixed(0),
    reference: `${clientBaseRps.toFixed(0)} (bare Fastify GET /me)`,
    ratio: pct(introspectionRatio),
    target: ">= 50%",
    holds: introspectionRatio >= 0.5 && introspections.runs.every((run) => run.errors === 0),
  });
  // The floors, and the service against them: the share of the ceiling lost to the service's own layers.
  for (const [what, served, floor] of [
    ["client_credentials grants", grants, bareGrants],
    ["introspections", introspections, bareIntrospections],
  ] as const) {
    rows.push({
      figure: `8. the same ${what}' least work in bare Fastify, 64 connections`,
      value: median(rates(floor.runs)).toFixed(0),
      reference: `${clientBaseRps.toFixed(0)} (bare Fastify GET /me)`,
      ratio: pct(pairedRatio(rates(floor.runs), rates(clientBase.runs))),
      target: "(reported)",
      holds: floor.runs.every((run) => run.errors === 0),
    });
    rows.push({
      figure: `8. the service's ${what} against that floor`,
      value: median(rates(served.runs)).toFixed(0),
      reference: `${median(rates(floor.runs)).toFixed(0)} (bare Fastify, same work)`,
      ratio: pct(pairedRatio(rates(served.runs), rates(floor.runs))),
      // Issue 34: at least 80 % of a bare server doing the same least work.
      target: ">= 80%",
      holds: pairedRatio(rates(served.runs), rates(floor.runs)) >= 0.8,
    });
  }
  // The peer: the service's rate as a multiple of oidc-provider's, and the server CPU per answer of
  // each (what each server spends, apart from the load generator).
  for (const [what, served, peered, ratio] of [
    ["client_credentials grants", grants, peerGrants, peerRatios.grants],
    ["introspections", introspections, peerIntrospections, peerRatios.introspections],
  ] as const) {
    rows.push({
      figure: `8. the service's ${what}/s against oidc-provider ${peerVersion()}'s, 64 connections`,
      value: median(rates(served.runs)).toFixed(0),
      reference: `${median(rates(peered.runs)).toFixed(0)} (oidc-provider, same requests)`,
      ratio: `${ratio.toFixed(2)}x`,
      target: ">= 3x",
      holds: ratio >= 3 && [...served.runs, ...peered.runs].every((run) => run.errors === 0),
    });
    rows.push({
      figure: `8. server CPU per answer of the ${what}, the service against oidc-provider`,
      value: `${(median(served.cpuMs) * 1000).toFixed(1)} us`,
      reference: `${(median(peered.cpuMs) * 1000).toFixed(1)} us (oidc-provider)`,
      ratio: `${(median(peered.cpuMs) / median(served.cpuMs)).toFixed(2)}x`,
      target: "(reported)",
      holds: true,
    });
  }
}

/** oidc-provider's version, as installed. */
function peerVersion(): string {
  return (
    JSON.parse(readFileSync(join(ROOT, "node_modules/oidc-provider/package.json"), "utf8")) as { version: string }
  ).version;
}

/**
 * 3, the login overload (issue 22): twice as many clients logging in at once as the hash queue may
 * hold (PASSWORD_HASH_QUEUE_LIMIT at its default, 100 per core). Each client logs in again as soon as
 * it is answered, or, answered 503, after the Retry-After it was given, as a well-behaved client
 * does; so the queue stays full. Meanwhile GET /me and refresh grants of another user (the storm's
 * own logins push its user's oldest sessions out) go on, and the queue's depth is read from the
 * metrics every 100 ms.
 */
async function measureOverload(databaseUrl: string): Promise<void> {
  log("login overload: more logins at once than the hash queue holds");
  const metricsPort = await freePort();
  const env = { ...serviceEnv(databaseUrl), METRICS_PORT: String(metricsPort) };
  const instance = await startChild(SERVICE, env, work, "/healthz");
  children.push(instance);
  const login = async (username: string) =>
    fetch(`${instance.url}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ username, password: PASSWORD }),
    });
  const tokens = async () => {
    const response = await login("user0@example.com");
    if (response.status !== 200) throw new Error(`login failed: ${response.status}`);
    return (await response.json()) as { access_token: string; refresh_token: string };
  };
  const { access_token } = await tokens();
  const refreshTokens = await Promise.all(Array.from({ length: 4 }, async () => (await tokens()).refresh_token));
  // The service's default queue limit is per core it sees (one when pinned), not per core of this process.
  const queueLimit = HASH_QUEUE_PER_CORE * SERVER_CORES;
  const clients = 2 * queueLimit;
  const until = performance.now() + plan.seconds * 1000;

  let depth = 0;
  const sampler = (async () => {
    while (performance.now() < until) {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      depth = Math.max(depth, Number(/^password_hash_queue_depth (\d+)$/m.exec(text)?.[1] ?? 0));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const accepted: number[] = [];
  const refused: number[] = [];
  const retryAfters = new Set<string>();
  const stormClient = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      const response = await login(EMAIL);
      await response.arrayBuffer();
      const ms = performance.now() - started;
      if (response.status === 200) accepted.push(ms);
      else if (response.status === 503) {
        refused.push(ms);
        const retryAfter = response.headers.get("retry-after") ?? "?";
        retryAfters.add(retryAfter);
        const wait = Math.min(Number(retryAfter) * 1000, until - performance.now());
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
      } else throw new Error(`login answered ${response.status} during the overload`);
    }
  };
  const refreshLoop = async (first: string): Promise<number[]> => {
    const times: number[] = [];
    let token = first;
    while (performance.now() < until) {
      const started = performance.now();
      const response = await fetch(`${instance.url}/auth/token`, {
        method: "POST",
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token }),
      });
      const body = (await response.json()) as { refresh_token: string };
      if (response.status !== 200) throw new Error(`refresh answered ${response.status} during the overload`);
      times.push(performance.now() - started);
      token = body.refresh_token;
    }
    return times;
  };
  const [me, ...refreshes] = await Promise.all([
    load(`${instance.url}/me`, { connections: 8, headers: { authorization: `Bearer ${access_token}` } }),
    ...refreshTokens.map(refreshLoop),
    ...Array.from({ length: clients }, stormClient),
    sampler,
  ]);
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const counted = Number(/^password_hash_queue_refusals_total\{route="\/auth\/token"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  await instance.stop();
  const meLoad = me as Load;
  const refreshTimes = (refreshes.slice(0, refreshTokens.length) as number[][]).flat();
  record.overload = {
    clients,
    queueLimit,
    deepestQueue: depth,
    accepted,
    refused,
    retryAfters: [...retryAfters],
    refusalsCounted: counted,
    me: meLoad,
    refreshTimes,
  };
  rows.push({
    figure: "3. login overload: logins answered 503 at once",
    value: `${refused.length} of ${refused.length + accepted.length}`,
    reference: `${clients} clients, queue limit ${queueLimit}, deepest seen ${depth}; Retry-After ${[...retryAfters].join(", ")} s`,
    ratio: pct(refused.length / (refused.length + accepted.length)),
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "3. login overload: p99 of the 503 answers",
    value: `${percentile(refused, 0.99).toFixed(2)} ms`,
    reference: `${percentile(accepted, 0.99).toFixed(0)} ms p99 of the ${accepted.length} accepted logins`,
    ratio: "",
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "3. login overload: GET /me p99 meanwhile",
    value: `${meLoad.p99.toFixed(2)} ms`,
    reference: `${meLoad.rps.toFixed(0)} req/s on 8 connections`,
    ratio: "",
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "3. login overload: refresh grant p99 meanwhile",
    value: `${percentile(refreshTimes, 0.99).toFixed(2)} ms`,
    reference: `${refreshTimes.length} refreshes on ${refreshTokens.length} chains`,
    ratio: "",
    target: "(reported)",
    holds: true,
  });
}

/** A command to start, in a directory: `npm start` in the project rather than a script under Node. */
interface Launch {
  command: string;
  args: readonly string[];
  cwd: string;
}

/**
 * Spawns a script (or a whole command line) and polls `path` until it answers; milliseconds from
 * spawn. The child is its own process group, so npm and the Node process it starts stop together.
 */
async function timeToFirstAnswer(
  script: string | readonly string[] | Launch,
  path: string,
  env: Record<string, string>,
): Promise<number> {
  const port = await freePort();
  const launch: Launch =
    typeof script === "object" && "command" in script
      ? script
      : { command: process.execPath, args: nodeArguments(script), cwd: work };
  const started = performance.now();
  const pinned = onServerCore(launch.command, launch.args);
  const child = spawn(pinned.command, pinned.args, {
    cwd: launch.cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? work, ...env, PORT: String(port) },
    stdio: "ignore",
    detached: true,
  });
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        if (response.ok) return performance.now() - started;
      } catch {}
      if (performance.now() - started > 10_000) throw new Error("the service did not answer within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-(child.pid as number), "SIGTERM");
    await exited;
  }
}

async function measurePostgres(url: string, sqliteMeRps: number, sqliteLoginRps: number): Promise<void> {
  const schema = `bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  try {
    const withSchema = `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const service = await startService(withSchema);
    const auth = { authorization: `Bearer ${await tokenFor(service.url)}` };
    log("PostgreSQL: GET /me and POST /auth/token");
    await load(`${service.url}/me`, { connections: 64, seconds: 1, headers: auth });
    const me: Load[] = [];
    const logins: Load[] = [];
    for (let round = 0; round < plan.rounds; round++) {
      me.push(await load(`${service.url}/me`, { connections: 64, headers: auth }));
      logins.push(
        await load(`${service.url}/auth/token`, {
          connections: LOGIN_CONNECTIONS,
          method: "POST",
          body: loginBody,
          headers: formHeaders,
        }),
      );
    }
    await service.stop();
    const meRps = median(me.map((run) => run.rps));
    const loginRps = median(logins.map((run) => run.rps));
    record.postgres = { me, logins };
    rows.push({
      figure: "PostgreSQL: GET /me req/s, 64 connections",
      value: meRps.toFixed(0),
      reference: `${sqliteMeRps.toFixed(0)} (SQLite)`,
      ratio: pct(meRps / sqliteMeRps),
      target: "(reported)",
      holds: true,
    });
    rows.push({
      figure: `PostgreSQL: POST /auth/token req/s, ${LOGIN_CONNECTIONS} connections`,
      value: loginRps.toFixed(1),
      reference: `${sqliteLoginRps.toFixed(1)} (SQLite)`,
      ratio: pct(loginRps / sqliteLoginRps),
      target: "(reported)",
      holds: true,
    });
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

/**
 * 10, DPoP (issue 36): GET /me with a DPoP-bound token and a proof per request against GET /me with
 * a bearer token, on one service at LOG_LEVEL=warn, alternating; the req/s ratio and the service's
 * CPU per request of each.
 */
async function measureDpop(databaseUrl: string): Promise<void> {
  const service = await startService(databaseUrl, "warn");
  const result = await measureDpopMe({
    serviceUrl: service.url,
    servicePid: service.process.pid as number,
    rounds: plan.meRounds,
    seconds: plan.meSeconds,
    warmupSeconds: quick ? 0 : 1,
    connections: 64,
    log,
    email: "dpop@example.com",
    password: PASSWORD,
  });
  await service.stop();
  record.dpop = result;
  const dpopRps = median(result.dpop.map((run) => run.rps));
  const bearerRps = median(result.bearer.map((run) => run.rps));
  const ratio = pairedRatio(
    result.dpop.map((run) => run.rps),
    result.bearer.map((run) => run.rps),
  );
  rows.push({
    figure: "10. GET /me req/s with a DPoP-bound token and a proof per request, 64 connections (LOG_LEVEL=warn)",
    value: dpopRps.toFixed(0),
    reference: `${bearerRps.toFixed(0)} (bearer GET /me, same service)`,
    ratio: pct(ratio),
    target: "(reported)",
    holds: [...result.dpop, ...result.bearer].every((run) => run.errors === 0),
  });
  const cpu = (runs: typeof result.dpop) =>
    `${median(runs.map((run) => run.cpuMs)).toFixed(3)} ms; ${median(runs.map((run) => run.eventLoopMs)).toFixed(3)} ms; ${median(runs.map((run) => run.generatorMs)).toFixed(3)} ms`;
  rows.push({
    figure: "10. CPU per DPoP GET /me (whole process; event loop; load generator, which signs the proofs)",
    value: cpu(result.dpop),
    reference: `${cpu(result.bearer)} (bearer)`,
    ratio: `${(median(result.dpop.map((run) => run.cpuMs)) / median(result.bearer.map((run) => run.cpuMs))).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
}

/**
 * 11 (issue 36): a device's poll answered authorization_pending against an introspection refused at
 * once (a wrong client secret), on one service as shipped with an ID-token key (the device grant is
 * part of OpenID Connect), alternating; the req/s ratio and the CPU per request of each.
 */
async function measureDevice(databaseUrl: string): Promise<void> {
  const path = databaseUrl.slice("sqlite:".length);
  const keyFile = join(work, "device-oidc-key.pem");
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  const deviceClientId = await registerDeviceClient(path);
  const client = await registerBenchClient(path);
  const service = await startChild(
    SERVICE,
    {
      ...serviceEnv(databaseUrl),
      OIDC_SIGNING_KEY_FILE: keyFile,
      DEVICE_POLL_INTERVAL_SECONDS: "1",
      DEVICE_CODE_LIFETIME_SECONDS: "3600",
    },
    work,
    "/healthz",
  );
  children.push(service);
  const result = await measureDevicePolls({
    serviceUrl: service.url,
    servicePid: service.process.pid as number,
    rounds: plan.rounds,
    seconds: plan.seconds,
    connections: 64,
    deviceClientId,
    client,
    codes: quick ? 4000 : 40_000,
    log,
  });
  await service.stop();
  record.devicePolls = result;
  const ratio = pairedRatio(
    result.polls.map((run) => run.rps),
    result.refusedIntrospections.map((run) => run.rps),
  );
  const slowDown = result.polls.reduce((sum, run) => sum + run.slowDown, 0);
  rows.push({
    figure: "11. device polls/s answered authorization_pending, 64 connections",
    value: median(result.polls.map((run) => run.rps)).toFixed(0),
    reference: `${median(result.refusedIntrospections.map((run) => run.rps)).toFixed(0)} (introspections refused at once, same service)`,
    ratio: pct(ratio),
    target: ">= 100%",
    holds:
      ratio >= 1 &&
      slowDown === 0 &&
      [...result.polls, ...result.refusedIntrospections].every((run) => run.unexpected === 0),
  });
  rows.push({
    figure: "11. CPU per device poll (whole process)",
    value: `${median(result.polls.map((run) => run.cpuMs)).toFixed(3)} ms`,
    reference: `${median(result.refusedIntrospections.map((run) => run.cpuMs)).toFixed(3)} ms (refused introspection)`,
    ratio: `${(median(result.polls.map((run) => run.cpuMs)) / median(result.refusedIntrospections.map((run) => run.cpuMs))).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
}

/**
 * 12 (issue 35): the admin console's time to first screen as a server cost (bench/console.ts: its page
 * and every file the page loads before it can draw, cold, over keep-alive HTTP), on the service as
 * shipped (the console on: SQLite, a generated OpenID Connect key, the console's client registered at
 * start); and GET /me on that service against the same service with ADMIN_CONSOLE=off, alternating in
 * the same rounds, with a batch of first screens in each round; and the start of each, alternating.
 */
async function measureConsole(databaseUrl: string): Promise<void> {
  const withConsole = await startService(databaseUrl);
  const withoutConsole = await startChild(
    SERVICE,
    { ...serviceEnv(databaseUrl), ADMIN_CONSOLE: "off" },
    work,
    "/healthz",
  );
  children.push(withoutConsole);
  if ((await fetch(`${withoutConsole.url}/admin/`)).status !== 404) throw new Error("ADMIN_CONSOLE=off serves /admin/");
  const onAuth = { authorization: `Bearer ${await tokenFor(withConsole.url)}` };
  const offAuth = { authorization: `Bearer ${await tokenFor(withoutConsole.url)}` };
  // Warm-ups: the service's first answers of each route, and the JIT, are no first screen of a user's.
  await firstScreens(withConsole.url, quick ? 2 : 20);
  await load(`${withConsole.url}/me`, { connections: 64, seconds: 1, headers: onAuth });
  await load(`${withoutConsole.url}/me`, { connections: 64, seconds: 1, headers: offAuth });
  const screenMs: number[] = [];
  let files: Awaited<ReturnType<typeof firstScreens>>["files"] = [];
  const on: Load[] = [];
  const off: Load[] = [];
  const sides = [
    { runs: on, url: `${withConsole.url}/me`, headers: onAuth },
    { runs: off, url: `${withoutConsole.url}/me`, headers: offAuth },
  ];
  for (let round = 0; round < plan.meRounds; round++) {
    log(`admin console: ${plan.consoleScreens} first screens, GET /me with and without it, round ${round + 1}`);
    const screens = await firstScreens(withConsole.url, plan.consoleScreens);
    screenMs.push(...screens.ms);
    files = screens.files;
    for (const { runs, url, headers } of round % 2 === 0 ? sides : [...sides].reverse())
      runs.push(await load(url, { connections: 64, seconds: plan.meSeconds, headers }));
  }
  await withConsole.stop();
  await withoutConsole.stop();
  // Start-up with and without the console (its pages read, its client kept at listen), alternating.
  const starts = { on: [] as number[], off: [] as number[] };
  for (let i = 0; i < plan.starts; i++) {
    starts.on.push(await timeToFirstAnswer(SERVICE, "/healthz", serviceEnv(databaseUrl)));
    starts.off.push(await timeToFirstAnswer(SERVICE, "/healthz", { ...serviceEnv(databaseUrl), ADMIN_CONSOLE: "off" }));
  }
  const sum = (list: number[]) => list.reduce((total, value) => total + value, 0);
  const scriptsAndStyles = files.filter((file) => /\.(js|css)$/.test(file.path));
  const assetsGzip = sum(scriptsAndStyles.map((file) => file.gzipBytes));
  record.console = {
    firstScreenMs: screenMs,
    files,
    me: { on, off, ratioOfMedians: median(rates(on)) / median(rates(off)) },
    startMs: starts,
  };
  rows.push({
    figure: `12. admin console first screen, cold over keep-alive HTTP (page + ${files.length - 1} files)`,
    value: `${median(screenMs).toFixed(2)} ms median`,
    reference: `${percentile(screenMs, 0.99).toFixed(2)} ms p99, of ${screenMs.length}`,
    ratio: "",
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "12. admin console first screen, bytes",
    value: `${sum(files.map((file) => file.gzipBytes))} B gzipped`,
    reference: `${sum(files.map((file) => file.bytes))} B as served; JS + CSS ${assetsGzip} B gzipped`,
    ratio: "",
    target: "JS + CSS < 150 KB gzipped",
    holds: assetsGzip < 150 * 1024,
  });
  rows.push({
    figure: "12. GET /me req/s, 64 connections, console on (as shipped)",
    value: median(rates(on)).toFixed(0),
    reference: `${median(rates(off)).toFixed(0)} (ADMIN_CONSOLE=off)`,
    ratio: pct(pairedRatio(rates(on), rates(off))),
    target: "(reported)",
    holds: [...on, ...off].every((run) => run.errors === 0),
  });
  rows.push({
    figure: "12. GET /me p99 latency, console on",
    value: `${median(on.map((run) => run.p99)).toFixed(2)} ms`,
    reference: `${median(off.map((run) => run.p99)).toFixed(2)} ms (ADMIN_CONSOLE=off)`,
    ratio: `${pairedRatio(
      on.map((run) => run.p99),
      off.map((run) => run.p99),
    ).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
  rows.push({
    figure: "12. process start to first answered request, console on",
    value: `${median(starts.on).toFixed(0)} ms`,
    reference: `${median(starts.off).toFixed(0)} ms (ADMIN_CONSOLE=off), medians of ${plan.starts}`,
    ratio: `${(median(starts.on) / median(starts.off)).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
}

/**
 * Group 13 (issue 37): the sign-in page, rendered in the reader's language (German here, so the
 * language choice and the catalogue are on the path), against GET /me on the same instance, in
 * alternating rounds; the target is at least half GET /me's rate.
 */
async function measurePages(databaseUrl: string): Promise<void> {
  const service = await startService(databaseUrl);
  const auth = { authorization: `Bearer ${await tokenFor(service.url)}` };
  // As a browser asks for it: in German, and compressed if the service can.
  const german = { "accept-language": "de-DE,de;q=0.9,en;q=0.5", "accept-encoding": "gzip, deflate, br, zstd" };
  const page = await fetch(`${service.url}/sign-in`, { headers: german });
  const html = await page.text();
  if (page.status !== 200 || !html.includes('lang="de"')) throw new Error("GET /sign-in is not served in German");
  await load(`${service.url}/sign-in`, { connections: 64, seconds: 1, headers: german });
  await load(`${service.url}/me`, { connections: 64, seconds: 1, headers: auth });
  const pages: Load[] = [];
  const me: Load[] = [];
  // The server's own CPU per answer as well: autocannon shares the two cores, and a page's larger answer
  // (more headers, a cookie, 2.5 KB) costs the load generator more than GET /me's, so the rates alone
  // can measure the generator; the CPU per answer measures what the service can serve.
  const cpu = { pages: [] as number[], me: [] as number[] };
  const pid = service.process.pid as number;
  const sides = [
    { runs: pages, cpuMs: cpu.pages, url: `${service.url}/sign-in`, headers: german },
    { runs: me, cpuMs: cpu.me, url: `${service.url}/me`, headers: auth },
  ];
  for (let round = 0; round < plan.meRounds; round++) {
    log(`sign-in page and GET /me, round ${round + 1}/${plan.meRounds}`);
    for (const { runs, cpuMs, url, headers } of round % 2 === 0 ? sides : [...sides].reverse()) {
      const before = cpuTimes(pid).process;
      const run = await load(url, { connections: 64, seconds: plan.meSeconds, headers });
      cpuMs.push((cpuTimes(pid).process - before) / run.served);
      runs.push(run);
    }
  }
  await service.stop();
  record.pages = { signIn: pages, me, cpuMsPerAnswer: cpu, bytes: Buffer.byteLength(html) };
  const capacity = median(cpu.me) / median(cpu.pages);
  rows.push({
    figure: "13. server CPU per answer: GET /sign-in (German, compressed) against GET /me",
    value: `${(median(cpu.pages) * 1000).toFixed(1)} us`,
    reference: `${(median(cpu.me) * 1000).toFixed(1)} us (GET /me)`,
    ratio: pct(capacity),
    target: ">= 50% (the rate it allows)",
    holds: capacity >= 0.5,
  });
  await measureMailCodeGrant(databaseUrl);
  rows.push({
    figure: "13. GET /sign-in req/s (German, 64 connections)",
    value: median(rates(pages)).toFixed(0),
    reference: `${median(rates(me)).toFixed(0)} (GET /me, same instance)`,
    ratio: pct(pairedRatio(rates(pages), rates(me))),
    target: ">= 50% of GET /me",
    holds: pairedRatio(rates(pages), rates(me)) >= 0.5 && [...pages, ...me].every((run) => run.errors === 0),
  });
}

/** The mail sign-ins' codes, read back from the file transport's .eml files: attempt id -> code. */
async function mailedCodes(folder: string, expected: number): Promise<Map<string, string>> {
  const codes = new Map<string, string>();
  const seen = new Set<string>();
  for (let waited = 0; codes.size < expected; waited += 100) {
    if (waited > 60_000) throw new Error(`only ${codes.size} of ${expected} sign-in mails arrived`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const name of existsSync(folder) ? readdirSync(folder) : []) {
      if (seen.has(name) || !name.endsWith(".eml")) continue;
      seen.add(name);
      const { text = "" } = await simpleParser(readFileSync(join(folder, name)));
      const attempt = /\?mail_sign_in=([\w-]+)#/.exec(text)?.[1];
      const code = /: (\d{6})$/m.exec(text)?.[1];
      if (attempt && code) codes.set(attempt, code);
    }
  }
  return codes;
}

/**
 * Group 13, second half: the CPU of one mail-code grant (a code typed on the sign-in page, redeemed at
 * the token endpoint: the attempt's conditional update, the session, the tokens, the audit event), against
 * the CPU of one refresh of the tokens it gave (the same token work without the attempt), both per request
 * of the whole service process, N requests each, 8 at a time.
 */
async function measureMailCodeGrant(databaseUrl: string): Promise<void> {
  const folder = join(work, "mail-sign-in");
  const service = await startChild(
    SERVICE,
    // One user signs in `count` times: the session cap (50) would end the first sessions before their refresh.
    {
      ...serviceEnv(databaseUrl),
      PASSWORDLESS_MAIL: "both",
      MAIL_URL: `file:${folder}`,
      MAX_SESSIONS_PER_USER: "10000",
    },
    work,
    "/healthz",
  );
  children.push(service);
  await tokenFor(service.url);
  const count = quick ? 50 : 400;
  const attempts: string[] = [];
  for (let i = 0; i < count; i++) {
    const asked = await fetch(`${service.url}/auth/mail-sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: EMAIL }),
    });
    if (asked.status !== 202) throw new Error(`POST /auth/mail-sign-in: ${asked.status}`);
    attempts.push(((await asked.json()) as { attempt: string }).attempt);
  }
  const codes = await mailedCodes(folder, count);
  const pid = service.process.pid as number;
  const inBatches = async (work: (index: number) => Promise<void>) => {
    const before = cpuTimes(pid).process;
    for (let i = 0; i < count; i += 8)
      await Promise.all(Array.from({ length: Math.min(8, count - i) }, (_, j) => work(i + j)));
    return (cpuTimes(pid).process - before) / count;
  };
  const refreshTokens: string[] = [];
  const mailCodeMs = await inBatches(async (index) => {
    const attempt = attempts[index] as string;
    const answer = await fetch(`${service.url}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "urn:user-token-service:grant-type:mail-code",
        attempt,
        code: codes.get(attempt) ?? "",
      }),
    });
    if (answer.status !== 200) throw new Error(`mail-code grant: ${answer.status} ${await answer.text()}`);
    refreshTokens[index] = ((await answer.json()) as { refresh_token: string }).refresh_token;
  });
  const refreshMs = await inBatches(async (index) => {
    const answer = await fetch(`${service.url}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshTokens[index] as string }),
    });
    if (answer.status !== 200) throw new Error(`refresh grant: ${answer.status}`);
  });
  await service.stop();
  record.mailCode = { count, cpuMsPerGrant: mailCodeMs, cpuMsPerRefresh: refreshMs };
  rows.push({
    figure: `13. CPU per mail-code grant (whole process, ${count} grants, 8 at a time)`,
    value: `${mailCodeMs.toFixed(2)} ms`,
    reference: `${refreshMs.toFixed(2)} ms per refresh of its tokens`,
    ratio: `${(mailCodeMs / refreshMs).toFixed(2)}x`,
    target: "(reported)",
    holds: true,
  });
}

function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

function printTable(): void {
  const header: Row = {
    figure: "figure",
    value: "value",
    reference: "ceiling / reference",
    ratio: "ratio",
    target: "target",
    holds: true,
  };
  const cells = (row: Row) => [
    row.figure,
    row.value,
    row.reference,
    row.ratio,
    row.target,
    row === header ? "result" : row.target === "(reported)" ? "-" : row.holds ? "holds" : "MISSED",
  ];
  const widths = cells(header).map((_, i) =>
    Math.max(...[header, ...rows].map((row) => (cells(row)[i] as string).length)),
  );
  const line = (row: Row) =>
    `| ${cells(row)
      .map((cell, i) => cell.padEnd(widths[i] as number))
      .join(" | ")} |`;
  process.stdout.write(`\n${quick ? "QUICK RUN: the figures prove the benchmark runs, not the targets.\n" : ""}`);
  process.stdout.write(
    `Node ${process.version}, ${plan.rounds} round(s) of ${plan.seconds} s per load (GET /me against the ceiling: ${plan.meRounds} of ${plan.meSeconds} s, alternating order; logins: ${plan.loginRounds}); values are medians, ratios the median of the rounds' own ratios, p99 from each answer's own time.\n\n`,
  );
  process.stdout.write(`${line(header)}\n|${widths.map((width) => "-".repeat(width + 2)).join("|")}|\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
}

try {
  await main();
} finally {
  await Promise.all(children.map((child) => child.stop()));
  rmSync(work, { recursive: true, force: true });
}
