// What the service's POST path adds over bare Fastify (issue 34), piece by
// piece: one server process holds a ladder of Fastify instances, one port
// each, every rung the one before plus one of the service's own pieces (its
// request id, its common headers, its body parsers, its access line, schema
// validation and serialisation, its rate-limit check, its metrics hook, its
// error handler), and last the whole service (buildApp) answering a refused
// client-authenticated form POST (a wrong client secret: 401 after one
// SHA-256, before any token work). Each rung is loaded in turn with the same
// form POST and the same JSON POST. Beside the ladder, in the same sitting,
// the service's successful client_credentials grant and introspection (HTTP
// Basic, one registered client) against the floor's (bench/bare-client-
// endpoints.ts, built in the same process). The figure is the server process's CPU
// time per answered request (process.cpuUsage in the server, read over
// stdin between loads), with the server pinned to core 0 and autocannon,
// in a child process, pinned to core 1. Several alternating rounds; medians.
//
//   node bench/post-path.ts [--quick] [--rungs 0,9,10] [--rounds 5] [--seconds 5]   (npm run bench:post-path)
//
// The same file is the server (--server) and the load generator (--load).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Type } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from "fastify";
import { buildApp } from "../src/app.ts";
import { MemoryCounterStore } from "../src/auth/rate-limits.ts";
import { loadConfig } from "../src/config.ts";
import { TokenForm, TokenOut } from "../src/core/schemas.ts";
import { unauthorized } from "../src/errors.ts";
import { BatchedLogDestination } from "../src/log-destination.ts";
import { clientMetadata, createClientRegistry } from "../src/oidc/clients.ts";
import { createMetrics, type Metrics } from "../src/operations/metrics.ts";
import { recordRequestMetrics } from "../src/operations/request-metrics.ts";
import { accessLogHook } from "../src/platform/access-log.ts";
import { handleError, handleNotFound } from "../src/platform/error-handler.ts";
import { acceptFormBodies } from "../src/platform/forms.ts";
import { harden } from "../src/platform/hardening.ts";
import { acceptJsonBodies, REDACTED_PATHS, requestId } from "../src/platform/instance.ts";
import { errorResponse } from "../src/platform/openapi.ts";
import { requestLoggerOnFirstUse } from "../src/platform/request-logger.ts";
import { buildSerializersOnFirstUse } from "../src/platform/serialization.ts";
import { createValidatorCompiler } from "../src/platform/validation.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import { bareClientEndpoints } from "./bare-client-endpoints.ts";

const SECRET = "post-path-bench-signing-secret-of-32-bytes-or-more";
const REFUSED = "Client authentication failed";
const JSON_BODY = JSON.stringify({ email: "bench@example.com", password: "not-the-password-at-all" });
const JsonIn = Type.Object(
  { email: Type.String({ format: "email", maxLength: 320 }), password: Type.String({ maxLength: 128 }) },
  { additionalProperties: false },
);
const Refusal = errorResponse("Refused.", REFUSED);

/** The rungs, in order: each adds one piece to the one before. */
const RUNGS = [
  "bare Fastify, least form parse",
  "+ request id",
  "+ common headers (hardening.ts)",
  "+ the service's body parsers",
  "+ access line (to a file)",
  "+ schema validation and serialisation",
  "+ rate-limit check",
  "+ metrics hooks",
  "+ error handler (refusal thrown)",
] as const;
const WHOLE = "whole service (buildApp)";
const FLOOR = "bare floor (bench/bare-client-endpoints.ts)";

interface Rung {
  name: string;
  /** Where the form and the JSON POST go ("" for none). */
  form: string;
  json: string;
  /** Where a successful client_credentials grant and an introspection of the client's token go. */
  grant?: string;
  introspect?: string;
}

/** What the sitting needs to know of the server's one registered client. */
interface Started {
  rungs: Rung[];
  clientId: string;
  /** HTTP Basic credentials of the client, and a token of its own to introspect. */
  basic: string;
  token: string;
}

// ---------------------------------------------------------------------------------------------------------
// The server: every rung on its own port, one process.

