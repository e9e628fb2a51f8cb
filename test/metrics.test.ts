// Prometheus metrics: the text parses, request and login counters move as
// requests happen, hash durations are recorded, and the metrics are served
// only on METRICS_PORT, never on the API port.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { MFA_OTP_GRANT } from "../src/core/schemas.ts";
import { createMetrics } from "../src/operations/metrics.ts";
import { bearer, createUser, openTestStore, requestToken, TestClock, testConfig } from "./helpers.ts";
import { MailServer } from "./mail-server.ts";
import { scratchDir, startService } from "./process.ts";
import { codeAt } from "./totp.ts";

/** Parses Prometheus text into "name{labels}" -> value, checking every sample line's shape. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(line);
    assert.ok(match, `not a Prometheus sample line: ${line}`);
    samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

describe("metrics", () => {
  test("count requests by route and status, logins by outcome, rate-limit refusals and hash durations", async (t) => {
    const store = await openTestStore(t);
    const metrics = createMetrics();
    const rateLimit = { ...testConfig().rateLimit, enabled: true, loginPerAccountAndAddress: 2 };
    const app = await buildApp({ config: testConfig({ rateLimit }), store, metrics });
    t.after(() => app.close());
    await createUser(store, "ada@example.com", "correct horse battery");

    const before = parse(await metrics.exposition());
    assert.equal(before.get('logins_total{outcome="success"}') ?? 0, 0);
    assert.equal(
      (await requestToken(app, { username: "ada@example.com", password: "correct horse battery" })).statusCode,
      200,
    );
    await requestToken(app, { username: "ada@example.com", password: "wrong" });
    await requestToken(app, { username: "ada@example.com", password: "wrong" });
    assert.equal((await requestToken(app, { username: "ada@example.com", password: "wrong" })).statusCode, 429);
    await app.inject({ method: "GET", url: "/users/01900000-0000-7000-8000-000000000000" });

    const after = parse(await metrics.exposition());
    assert.equal(after.get('logins_total{outcome="success"}'), 1);
    assert.equal(after.get('logins_total{outcome="failure"}'), 2);
    assert.equal(after.get('logins_total{outcome="rate_limited"}'), 1);
    assert.equal(after.get('rate_limit_refusals_total{route="/auth/token"}'), 1);
    assert.equal(after.get('http_requests_total{method="POST",route="/auth/token",status="401"}'), 2);
    assert.equal(
      after.get('http_requests_total{method="GET",route="/users/:id",status="401"}'),
      1,
      "route patterns, not raw URLs",
    );
    assert.equal(after.get('http_request_duration_seconds_count{method="POST",route="/auth/token",status="200"}'), 1);
    assert.ok((after.get('password_hash_duration_seconds_count{operation="verify"}') ?? 0) >= 3);
    assert.ok(after.has("process_resident_memory_bytes"), "process metrics");
  });

  test("count the second-factor steps of logins: mfa_required, mfa_success, mfa_failure, mfa_rate_limited", async (t) => {
    const clock = new TestClock();
    const store = await openTestStore(t, clock.read);
    const metrics = createMetrics();
    const rateLimit = { ...testConfig().rateLimit, enabled: true, secondFactorPerAccount: 1 };
    const app = await buildApp({ config: testConfig({ rateLimit }), store, metrics, clock: clock.read });
    t.after(() => app.close());
    await createUser(store, "ada@example.com", "correct horse battery");
    const password = { username: "ada@example.com", password: "correct horse battery" };
    const token = (await requestToken(app, password)).json().access_token;
    const { secret } = (await app.inject({ method: "POST", url: "/me/totp", headers: bearer(token) })).json();
    const confirm = { code: codeAt(secret, clock.now) };
    await app.inject({ method: "POST", url: "/me/totp/confirm", headers: bearer(token), payload: confirm });
    clock.advanceSeconds(30);
    const grant = async (otp: string) => {
      const challenge = await requestToken(app, password);
      assert.equal(challenge.statusCode, 403);
      return requestToken(app, { grant_type: MFA_OTP_GRANT, mfa_token: challenge.json().mfa_token, otp });
    };
    assert.equal((await grant(codeAt(secret, clock.now))).statusCode, 200);
    const spare = (await requestToken(app, password)).json().mfa_token;
    assert.equal((await grant(codeAt(secret, clock.now + 300_000))).statusCode, 401);
    const limited = await requestToken(app, {
      grant_type: MFA_OTP_GRANT,
      mfa_token: spare,
      otp: codeAt(secret, clock.now),
    });
    assert.equal(limited.statusCode, 429);
    // At the limit the password step answers 429 too: a login refused at its first step.
    assert.equal((await requestToken(app, password)).statusCode, 429);

    const after = parse(await metrics.exposition());
    assert.equal(after.get('logins_total{outcome="success"}'), 1, "the password-only login before the app was on");
    assert.equal(after.get('logins_total{outcome="rate_limited"}'), 1);
    assert.equal(after.get('logins_total{outcome="mfa_required"}'), 3);
    assert.equal(after.get('logins_total{outcome="mfa_success"}'), 1);
    assert.equal(after.get('logins_total{outcome="mfa_failure"}'), 1);
    assert.equal(after.get('logins_total{outcome="mfa_rate_limited"}'), 1);
  });

  test("spell NaN as the text format does, also right after start when the event-loop lag has no sample yet", async () => {
    const metrics = createMetrics();
    const text = await metrics.exposition();
    assert.match(text, /^nodejs_eventloop_lag_mean_seconds NaN$/m, "no event-loop sample yet");
    parse(text);
  });

  test("are served on METRICS_PORT only, not on the API port", async (t) => {
    const service = await startService(scratchDir(t), { SIGNING_SECRET: "x".repeat(32), METRICS_PORT: "0" });
    t.after(() => service.stop());
    const address = /"address":\{"address":"127\.0\.0\.1","family":"IPv4","port":(\d+)\}/.exec(service.output());
    assert.ok(address, service.output());
    const metrics = await fetch(`http://127.0.0.1:${address[1]}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get("content-type") ?? "", /^text\/plain/);
    assert.ok(parse(await metrics.text()).has("process_cpu_user_seconds_total"));
    assert.equal((await fetch(`${service.baseUrl}/metrics`)).status, 404);
    assert.equal(await service.stop(), 0);
  });

  test("count mail deliveries by kind and result: sent, retry, and failed for good (also in the audit trail)", async (t) => {
    const smtp = new MailServer();
    await smtp.start();
    t.after(() => smtp.stop());
    const store = await openTestStore(t);
    const metrics = createMetrics();
    const base = testConfig();
    const mail = { ...base.mail, transport: { kind: "smtp" as const, url: smtp.url }, pollIntervalMs: 50 };
    const app = await buildApp({ config: testConfig({ mail }), store, metrics });
    t.after(() => app.close());
    const user = await createUser(store, "ada@example.com", "correct horse battery");
    const ask = () =>
      app.inject({ method: "POST", url: "/auth/password-reset-requests", payload: { email: "ada@example.com" } });
    // Only this metric: process metrics may print values (NaN lag at start) that are no concern here.
    const sample = async (result: string) =>
      parse(await metrics.registry.getSingleMetricAsString("mail_messages_total")).get(
        `mail_messages_total{kind="password_reset",result="${result}"}`,
      ) ?? 0;
    // The sender counts a delivery after it has recorded it (row, then audit event): wait for the count.
    const counted = async (result: string, expected: number) => {
      const deadline = Date.now() + 20_000;
      while ((await sample(result)) < expected) {
        assert.ok(Date.now() < deadline, `mail_messages_total{result="${result}"} reaches ${expected}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return sample(result);
    };
    await ask();
    await smtp.waitFor(1);
    assert.equal(await counted("sent", 1), 1);

    // The server goes away for good: the next message is retried, then marked failed (maxAttempts is 3 in tests).
    await smtp.stop();
    await ask();
    assert.equal(await counted("failed", 1), 1, "the message ends in the failed state");
    assert.equal((await store.listMail({ status: "failed", limit: 10 })).length, 1);
    assert.equal(await sample("retry"), 2);
    const events = await store.listEvents({ userId: user.id, type: "mail", limit: 10 });
    assert.deepEqual(
      events.map((event) => event.outcome),
      ["password_reset_sent", "password_reset_failed"],
    );
  });
});
