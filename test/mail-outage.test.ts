// The SMTP server goes down while 50 password resets are requested, then
// comes back: every message arrives exactly once (50 recipients, 50
// Message-IDs, nothing twice). On SQLite the instance is also restarted
// during the outage, so retries outlive the process; on PostgreSQL two
// service processes share one outbox and each message is still sent by one only.
// This file picks its backends itself, so the PostgreSQL re-run skips it.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { buildApp } from "../src/app.ts";
import type { Config } from "../src/config.ts";
import { openPostgresStore } from "../src/store/postgres.ts";
import { openSqliteStore } from "../src/store/sqlite.ts";
import type { UserStore } from "../src/store/store.ts";
import { testConfig } from "./helpers.ts";
import { MailServer, tokenIn } from "./mail-server.ts";
import { scratchDir, startService } from "./process.ts";

const COUNT = 50;
const POSTGRES_URL = process.env.POSTGRES_URL;
const RERUN = process.env.TEST_BACKEND === "postgres";

function config(smtp: MailServer): Config {
  const base = testConfig();
  return {
    ...base,
    mail: { ...base.mail, transport: { kind: "smtp", url: smtp.url }, maxAttempts: 20, pollIntervalMs: 100 },
  };
}

/** A port with nothing listening: start the server once to learn a free port, then stop it. */
async function downServer(): Promise<MailServer> {
  const smtp = new MailServer();
  await smtp.start();
  await smtp.stop();
  return smtp;
}

async function seedUsers(store: UserStore): Promise<string[]> {
  const emails = Array.from({ length: COUNT }, (_, i) => `outage${i}@example.com`);
  // A fixed, valid Argon2id hash: these users never log in here, and hashing 50 passwords would only cost time.
  const hashedPassword =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$4kCZb6l6w9H8Fv5u9aGqg8nV8hLw6Gm5F1uJb0aZ0xI";
  for (const email of emails) await store.create({ email, hashedPassword });
  return emails;
}

async function requestResets(apps: FastifyInstance[], emails: string[]): Promise<void> {
  const responses = await Promise.all(
    emails.map((email, i) =>
      (apps[i % apps.length] as FastifyInstance).inject({
        method: "POST",
        url: "/auth/password-reset-requests",
        payload: { email },
      }),
    ),
  );
  for (const response of responses) assert.equal(response.statusCode, 202, "requests never wait on SMTP");
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function assertExactlyOnce(t: TestContext, smtp: MailServer, emails: string[], store: UserStore) {
  await smtp.waitFor(COUNT, 30_000);
  // Give any duplicate time to show up.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.equal(smtp.messages.length, COUNT);
  assert.deepEqual(new Set(smtp.messages.map((message) => message.to)), new Set(emails));
  assert.equal(new Set(smtp.messages.map((message) => message.messageId)).size, COUNT);
  const outbox = await store.listMail({ limit: 1000 });
  assert.equal(outbox.length, COUNT);
  assert.ok(outbox.every((message) => message.status === "sent"));
  const retried = outbox.filter((message) => message.attempts > 1).length;
  t.diagnostic(`${COUNT} delivered once each; ${retried} needed more than one attempt`);
  assert.ok(retried > 0, "the outage made deliveries fail and retry");
}

describe("mail outage", { skip: RERUN ? "picks its own backends; runs in the main suite" : false }, () => {
  test("SQLite: SMTP down during 50 resets and a restart of the instance, then back: each mail once", async (t) => {
    const smtp = await downServer();
    t.after(() => smtp.stop());
    const file = join(scratchDir(t), "users.db");
    const first = openSqliteStore(file);
    const emails = await seedUsers(first);
    const app = await buildApp({ config: config(smtp), store: first });
    await requestResets([app], emails);
    await until(
      async () =>
        (await first.listMail({ limit: 1000 })).filter((m) => m.attempts >= 1 && m.lastError).length === COUNT,
      "every message to fail once",
    );
    const waiting = await first.listMail({ limit: 1000 });
    assert.match(waiting[0]?.lastError ?? "", /ECONNREFUSED|ECONNECTION/);
    const storedPayloads = waiting.map((message) => message.payload).join("\n");
    await app.close();
    await first.close();
    assert.equal(smtp.messages.length, 0);

    // A new process on the same database picks the queue up where the old one left it.
    const store = openSqliteStore(file);
    const restarted = await buildApp({ config: config(smtp), store });
    t.after(async () => {
      await restarted.close();
      await store.close();
    });
    await smtp.start();
    await assertExactlyOnce(t, smtp, emails, store);
    // While they waited, the links' tokens were in the outbox only sealed.
    for (const message of smtp.messages) assert.ok(!storedPayloads.includes(tokenIn(message)));
  });

  test("PostgreSQL, two service processes: SMTP down during 50 resets, then back: each mail once", {
    skip: POSTGRES_URL ? false : "needs POSTGRES_URL",
  }, async (t) => {
    const smtp = await downServer();
    t.after(() => smtp.stop());
    const schema = `outage_${randomBytes(6).toString("hex")}`;
    const store = await openPostgresStore({ url: POSTGRES_URL!, schema, poolSize: 2, timeoutMs: 10_000 });
    t.after(async () => {
      await store.close();
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    const emails = await seedUsers(store);
    const url = POSTGRES_URL!;
    const env = {
      DATABASE_URL: `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
      SIGNING_SECRET: "outage-test-secret-of-at-least-32-bytes!",
      MFA_ENCRYPTION_KEY: "outage-test-mfa-key-of-at-least-32-bytes",
      MAIL_URL: smtp.url,
      MAIL_RETRY_BASE_SECONDS: "1",
      MAIL_MAX_ATTEMPTS: "20",
      RATE_LIMIT: "off",
      LOG_LEVEL: "info",
    };
    const services = await Promise.all([startService(scratchDir(t), env), startService(scratchDir(t), env)]);
    t.after(async () => {
      for (const service of services) await service.stop();
    });
    const responses = await Promise.all(
      emails.map((email, i) =>
        fetch(`${services[i % 2]!.baseUrl}/auth/password-reset-requests`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ email }),
        }),
      ),
    );
    for (const response of responses) assert.equal(response.status, 202, "requests never wait on SMTP");
    await until(
      async () => (await store.listMail({ limit: 1000 })).filter((m) => m.lastError).length === COUNT,
      "every message to fail once",
    );
    await smtp.start();
    await assertExactlyOnce(t, smtp, emails, store);
    // Both instances took part in the delivery, or the test proves nothing about sharing the outbox.
    for (const service of services) assert.match(service.output(), /mail delivery failed; will retry/);
  });
});
