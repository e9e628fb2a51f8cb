// The process: the only file that binds a port or handles signals. It reads
// the environment (env.ts), validates the configuration once, opens the
// stores and serves. On SIGTERM it drains: /readyz answers 503 at once while
// requests are still served for SHUTDOWN_DELAY_MS (so a load balancer takes
// the instance out first), every answer from then on carries Connection:
// close; then it stops accepting, finishes the requests in flight, closes its
// pools and exits 0, or exits 1 if all that takes longer than
// SHUTDOWN_TIMEOUT_MS. SIGINT (Ctrl-C at a terminal) skips the delay, and so
// does a second signal.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { FastifyInstance } from "fastify";
import type { DestinationStream } from "pino";
import { buildApp } from "./app.ts";
import { loadCommonPasswords } from "./auth/password-policy.ts";
import { createPasswordHasher } from "./auth/passwords.ts";
import type { CounterStore } from "./auth/rate-limits.ts";
import { type Config, loadConfig } from "./config.ts";
import { readEnvironment } from "./env.ts";
import { ConfigError } from "./errors.ts";
import { BatchedLogDestination } from "./log-destination.ts";
import { OIDC_WITHOUT_PUBLIC_URL } from "./oidc/settings.ts";
import type { Metrics } from "./operations/metrics.ts";
import { openStore } from "./store/open.ts";
import type { UserStore } from "./store/store.ts";
import { ensureFirstAdmin } from "./users/first-admin.ts";

function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

/**
 * Where log lines go. For a person at a terminal: readable, coloured lines. Otherwise JSON lines
 * gathered into 4 KiB writes, flushed at least every 200 ms (log-destination.ts).
 */
async function logDestination(): Promise<{ stream: DestinationStream; flush(): void }> {
  if (process.stdout.isTTY) {
    // Loaded only for a person at a terminal: a deployment never pays for it.
    const { default: pretty } = await import("pino-pretty");
    return {
      stream: pretty({ colorize: true, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }),
      flush() {},
    };
  }
  const stream = new BatchedLogDestination(1);
  return { stream, flush: () => stream.flush() };
}

/** GET /metrics in Prometheus' text format, on the metrics address only. */
async function serveMetrics(metrics: Metrics, address: { host: string; port: number }): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== "GET" || request.url !== "/metrics") {
      response.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
      return;
    }
    metrics.exposition().then(
      (text) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      () => response.writeHead(500, { "content-type": "application/json" }).end('{"detail":"Internal Server Error"}'),
    );
  });
  server.listen(address.port, address.host);
  await once(server, "listening");
  return server;
}

async function openStores(config: Config): Promise<{ store: UserStore; counters?: CounterStore }> {
  let store: UserStore;
  try {
    store = await openStore(config.database);
  } catch (error) {
    fail(`cannot open the database named by DATABASE_URL: ${(error as Error).message}`, 1);
  }
  if (!config.redis) return { store };
  // Loaded only when REDIS_URL is set: a single instance never pays for the Redis client's memory.
  const { RedisCounterStore } = await import("./store/redis.ts");
  const counters = new RedisCounterStore(config.redis);
  try {
    await counters.ready(Math.max(config.redis.timeoutMs, 2000));
  } catch {
    await counters.close();
    await store.close();
    fail("cannot reach Redis at REDIS_URL", 1);
  }
  return { store, counters };
}

/** Issue 35: one line that tells a newcomer where the admin console, the docs and the sign-in page are. */
function logWhereToGo(app: FastifyInstance, config: Config): void {
  const address = app.server.address();
  const listening =
    address !== null && typeof address === "object"
      ? `http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}`
      : `http://${config.host}:${config.port}`;
  const base = config.publicUrl ?? listening;
  const consoleOn = config.adminConsole?.enabled === true && (config.oidcSigningKeys?.length ?? 0) > 0;
  app.log.info(
    { ...(consoleOn ? { adminConsole: `${base}/admin/` } : {}), docs: `${base}/docs`, signIn: `${base}/sign-in` },
    consoleOn
      ? `admin console at ${base}/admin/, API docs at ${base}/docs, sign-in page at ${base}/sign-in`
      : `API docs at ${base}/docs, sign-in page at ${base}/sign-in`,
  );
}

async function main(): Promise<void> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(readEnvironment());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    fail(`configuration error: ${error.message}`, 2);
  }
  const { config, notices } = loaded;
  const { store, counters } = await openStores(config);
  const logs = await logDestination();
  // Loaded only when METRICS_PORT is set: prom-client costs start-up time and memory.
  const metrics = config.metrics ? (await import("./operations/metrics.ts")).createMetrics() : undefined;
  const draining = new AbortController();
  const app = await buildApp({
    config,
    store,
    draining: draining.signal,
    logStream: logs.stream,
    ...(counters ? { counters } : {}),
    ...(metrics ? { metrics } : {}),
  });
  const metricsServer = metrics && config.metrics ? await serveMetrics(metrics, config.metrics) : undefined;
  if (metricsServer) app.log.info({ address: metricsServer.address() }, "metrics served on their own port at /metrics");
  for (const notice of notices) {
    if (notice === OIDC_WITHOUT_PUBLIC_URL) app.log.warn(notice);
    else app.log.info(notice);
  }
  if (!config.rateLimit.enabled) app.log.warn("RATE_LIMIT is off: logins and sign-ups are not rate limited");
  if (config.firstAdmin) {
    const outcome = await ensureFirstAdmin(store, createPasswordHasher(config.argon2), config.firstAdmin);
    app.log.info({ email: config.firstAdmin.email, outcome }, "first admin from FIRST_ADMIN_EMAIL");
  }

  let endDelay: (() => void) | undefined;
  const stop = async (signal: string) => {
    if (draining.signal.aborted) {
      endDelay?.();
      return;
    }
    draining.abort();
    const deadline = setTimeout(() => {
      app.log.error({ timeoutMs: config.shutdownTimeoutMs }, "shutdown took too long; exiting");
      logs.flush();
      process.exit(1);
    }, config.shutdownTimeoutMs);
    deadline.unref();
    const delayMs = signal === "SIGTERM" ? config.connections.shutdownDelayMs : 0;
    app.log.info({ signal, delayMs }, "draining: /readyz answers 503; still serving until the listener closes");
    logs.flush();
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    app.log.info("closing the listener; finishing the requests in flight");
    // close() stops accepting and closes the connections idle at that moment; the others end after
    // their current answer, which carries Connection: close. A response whose headers were sent before
    // the drain began cannot say so; its connection is closed here once it is idle again.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
    await app.close();
    clearInterval(sweep);
    metricsServer?.close();
    await Promise.all([store.close(), counters?.close()]);
    app.log.info("stopped");
    logs.flush();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  await app.listen({ host: config.host, port: config.port, backlog: config.connections.listenBacklog });
  logWhereToGo(app, config);
  // Unpacked once the service answers, so that neither start-up nor the first sign-up waits for it.
  if (config.passwordListCheck) setTimeout(loadCommonPasswords, 1000).unref();
}

await main();