async function serve(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "post-path-"));
  // The access line goes to a file, through the service's own batched destination (as in production).
  const logs = new BatchedLogDestination(openSync(join(work, "access.log"), "a"));
  const metrics = createMetrics();
  const rungs: Rung[] = [];

  for (let level = 0; level < RUNGS.length; level++) {
    const app = await ladderRung(level, logs, metrics);
    const port = await listen(app);
    rungs.push({
      name: RUNGS[level] as string,
      form: `http://127.0.0.1:${port}/form`,
      json: `http://127.0.0.1:${port}/json`,
    });
  }

  // The whole service, as npm start runs it (info logs to the same kind of destination, metrics on,
  // rate limits on), with one registered confidential client whose secret the load gets wrong.
  const { config } = loadConfig(
    { SIGNING_SECRET: SECRET, MFA_ENCRYPTION_KEY: `mfa-${SECRET}`, DATABASE_URL: `sqlite:${join(work, "db")}` },
    work,
  );
  const store = await openSqliteStore(join(work, "db"));
  const { client, secret } = await createClientRegistry(store).register(
    clientMetadata({ client_name: "Bench", grant_types: ["client_credentials"], scope: "bench" }),
    { userId: null, clientAddress: null },
  );
  const basic = `Basic ${Buffer.from(`${client.id}:${secret}`).toString("base64")}`;
  const service = await buildApp({
    config,
    store,
    logStream: logs,
    metrics: createMetrics(),
    counters: new MemoryCounterStore(),
  });
  const servicePort = await listen(service);
  const base = `http://127.0.0.1:${servicePort}`;
  const floor = `http://127.0.0.1:${await listen(bareClientEndpoints(client.id, secret as string))}`;
  rungs.push({ name: FLOOR, form: "", json: "", grant: `${floor}/token`, introspect: `${floor}/introspect` });
  rungs.push({
    name: `${WHOLE}: POST /auth/token`,
    form: `${base}/auth/token`,
    json: `${base}/me/totp`,
    grant: `${base}/auth/token`,
  });
  rungs.push({
    name: `${WHOLE}: POST /auth/introspect`,
    form: `${base}/auth/introspect`,
    json: "",
    introspect: `${base}/auth/introspect`,
  });
  // The token both introspect: the service's own, as a resource server would be handed it.
  const issued = await fetch(`${base}/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic },
    body: "grant_type=client_credentials",
  });
  if (issued.status !== 200) throw new Error(`client_credentials answered ${issued.status}`);
  const { access_token: token } = (await issued.json()) as { access_token: string };

  process.stdout.write(`${JSON.stringify({ rungs, clientId: client.id, basic, token } satisfies Started)}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === "cpu") {
      const { user, system } = process.cpuUsage();
      process.stdout.write(`${JSON.stringify({ cpu: user + system })}\n`);
    }
  }
  logs.flush();
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Bare Fastify's least work for a form: URLSearchParams into an object (bench/bare-client-endpoints.ts). */
function leastFormParser(app: FastifyInstance): void {
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
}

async function ladderRung(level: number, logs: BatchedLogDestination, metrics: Metrics): Promise<FastifyInstance> {
  const has = (rung: (typeof RUNGS)[number]) => level >= RUNGS.indexOf(rung);
  const logged = has("+ access line (to a file)");
  const app = Fastify({
    logger: logged
      ? {
          level: "info",
          redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
          stream: logs,
        }
      : false,
    ...(logged
      ? {
          logController: new LogController({ disableRequestLogging: true }),
          childLoggerFactory: requestLoggerOnFirstUse,
        }
      : {}),
    ...(has("+ request id") ? { requestIdHeader: false, genReqId: requestId } : {}),
    ...(has("+ schema validation and serialisation")
      ? { schemaController: { compilersFactory: { buildSerializer: buildSerializersOnFirstUse } } }
      : {}),
  }) as unknown as FastifyInstance;
  if (has("+ schema validation and serialisation")) app.setValidatorCompiler(createValidatorCompiler());
  if (has("+ common headers (hardening.ts)")) {
    // harden() adds the access line itself when the logger writes info; before that rung there is no
    // logger (Fastify's stand-in has no isLevelEnabled: it is told that nothing is enabled).
    if (!logged) Object.assign(app.log, { isLevelEnabled: () => false });
    await harden(app, { corsOrigins: [] } as never, undefined);
  }
  if (has("+ metrics hooks")) recordRequestMetrics(app, metrics);
  if (has("+ error handler (refusal thrown)")) {
    app.setErrorHandler(handleError);
    app.setNotFoundHandler(handleNotFound);
  }
  const counters = new MemoryCounterStore();
  const thrown = has("+ error handler (refusal thrown)");
  const refuse = (reply: FastifyReply) => {
    if (thrown) throw unauthorized(REFUSED);
    return reply.code(401).header("www-authenticate", "Bearer").send({ detail: REFUSED });
  };
  /** The rate-limit step: the per-address counter the client endpoints read before any work. */
  const rateLimit = has("+ rate-limit check")
    ? [
        async function underTheLimit(request: FastifyRequest) {
          const counter = await counters.get(`client:${request.ip}`);
          if (counter !== undefined && counter.count > 1_000_000) throw new Error("over");
        },
      ]
    : [];
  const schemas = has("+ schema validation and serialisation");

  await app.register(async function formRoutes(forms) {
    if (has("+ the service's body parsers")) {
      forms.removeAllContentTypeParsers();
      acceptFormBodies(forms);
    } else leastFormParser(forms);
    forms.post(
      "/form",
      {
        preHandler: rateLimit,
        ...(schemas ? { schema: { body: TokenForm, response: { 200: TokenOut, 401: Refusal } } } : {}),
      },
      async (_request, reply) => refuse(reply),
    );
  });
  await app.register(async function jsonRoutes(json) {
    if (has("+ the service's body parsers")) acceptJsonBodies(json);
    json.post(
      "/json",
      { preHandler: rateLimit, ...(schemas ? { schema: { body: JsonIn, response: { 401: Refusal } } } : {}) },
      async (_request, reply) => refuse(reply),
    );
  });
  if (logged) {
    // The line is in every rung from here on: harden() above added it when the logger was on; check.
    if (!has("+ common headers (hardening.ts)")) {
      const line = accessLogHook(app);
      if (line) app.addHook("onResponse", line);
    }
  }
  await app.ready();
  return app;
}

