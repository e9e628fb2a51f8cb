// A fresh start on the embedded default (issue 35): without PUBLIC_URL the
// service is an OpenID Provider whose issuer is its listen address, says once
// (a warning) that production needs PUBLIC_URL, names the console's, the docs'
// and the sign-in page's addresses, serves the console and registers its
// client; a restart on the same database keeps that client. With
// ADMIN_CONSOLE=off there is no console and no registration.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { OIDC_WITHOUT_PUBLIC_URL } from "../src/oidc/settings.ts";
import { freePort, scratchDir, startService } from "./process.ts";

const lines = (output: string) =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string; outcome?: string; adminConsole?: string });

/** Waits until `predicate` holds of the output (the client is registered just after the listening line). */
async function until(output: () => string, predicate: (text: string) => boolean) {
  const started = Date.now();
  while (!predicate(output()) && Date.now() - started < 5000) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("a fresh start without PUBLIC_URL", () => {
  test("OpenID Connect with the listen address as issuer, one warning, the addresses, the console and its client", async (t) => {
    const data = scratchDir(t);
    const env = { DATABASE_URL: `sqlite:${join(data, "users.db")}`, PORT: String(await freePort()) };
    const first = await startService(data, env);
    t.after(() => first.stop());
    await until(first.output, (text) => text.includes("OpenID Connect client"));
    const discovery = await fetch(`${first.baseUrl}/.well-known/openid-configuration`);
    assert.equal(discovery.status, 200);
    assert.equal(((await discovery.json()) as { issuer: string }).issuer, first.baseUrl);
    const logged = lines(first.output());
    assert.deepEqual(
      logged.filter((line) => line.msg === OIDC_WITHOUT_PUBLIC_URL).map((line) => line.level),
      [40],
      "one warning",
    );
    const where = logged.find((line) => line.adminConsole !== undefined);
    assert.equal(
      where?.msg,
      `admin console at ${first.baseUrl}/admin/, API docs at ${first.baseUrl}/docs, sign-in page at ${first.baseUrl}/sign-in`,
    );
    assert.equal(logged.find((line) => line.outcome !== undefined)?.outcome, "registered");
    const page = await fetch(`${first.baseUrl}/admin/`);
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.headers.get("content-security-policy") ?? "", /unsafe-/);
    assert.equal(await first.stop(), 0);

    // A restart: the same client is kept, nothing registered again. (On another port the post-logout
    // address, matched exactly, is added: "updated".)
    const second = await startService(data, env);
    t.after(() => second.stop());
    await until(second.output, (text) => text.includes("admin console at"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(
      lines(second.output()).some((line) => line.outcome !== undefined),
      false,
      "kept",
    );
    assert.equal((await fetch(`${second.baseUrl}/.well-known/openid-configuration`)).status, 200);
  });

  test("ADMIN_CONSOLE=off: no console, no registration, the docs and sign-in page still named", async (t) => {
    const data = scratchDir(t);
    const service = await startService(data, {
      DATABASE_URL: `sqlite:${join(data, "users.db")}`,
      ADMIN_CONSOLE: "off",
    });
    t.after(() => service.stop());
    await until(service.output, (text) => text.includes("API docs at"));
    assert.equal((await fetch(`${service.baseUrl}/admin/`)).status, 404);
    const logged = lines(service.output());
    assert.ok(
      logged.some(
        (line) => line.msg === `API docs at ${service.baseUrl}/docs, sign-in page at ${service.baseUrl}/sign-in`,
      ),
    );
    assert.equal(
      logged.some((line) => line.outcome !== undefined),
      false,
    );
  });
});
