// The server's settings: where it listens and is reached from, its logs, who
// may call it from a browser or through a proxy, and how it treats slow
// clients, connection storms and the drain at shutdown (issue 15). Declared
// here, beside the instance they configure; config.ts composes them.
import { ConfigError } from "../errors.ts";
import { type Env, integer, parseBaseUrl, section, setting, text } from "../settings/declare.ts";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * How the HTTP listener treats connections. Node enforces the two receive timeouts by sweeping the
 * connections that are part-way through a request every `checkIntervalMs`, so a limit is applied
 * between its value and its value plus that interval.
 */
export interface ConnectionConfig {
  /** From a request's first byte to the end of its headers; then 408 and the connection closes. */
  headersTimeoutMs: number;
  /** From a request's first byte to the end of its body; then 408 and the connection closes. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: number;
  /** How often Node checks the two receive timeouts (derived, not a setting). */
  checkIntervalMs: number;
  /** The listen(2) backlog: connections the kernel completes and queues until the process accepts them. */
  listenBacklog: number;
  /** On SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes. */
  shutdownDelayMs: number;
}

export interface ServerSettings {
  host: string;
  port: number;
  publicUrl?: string;
  /** The base of links in mails: PUBLIC_URL, else the listen address as a person at this machine would type it. */
  linkBase: string;
  logLevel: LogLevel;
  trustProxy: boolean | number | string[];
  corsOrigins: string[];
  shutdownTimeoutMs: number;
  connections: ConnectionConfig;
}

const HOST = text({ name: "HOST", fallback: "127.0.0.1", default: "`127.0.0.1`", meaning: "Interface to listen on." });

const PORT = setting({
  name: "PORT",
  fallback: "8000",
  default: "`8000`",
  meaning: "Port, 0-65535 (0 picks a free one).",
  parse(raw, name) {
    const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(port >= 0 && port <= 65535))
      throw new ConfigError(name, `must be a whole number from 0 to 65535, got "${raw}"`);
    return port;
  },
});

const PUBLIC_URL = setting({
  name: "PUBLIC_URL",
  default: "unset",
  meaning:
    "The absolute `http(s)` URL clients reach the service at (`https://auth.example.com`; no query or fragment, " +
    "and a trailing slash is dropped). It is the base of the endpoint URLs in the RFC 8414 metadata, of every " +
    "link in a mail and of `MAIL_FROM`'s default domain; the tokens' declared issuer (required of every token, " +
    "see `TOKEN_ISSUER`); its host is the passkeys' relying party id and its origin the only origin a passkey " +
    "ceremony may come from; on SQLite it also turns OpenID Connect on (see `OIDC_SIGNING_KEY_FILE`). Unset: " +
    "the listen address (`http://HOST:PORT`) stands in for links, metadata and mails, the passkeys' relying " +
    "party is `localhost` on the listen port, and tokens name the listen address as their issuer without it " +
    "being required, so that the instances of one deployment, and a restart on another port, accept each " +
    "other's tokens. Set it in production.",
  parse: parseBaseUrl,
});

const LOG_LEVEL = setting({
  name: "LOG_LEVEL",
  fallback: "info",
  default: "`info`",
  meaning:
    `${LOG_LEVELS.slice(0, -1)
      .map((level) => `\`${level}\``)
      .join(", ")} or \`${LOG_LEVELS.at(-1)}\`. ` +
    'Logs are JSON lines on stdout, one access line per request (`"msg":"request completed"`), every line ' +
    "with the request id. Every response carries `X-Request-Id`: the caller's own when it sends a plain one " +
    "(letters, digits, `._:-`, up to 128), a new UUID otherwise.",
  parse(raw, name): LogLevel {
    const level = raw.toLowerCase();
    if (!(LOG_LEVELS as readonly string[]).includes(level))
      throw new ConfigError(name, `must be one of ${LOG_LEVELS.join(", ")}, got "${raw}"`);
    return level as LogLevel;
  },
});