// ---------------------------------------------------------------------------------------------------------
// The load generator: one autocannon run, its answered requests on stdout.

async function generate(url: string, body: string, type: string, seconds: number, authorization: string) {
  const { default: autocannon } = await import("autocannon");
  const result = await autocannon({
    url,
    method: "POST",
    body,
    headers: { "content-type": type, ...(authorization ? { authorization } : {}) },
    connections: 32,
    duration: seconds,
  });
  const statuses = {
    "1xx": result["1xx"],
    "2xx": result["2xx"],
    "3xx": result["3xx"],
    "4xx": result["4xx"],
    "5xx": result["5xx"],
  };
  process.stdout.write(
    `${JSON.stringify({ answered: result["2xx"] + result.non2xx, statuses, errors: result.errors })}\n`,
  );
}

// ---------------------------------------------------------------------------------------------------------
// The sitting: server on core 0, each load on core 1, rounds alternating over the rungs.

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}`))));
  });
}

async function sitting(quick: boolean, only: number[] | undefined, plan: { rounds?: number; seconds?: number }) {
  const rounds = plan.rounds ?? (quick ? 2 : 5);
  const seconds = plan.seconds ?? (quick ? 2 : 5);
  const server: ChildProcess = spawn("taskset", ["-c", "0", process.execPath, import.meta.filename, "--server"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: server.stdout as NonNullable<ChildProcess["stdout"]> })[
    Symbol.asyncIterator
  ]();
  const next = async () => JSON.parse((await lines.next()).value as string);
  const started = (await next()) as Started;
  const { clientId, basic, token } = started;
  // --rungs 6,7: only those rungs (by their row in the table, from 0), for a quick A/B of two pieces.
  const rungs = only === undefined ? started.rungs : started.rungs.filter((_rung, index) => only.includes(index));
  const cpu = async (): Promise<number> => {
    server.stdin?.write("cpu\n");
    return ((await next()) as { cpu: number }).cpu;
  };
  // The form of a client_credentials grant (client_secret_post) with a wrong secret, ~80 bytes.
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: clientId,
    client_secret: "not-the-secret",
  }).toString();
  const kinds = [
    { kind: "form", body: form, type: "application/x-www-form-urlencoded", authorization: "" },
    // The whole service's JSON POST: POST /me/totp with a bearer token that is no token, refused 401 by
    // the token check before the route's work; the ladder's servers ignore the header.
    { kind: "json", body: JSON_BODY, type: "application/json", authorization: "Bearer not-a-token" },
    // Successful answers, the service's against the floor's: a client_credentials grant and an
    // introspection of the client's own token, the client authenticating with HTTP Basic.
    {
      kind: "grant",
      body: "grant_type=client_credentials",
      type: "application/x-www-form-urlencoded",
      authorization: basic,
    },
    {
      kind: "introspect",
      body: new URLSearchParams({ token }).toString(),
      type: "application/x-www-form-urlencoded",
      authorization: basic,
    },
  ] as const;
  const load = async (url: string, body: string, type: string, duration: number, authorization: string) => {
    const out = await run("taskset", [
      "-c",
      "1",
      process.execPath,
      import.meta.filename,
      "--load",
      url,
      body,
      type,
      String(duration),
      authorization,
    ]);
    return JSON.parse(out) as { answered: number; statuses: Record<string, number>; errors: number };
  };
  const figures = new Map<string, number[]>();
  const statuses = new Map<string, string>();
  process.stderr.write(`post-path: ${rungs.length} rungs, ${rounds} rounds of ${seconds} s per rung and body\n`);
  // Warm-up: every route's first answers (lazy compiles, the JIT).
  for (const rung of rungs)
    for (const { kind, body, type, authorization } of kinds) {
      const url = rung[kind];
      if (url) await load(url, body, type, 1, authorization);
    }
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? rungs : [...rungs].reverse();
    for (const rung of order)
      for (const { kind, body, type, authorization } of kinds) {
        const url = rung[kind];
        if (!url) continue;
        const before = await cpu();
        const { answered, statuses: seen, errors } = await load(url, body, type, seconds, authorization);
        const used = (await cpu()) - before;
        const key = `${kind}\t${rung.name}`;
        figures.set(key, [...(figures.get(key) ?? []), used / answered]);
        statuses.set(
          key,
          Object.entries(seen)
            .filter(([, count]) => count > 0)
            .map(([status]) => status)
            .join(",") + (errors ? ` (${errors} errors)` : ""),
        );
      }
    process.stderr.write(`post-path: round ${round + 1}/${rounds} done\n`);
  }
  server.stdin?.end();
  const titles = {
    form: "form POST",
    json: "JSON POST",
    grant: "client_credentials grant (200)",
    introspect: "introspection of the client's token (200)",
  };
  for (const { kind } of kinds) {
    if (kind === "grant" || kind === "introspect") {
      floorTable(kind, titles[kind], rungs, figures, statuses, rounds);
      continue;
    }
    console.log(`\n### ${titles[kind]}: server CPU per answered request (median of ${rounds} rounds)\n`);
    console.log("| step | CPU us/request | delta over previous | ratio to bare | answers |");
    console.log("|---|---:|---:|---:|---|");
    let bare: number | undefined;
    let previous: number | undefined;
    for (const rung of rungs) {
      const values = figures.get(`${kind}\t${rung.name}`);
      if (values === undefined) continue;
      const us = median(values);
      bare ??= us;
      const delta = previous === undefined ? "" : `${us - previous >= 0 ? "+" : ""}${(us - previous).toFixed(1)}`;
      console.log(
        `| ${rung.name} | ${us.toFixed(1)} | ${delta} | ${(us / bare).toFixed(2)}x | ${statuses.get(`${kind}\t${rung.name}`)} |`,
      );
      if (!rung.name.startsWith(WHOLE)) previous = us;
    }
  }
}

