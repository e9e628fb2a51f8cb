// node bench/webhook-login.ts [--quick] [--postgres URL]
//
// What a login's write costs the store with webhooks configured: the time of
// createSession (the session, its login audit event, the cap check) with no
// endpoint, with an enabled endpoint that subscribes to other types only,
// and with one that subscribes to session.created (one more row in the
// transaction). In-process, on a SQLite file (and PostgreSQL with
// --postgres), alternating the three setups over several rounds; medians.
// No worker runs: this is the write, not the delivery.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "../src/store/ids.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { UserStore } from "../src/store/store.ts";

const argv = process.argv.slice(2);
const postgresUrl = argv.includes("--postgres") ? argv[argv.indexOf("--postgres") + 1] : undefined;
const LOGINS = argv.includes("--quick") ? 200 : 2000;
const ROUNDS = 5;

async function loginsPerSetup(store: UserStore): Promise<Record<string, number>> {
  const user = await store.create({ email: `bench-${newId()}@example.com`, hashedPassword: "x" });
  const sealedSecret = "sealed";
  const other = await store.createWebhookEndpoint({
    url: "http://127.0.0.1:9/",
    description: null,
    eventTypes: ["user.deleted"],
    enabled: false,
    sealedSecret,
  });
  const subscribed = await store.createWebhookEndpoint({
    url: "http://127.0.0.1:9/",
    description: null,
    eventTypes: ["session.created"],
    enabled: false,
    sealedSecret,
  });
  const setups: [string, () => Promise<unknown>][] = [
    ["none", async () => {}],
    ["other types only", () => store.updateWebhookEndpoint(other.id, { enabled: true })],
    ["session.created", () => store.updateWebhookEndpoint(subscribed.id, { enabled: true })],
  ];
  const times: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, enable] of setups) {
      await store.updateWebhookEndpoint(other.id, { enabled: false });
      await store.updateWebhookEndpoint(subscribed.id, { enabled: false });
      await enable();
      const started = performance.now();
      for (let i = 0; i < LOGINS; i++) {
        const id = newId();
        await store.createSession(
          {
            id,
            userId: user.id,
            expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
            clientAddress: "127.0.0.1",
            userAgent: null,
            tokenHash: id,
            tokenExpiresAt: new Date(Date.now() + 86_400_000).toISOString(),
          },
          { maxPerUser: 50, events: [{ type: "login", outcome: "success", clientAddress: "127.0.0.1" }] },
        );
      }
      times[name] = [...(times[name] ?? []), ((performance.now() - started) * 1000) / LOGINS];
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  return Object.fromEntries(Object.entries(times).map(([name, values]) => [name, median(values)]));
}

const work = mkdtempSync(join(tmpdir(), "bench-webhooks-"));
try {
  const results: Record<string, Record<string, number>> = {};
  const sqlite = openSqliteStore(join(work, "bench.db"));
  results.sqlite = await loginsPerSetup(sqlite);
  await sqlite.close();
  if (postgresUrl) {
    const schema = `bench_webhooks_${process.pid}`;
    const store = await openPostgresStore({ url: postgresUrl, schema, poolSize: 4, timeoutMs: 10_000 });
    results.postgres = await loginsPerSetup(store);
    await store.close();
    const { default: pg } = await import("pg");
    const admin = new pg.Client({ connectionString: postgresUrl });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
  process.stdout.write("createSession, microseconds per login (median of rounds)\n");
  for (const [backend, setups] of Object.entries(results)) {
    for (const [setup, micros] of Object.entries(setups))
      process.stdout.write(`${backend}\t${setup}\t${micros.toFixed(1)}\n`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