/** "false" (default), "true" (any proxy), a hop count, or a comma-separated list of proxy addresses/CIDRs. */
const TRUST_PROXY = setting({
  name: "TRUST_PROXY",
  fallback: "false",
  default: "`false`",
  meaning:
    "Whether `X-Forwarded-For` names the client: `true`, a hop count, or proxy addresses/CIDRs. Leave it false " +
    "unless a proxy you run sets the header, or clients can pick their own address.",
  parse(raw, name): boolean | number | string[] {
    const lower = raw.toLowerCase();
    if (lower === "false" || lower === "off" || lower === "0") return false;
    if (lower === "true" || lower === "on") return true;
    if (/^\d{1,2}$/.test(raw)) return Number(raw);
    const entries = raw.split(",").map((entry) => entry.trim());
    if (entries.every((entry) => /^[0-9a-f.:]+(\/\d{1,3})?$/i.test(entry))) return entries;
    throw new ConfigError(name, `must be false, true, a hop count or a list of proxy addresses, got "${raw}"`);
  },
});

const CORS_ORIGINS = setting({
  name: "CORS_ORIGINS",
  default: "unset",
  meaning: "Comma-separated origins (`https://app.example.com`) allowed to call the API from a browser.",
  parse: (raw, name) =>
    raw.split(",").map((entry) => {
      const origin = entry.trim();
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {}
      if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin)
        throw new ConfigError(name, `each entry must be an origin like https://app.example.com, got "${origin}"`);
      return origin;
    }),
});

const SHUTDOWN_TIMEOUT_MS = integer({
  name: "SHUTDOWN_TIMEOUT_MS",
  fallback: 10_000,
  min: 0,
  max: 600_000,
  meaning:
    "On SIGTERM, the bound on the whole shutdown (the delay below, then the requests in flight); past it the " +
    "process exits 1.",
});

const SHUTDOWN_DELAY_MS = integer({
  name: "SHUTDOWN_DELAY_MS",
  min: 0,
  max: 600_000,
  default: "`5000`, at most half of `SHUTDOWN_TIMEOUT_MS`",
  meaning:
    "On SIGTERM, how long `/readyz` answers 503 while requests are still served (each answer with " +
    "`Connection: close`) before the listener closes, so a load balancer stops sending first. Must be less " +
    "than `SHUTDOWN_TIMEOUT_MS`. Ctrl-C (SIGINT) and a second signal skip it. See " +
    "[docs/deployment.md](../deployment.md#shutdown-and-drain).",
});

const HEADERS_TIMEOUT_MS = integer({
  name: "HEADERS_TIMEOUT_MS",
  fallback: 10_000,
  min: 500,
  max: 600_000,
  meaning:
    "A request's headers must arrive within this, counted from its first byte (on a new connection, from the " +
    'connection\'s opening); otherwise the service answers 408 `{"detail": ...}` and closes the connection.',
});

const REQUEST_TIMEOUT_MS = integer({
  name: "REQUEST_TIMEOUT_MS",
  fallback: 30_000,
  min: 500,
  max: 3_600_000,
  meaning:
    "The whole request, headers and body, must arrive within this; otherwise 408 and the connection closes. " +
    "At least `HEADERS_TIMEOUT_MS`. Both are checked every second (every `HEADERS_TIMEOUT_MS`/2 when that is " +
    "shorter), so a limit acts up to that much late.",
});

const KEEP_ALIVE_TIMEOUT_MS = integer({
  name: "KEEP_ALIVE_TIMEOUT_MS",
  fallback: 72_000,
  min: 1_000,
  max: 600_000,
  meaning:
    "How long an idle keep-alive connection stays open between requests. Keep it above the idle timeout of " +
    "any proxy in front (60 s for AWS ALB and for nginx's upstream keep-alive), or the proxy may send a " +
    "request on a connection the service is closing.",
});

