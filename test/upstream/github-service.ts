// The service with the fake GitHub (fixture.ts) as its one provider, in
// process, for the GitHub tests of issue 25: the browser's round trip (start,
// GitHub's authorize redirect followed over HTTP, the callback with the
// binding cookie) and the check of the error page a failure ends on.
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { buildApp } from "../../src/app.ts";
import type { Config } from "../../src/config.ts";
import type { UserStore } from "../../src/store/store.ts";
import type { UpstreamConfig } from "../../src/upstream/settings.ts";
import { openTestStore, TestClock, testConfig } from "../helpers.ts";
import { type GithubFault, type GithubUser, startFakeGithub, UPSTREAM_CLIENT } from "./fixture.ts";

export const BASE = "http://localhost:8999";
export const GITHUB_TIMEOUT_MS = 1000;
const TIMEOUT_MS = GITHUB_TIMEOUT_MS;
const KEY = "an-upstream-token-sealing-key-of-32-bytes-or-more";

export const octo = (id = 4242, email = "octo@example.com"): GithubUser => ({
  id,
  login: `octo${id}`,
  name: "Octo Cat",
  emails: [
    { email: `${id}+octo@users.noreply.github.com`, primary: false, verified: true },
    { email, primary: true, verified: true },
  ],
});

export interface GithubServiceOptions {
  upstream?: Partial<UpstreamConfig>;
  config?: Partial<Config>;
  store?: UserStore;
  clock?: TestClock;
}

/** The service with GitHub as its one provider, and the browser's round trip through it. */
export async function startGithubService(t: TestContext, options: GithubServiceOptions = {}) {
  let user = octo();
  let fault: GithubFault = "none";
  const github = await startFakeGithub(
    t,
    () => user,
    () => fault,
  );
  const clock = options.clock ?? new TestClock();
  const store = options.store ?? (await openTestStore(t, clock.read));
  const app = await buildApp({
    config: testConfig({
      publicUrl: BASE,
      mfa: { encryptionKeys: [KEY], totpIssuer: "Service Test" },
      upstream: {
        providers: [
          {
            kind: "github",
            name: "github",
            label: "GitHub",
            webUrl: github,
            apiUrl: github,
            scopes: "read:user user:email",
            clientId: UPSTREAM_CLIENT.id,
            clientSecret: UPSTREAM_CLIENT.secret,
            allowedDomains: [],
          },
        ],
        autoLink: false,
        keepTokens: false,
        timeoutMs: TIMEOUT_MS,
        ...options.upstream,
      },
      ...options.config,
    }),
    store,
    clock: clock.read,
  });
  t.after(async () => {
    await app.close();
    if (!options.store) await store.close();
  });

  /** Start, GitHub's authorize redirect (followed over HTTP), then the callback from the same browser. */
  async function signIn() {
    const start = await app.inject({ method: "GET", url: "/auth/upstream/github/start" });
    assert.equal(start.statusCode, 303, start.body);
    const cookie = String(start.headers["set-cookie"]).split(";")[0] as string;
    const atGithub = await fetch(start.headers.location as string, { redirect: "manual" });
    const back = new URL(atGithub.headers.get("location") as string);
    const began = Date.now();
    const callback = await app.inject({ method: "GET", url: `${back.pathname}${back.search}`, headers: { cookie } });
    return { callback, cookie, took: Date.now() - began };
  }
  const users = async () => (await store.list({ limit: 100 })).map((each) => each.email);
  return {
    app,
    store,
    clock,
    signIn,
    users,
    setUser: (next: GithubUser) => (user = next),
    setFault: (next: GithubFault) => (fault = next),
  };
}

/** The error page as a whole: status, its headers, and the one sentence it shows. */
export function assertUpstreamPage(
  response: { statusCode: number; headers: Record<string, unknown>; body: string },
  status: number,
  detail: string,
) {
  assert.equal(response.statusCode, status, response.body);
  assert.equal(response.headers["content-type"], "text/html; charset=utf-8");
  assert.equal(response.headers["cache-control"], "no-store");
  assert.equal(response.headers["referrer-policy"], "no-referrer");
  const shown = /<p class="error" role="alert" id="upstream-error">([^<]*)<\/p>/.exec(response.body)?.[1];
  assert.equal(shown, detail.replace(/'/g, "&#39;"));
  assert.doesNotMatch(response.body, /bad_verification_code|Bad credentials|Server Error|gho_/);
}