/**
 * The service's successful answer against the floor's: CPU per request, and the floor's over the
 * service's (the share of the floor's rate the service would reach on the same core).
 */
function floorTable(
  kind: "grant" | "introspect",
  title: string,
  rungs: Rung[],
  figures: Map<string, number[]>,
  statuses: Map<string, string>,
  rounds: number,
): void {
  const floor = figures.get(`${kind}\t${FLOOR}`);
  if (floor === undefined) return;
  console.log(`\n### ${title}: server CPU per answered request (median of ${rounds} rounds)\n`);
  console.log("| server | CPU us/request | floor / this (target >= 80 %) | answers |");
  console.log("|---|---:|---:|---|");
  for (const rung of rungs) {
    const values = figures.get(`${kind}\t${rung.name}`);
    if (values === undefined) continue;
    const share = `${((median(floor) / median(values)) * 100).toFixed(1)} %`;
    console.log(
      `| ${rung.name} | ${median(values).toFixed(1)} | ${share} | ${statuses.get(`${kind}\t${rung.name}`)} |`,
    );
  }
}

const argv = process.argv.slice(2);
if (argv[0] === "--server") await serve();
else if (argv[0] === "--load")
  await generate(argv[1] as string, argv[2] as string, argv[3] as string, Number(argv[4]), argv[5] ?? "");
else {
  const option = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const rungsArgument = option("--rungs");
  const number = (name: string) => (option(name) === undefined ? undefined : Number(option(name)));
  await sitting(argv.includes("--quick"), rungsArgument?.split(",").map(Number), {
    rounds: number("--rounds"),
    seconds: number("--seconds"),
  });
}