const LISTEN_BACKLOG = integer({
  name: "LISTEN_BACKLOG",
  fallback: 4096,
  min: 1,
  max: 65_535,
  meaning:
    "Connections the kernel completes and queues until the process accepts them; the kernel caps it at " +
    "`net.core.somaxconn` (4096 on Linux 5.4 and later, 128 before). Beyond it new connections' SYNs are " +
    "dropped and those clients retry only after 1 s, 3 s, 7 s... See " +
    "[docs/deployment.md](../deployment.md#connection-storms).",
});

export const SERVER_SETTINGS = section("The server", "src/platform/settings.ts", [
  HOST,
  PORT,
  PUBLIC_URL,
  LOG_LEVEL,
  TRUST_PROXY,
  CORS_ORIGINS,
  SHUTDOWN_TIMEOUT_MS,
  SHUTDOWN_DELAY_MS,
  HEADERS_TIMEOUT_MS,
  REQUEST_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  LISTEN_BACKLOG,
]);

export function readServerSettings(env: Env): ServerSettings {
  const host = HOST.read(env);
  const port = PORT.read(env);
  const publicUrl = PUBLIC_URL.optional(env);
  return {
    host,
    port,
    ...(publicUrl === undefined ? {} : { publicUrl }),
    // Links in mails need a base even when PUBLIC_URL is unset: the listen address.
    linkBase: publicUrl ?? defaultPublicUrl(host, port),
    logLevel: LOG_LEVEL.read(env),
    trustProxy: TRUST_PROXY.read(env),
    corsOrigins: CORS_ORIGINS.optional(env) ?? [],
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS.read(env),
    connections: readConnections(env),
  };
}

/** Without PUBLIC_URL, links point at the address the service listens on (a wildcard becomes loopback). */
function defaultPublicUrl(host: string, port: number): string {
  const name = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port || 8000}`;
}

/**
 * Timeouts, backlog and drain delay (issue 15). Defaults: headers in 10 s and a whole request in 30 s
 * (our largest body is 16 KiB, so 30 s is generous even on a poor mobile link); keep-alive 72 s, above
 * the 60 s idle timeout of common load balancers (AWS ALB, nginx upstream keepalive), which must close
 * an idle connection before the service does or they race it and answer 502; backlog 4096 rather than
 * Node's 511, which a burst of 2,000 connections overflows (docs/deployment.md, "Connection storms");
 * a 5 s drain delay (at most half of SHUTDOWN_TIMEOUT_MS, which bounds the whole shutdown).
 */
function readConnections(env: Env): ConnectionConfig {
  const headersTimeoutMs = HEADERS_TIMEOUT_MS.read(env);
  const requestTimeoutMs = REQUEST_TIMEOUT_MS.read(env);
  if (requestTimeoutMs < headersTimeoutMs)
    throw new ConfigError(
      REQUEST_TIMEOUT_MS.name,
      `must be at least HEADERS_TIMEOUT_MS (${headersTimeoutMs}), got "${requestTimeoutMs}"`,
    );
  const shutdownTimeoutMs = SHUTDOWN_TIMEOUT_MS.read(env);
  // The default leaves at least half of the shutdown bound for the requests in flight.
  const shutdownDelayMs = SHUTDOWN_DELAY_MS.read(env, Math.min(5_000, Math.floor(shutdownTimeoutMs / 2)));
  if (shutdownDelayMs > 0 && shutdownDelayMs >= shutdownTimeoutMs)
    throw new ConfigError(
      SHUTDOWN_DELAY_MS.name,
      `must be less than SHUTDOWN_TIMEOUT_MS (${shutdownTimeoutMs}), which bounds the whole shutdown, got "${shutdownDelayMs}"`,
    );
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS.read(env),
    checkIntervalMs: Math.min(1_000, Math.ceil(headersTimeoutMs / 2)),
    listenBacklog: LISTEN_BACKLOG.read(env),
    shutdownDelayMs,
  };
}
