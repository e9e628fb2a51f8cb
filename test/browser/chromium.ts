// Debian's Chromium for the browser tests, started one way for all of them:
// headless, without the sandbox (root in CI) and without the background
// networking that this machine's closed network refuses. Without Chromium the
// tests are skipped with a message, except under CI=true, where that fails.
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium } from "playwright-core";
import { buildApp } from "../../src/app.ts";
import type { Config } from "../../src/config.ts";
import type { UserStore } from "../../src/store/store.ts";
import { openTestStore, testConfig } from "../helpers.ts";

export const CHROMIUM = "/usr/bin/chromium";
/** Where the browser tests leave their screenshots. */
export const ARTIFACTS = "test-artifacts/browser";
export const STEP_TIMEOUT = 15_000;

/** The describe() skip option for a suite of browser tests about `what`. */
export function skipWithoutChromium(what: string): string | false {
  if (existsSync(CHROMIUM)) return false;
  const message = `Chromium is missing at ${CHROMIUM}: install it with "apt-get install -y chromium" to run the ${what} tests`;
  if (process.env.CI === "true") throw new Error(`${message}; CI requires it`);
  return message;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-gpu",
      "--no-first-run",
      "--disable-sync",
    ],
  });
}

/** A port free on the loopback interface now (for a service whose PUBLIC_URL must name its port up front). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface BrowserFixture {
  browser: Browser;
  app: FastifyInstance;
  store: UserStore;
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * The service on a free port of localhost (which WebAuthn accepts as a relying party, unlike an IP
 * address), its PUBLIC_URL naming that port, on a fresh test store; and Chromium.
 */
export async function serveToChromium(t: TestContext, config: Partial<Config> = {}): Promise<BrowserFixture> {
  const port = await freePort();
  const baseUrl = `http://localhost:${port}`;
  const store = await openTestStore(t);
  const app = await buildApp({ config: { ...testConfig(), publicUrl: baseUrl, ...config }, store });
  await app.listen({ host: "127.0.0.1", port });
  const browser = await launchChromium();
  return {
    browser,
    app,
    store,
    baseUrl,
    async close() {
      await browser.close();
      await app.close();
      await store.close();
    },
  };
}
