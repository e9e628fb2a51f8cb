// A browser app on another origin, in a real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core): a page served from an origin
// listed in CORS_ORIGINS logs in with fetch, calls GET /me, PATCH /me and
// DELETE /me/sessions/{id} (both preflighted), and reads X-Request-Id and
// WWW-Authenticate from the answers. A page on an origin not listed gets
// nothing. Without Chromium the tests are skipped with a message, except
// under CI=true, where that is a failure.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { buildApp } from "../../src/app.ts";
import type { UserStore } from "../../src/store/store.ts";
import { createUser, openTestStore, testConfig } from "../helpers.ts";
import { launchChromium, skipWithoutChromium } from "./chromium.ts";

const EMAIL = "ada@example.com";
const PASSWORD = "correct horse battery";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A plain page on its own origin: the "app" that calls the API. */
async function servePage(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title><p>app</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe("a browser app on an allowed origin", { skip: skipWithoutChromium("browser") }, () => {
  let browser: Browser;
  let app: FastifyInstance;
  let store: UserStore;
  let apiUrl: string;
  let allowed: { server: Server; origin: string };
  let stranger: { server: Server; origin: string };

  before(async (t) => {
    [allowed, stranger] = [await servePage(), await servePage()];
    store = await openTestStore(t as never);
    await createUser(store, EMAIL, PASSWORD);
    app = await buildApp({ config: testConfig({ corsOrigins: [allowed.origin] }), store });
    apiUrl = await app.listen({ host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await store?.close();
    allowed?.server.close();
    stranger?.server.close();
  });

  test("logs in, calls GET /me, PATCH /me and DELETE /me/sessions/{id} with fetch, and reads X-Request-Id", async () => {
    const page = await browser.newPage();
    await page.goto(allowed.origin);
    // Runs in the page, as the app's own script would.
    const seen = await page.evaluate(
      async ({ api, email, password }) => {
        const requestId = (response: Response) => response.headers.get("x-request-id");
        const login = await fetch(`${api}/auth/token`, {
          method: "POST",
          body: new URLSearchParams({ username: email, password }),
        });
        const { access_token } = (await login.json()) as { access_token: string };
        const auth = { Authorization: `Bearer ${access_token}` };
        const me = await fetch(`${api}/me`, { headers: auth });
        const patch = await fetch(`${api}/me`, {
          method: "PATCH",
          headers: { ...auth, "Content-Type": "application/json" },
          body: JSON.stringify({ full_name: "Ada Lovelace" }),
        });
        const sessions = (await (await fetch(`${api}/me/sessions`, { headers: auth })).json()) as {
          items: { id: string; current: boolean }[];
        };
        const current = sessions.items.find((session) => session.current);
        const end = await fetch(`${api}/me/sessions/${current?.id}`, { method: "DELETE", headers: auth });
        const anonymous = await fetch(`${api}/me`);
        return {
          login: [login.status, requestId(login)],
          me: [me.status, requestId(me), ((await me.json()) as { email: string }).email],
          patch: [patch.status, requestId(patch), ((await patch.json()) as { full_name: string }).full_name],
          end: [end.status, requestId(end)],
          anonymous: [anonymous.status, anonymous.headers.get("www-authenticate"), requestId(anonymous)],
        };
      },
      { api: apiUrl, email: EMAIL, password: PASSWORD },
    );
    assert.equal(seen.login[0], 200);
    assert.equal(seen.me[0], 200);
    assert.equal(seen.me[2], EMAIL);
    assert.equal(seen.patch[0], 200);
    assert.equal(seen.patch[2], "Ada Lovelace");
    assert.equal(seen.end[0], 204);
    assert.equal(seen.anonymous[0], 401);
    assert.equal(seen.anonymous[1], "Bearer", "the page can read WWW-Authenticate");
    for (const [name, answer] of Object.entries(seen))
      assert.match(String(answer[name === "anonymous" ? 2 : 1]), UUID, `the page can read X-Request-Id (${name})`);
    await page.close();
  });

  test("a page on an origin not listed cannot read the API's answers", async () => {
    const page = await browser.newPage();
    await page.goto(stranger.origin);
    const outcome = await page.evaluate(async (api) => {
      try {
        await fetch(`${api}/me`, { headers: { Authorization: "Bearer x" } });
        return "read";
      } catch (error) {
        return (error as Error).name;
      }
    }, apiUrl);
    assert.equal(outcome, "TypeError", "blocked by CORS");
    await page.close();
  });
});
