// The real process over real HTTP: zero-configuration start on the embedded
// default, the generated secret kept across restarts, .env handling, bad
// settings stopping the process with one line, clean shutdown, quiet logs.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { AREAS } from "../src/i18n/catalogues.ts";
import { escapeHtml } from "../src/platform/html.ts";
import { freePort, run, SERVER, scratchDir, startService } from "./process.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";

async function signUpAndLogin(baseUrl: string): Promise<string> {
  const signUp = await fetch(`${baseUrl}/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });
  assert.equal(signUp.status, 201);
  return login(baseUrl);
}

async function login(baseUrl: string): Promise<string> {
  const token = await fetch(`${baseUrl}/auth/token`, {
    method: "POST",
    body: new URLSearchParams({ username: EMAIL, password: PASSWORD }),
  });
  assert.equal(token.status, 200);
  return ((await token.json()) as { access_token: string }).access_token;
}

async function me(baseUrl: string, token: string): Promise<Response> {
  return fetch(`${baseUrl}/me`, { headers: { authorization: `Bearer ${token}` } });
}

describe("the service process", () => {
  test("starts with no configuration: SQLite file and generated secret under ./data, full flow over HTTP, exits 0 on SIGTERM", async (t) => {
    const cwd = scratchDir(t);
    const service = await startService(cwd);
    t.after(() => service.stop());
    const token = await signUpAndLogin(service.baseUrl);
    const response = await me(service.baseUrl, token);
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { email: string }).email, EMAIL);
    const docs = await fetch(`${service.baseUrl}/docs`);
    assert.equal(docs.status, 200);
    // The bundle carries the catalogues as text, parsed on first use (scripts/build.ts): each language still reads its own.
    for (const locale of ["ja", "en"] as const) {
      const page = await fetch(`${service.baseUrl}/sign-in`, { headers: { "accept-language": locale } });
      assert.equal(page.status, 200);
      assert.ok((await page.text()).includes(escapeHtml(AREAS.pages![locale]["pages.signIn.title"]!)), locale);
    }

    assert.ok(statSync(join(cwd, "data", "users.db")).isFile());
    const secret = readFileSync(join(cwd, "data", "signing-secret"), "utf8").trim();
    assert.equal(await service.stop(), 0);

    const log = service.output();
    assert.match(log, /generated a new signing secret/);
    for (const leak of [secret, PASSWORD, token, "$argon2id$"])
      assert.ok(!log.includes(leak), `log leaks ${leak.slice(0, 12)}`);
  });

  test("keeps the generated secret across restarts, so tokens issued before a restart on another port still work", async (t) => {
    const cwd = scratchDir(t);
    const first = await startService(cwd, { PORT: String(await freePort()) });
    const token = await signUpAndLogin(first.baseUrl);
    assert.equal(await first.stop(), 0);

    // No PUBLIC_URL, and another port: the token named the first address as its issuer.
    const second = await startService(cwd, { PORT: String(await freePort()) });
    t.after(() => second.stop());
    assert.notEqual(second.baseUrl, first.baseUrl);
    assert.match(second.output(), /using the signing secret kept in/);
    const response = await me(second.baseUrl, token);
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys((await response.json()) as object).slice(0, 2), ["id", "email"]);
  });

  test("two instances on one database, without PUBLIC_URL, accept each other's tokens", async (t) => {
    const cwd = scratchDir(t);
    const [a, b] = [await startService(cwd), await startService(cwd)];
    t.after(() => Promise.all([a.stop(), b.stop()]));
    const fromA = await signUpAndLogin(a.baseUrl);
    const fromB = await login(b.baseUrl);
    for (const [token, base] of [
      [fromA, b.baseUrl],
      [fromB, a.baseUrl],
    ] as const) {
      const response = await me(base, token);
      assert.equal(response.status, 200, `a token from the other instance at ${base}`);
      assert.equal(((await response.json()) as { email: string }).email, EMAIL);
    }
  });

  test("honours a .env file in the working directory, with the real environment winning", async (t) => {
    const cwd = scratchDir(t);
    writeFileSync(
      join(cwd, ".env"),
      `SIGNING_SECRET=${"a".repeat(40)}\nDATABASE_URL=sqlite:from-dotenv.db\nLOG_LEVEL=silent\n`,
    );
    const service = await startService(cwd, { LOG_LEVEL: "info" });
    t.after(() => service.stop());
    assert.ok(statSync(join(cwd, "from-dotenv.db")).isFile());
    await signUpAndLogin(service.baseUrl);
    assert.equal(await service.stop(), 0);
    assert.match(
      service.output(),
      /request completed/,
      "LOG_LEVEL from the real environment (info) wins over .env (silent)",
    );
  });

  test("creates the first admin from FIRST_ADMIN_EMAIL and FIRST_ADMIN_PASSWORD at start-up, without logging the password", async (t) => {
    const cwd = scratchDir(t);
    const service = await startService(cwd, { FIRST_ADMIN_EMAIL: "root@example.com", FIRST_ADMIN_PASSWORD: PASSWORD });
    t.after(() => service.stop());
    const token = await fetch(`${service.baseUrl}/auth/token`, {
      method: "POST",
      body: new URLSearchParams({ username: "root@example.com", password: PASSWORD }),
    });
    const { access_token } = (await token.json()) as { access_token: string };
    const users = await fetch(`${service.baseUrl}/users`, { headers: { authorization: `Bearer ${access_token}` } });
    assert.equal(users.status, 200);
    assert.equal(await service.stop(), 0);
    assert.match(service.output(), /"outcome":"created"/);
    assert.ok(!service.output().includes(PASSWORD));
  });

  test("exits 1 with one line when the database cannot be reached at start-up", async (t) => {
    const env = {
      DATABASE_URL: "postgres://app:hunter2secret@127.0.0.1:1/users",
      SIGNING_SECRET: "x".repeat(32),
      MFA_ENCRYPTION_KEY: "m".repeat(32),
      DB_TIMEOUT_MS: "500",
    };
    const result = await run(SERVER, { cwd: scratchDir(t), env });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^cannot open the database named by DATABASE_URL: /);
    assert.equal(result.stderr.trim().split("\n").length, 1);
    assert.ok(!result.stderr.includes("hunter2secret"), "the database password is not printed");
  });

  test("exits 1 with one line when Redis cannot be reached at start-up", async (t) => {
    const env = { REDIS_URL: "redis://127.0.0.1:1", SIGNING_SECRET: "x".repeat(32), REDIS_TIMEOUT_MS: "200" };
    const result = await run(SERVER, { cwd: scratchDir(t), env });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, "cannot reach Redis at REDIS_URL\n");
  });

  for (const [setting, env] of [
    ["PORT", { PORT: "eighty" }],
    ["SIGNING_SECRET", { SIGNING_SECRET: "short" }],
    ["DATABASE_URL", { DATABASE_URL: "oracle://db" }],
    ["LOG_LEVEL", { LOG_LEVEL: "chatty" }],
    ["SIGNUP_OPEN", { SIGNUP_OPEN: "maybe" }],
    ["FIRST_ADMIN_PASSWORD", { FIRST_ADMIN_EMAIL: "root@example.com" }],
    ["REQUEST_TIMEOUT_MS", { REQUEST_TIMEOUT_MS: "forever" }],
    ["SHUTDOWN_DELAY_MS", { SHUTDOWN_DELAY_MS: "20000", SHUTDOWN_TIMEOUT_MS: "15000" }],
    ["LISTEN_BACKLOG", { LISTEN_BACKLOG: "-1" }],
    // Issue 37: a colour white text is unreadable on.
    ["BRAND_PRIMARY_COLOR", { BRAND_PRIMARY_COLOR: "#ffff00" }],
  ] as const) {
    test(`exits non-zero with one line naming ${setting} when it is unusable`, async (t) => {
      const cwd = scratchDir(t);
      const result = await run(SERVER, { cwd, env: env as Record<string, string> });
      assert.notEqual(result.code, 0);
      const lines = result.stderr.trim().split("\n");
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0] as string, new RegExp(`^configuration error: ${setting}: `));
      assert.equal(result.stdout, "");
    });
  }
});
