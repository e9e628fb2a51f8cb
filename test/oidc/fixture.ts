// The OpenID Connect test fixture: a service listening on a real port with
// its PUBLIC_URL as the issuer, an RSA key for ID tokens, and registered
// clients (a confidential third-party client, a public first-party one);
// a relying party's redirect target (a small HTTP server on another port
// that records each request); and the PKCE and request helpers the tests share.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { TestContext } from "node:test";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.ts";
import { generatePrivateKeyPem } from "../../src/auth/keys.ts";
import type { Config } from "../../src/config.ts";
import { clientMetadata, createClientRegistry } from "../../src/oidc/clients.ts";
import type { Metrics } from "../../src/operations/metrics.ts";
import type { Resolve } from "../../src/outbound/guard.ts";
import type { UserStore } from "../../src/store/store.ts";
import { freePort } from "../browser/chromium.ts";
import { openTestStore, TestClock, testConfig } from "../helpers.ts";

/** One RSA key per test process: generating one takes a moment. */
export const OIDC_KEY = generatePrivateKeyPem("RS256");

export interface RelyingPartyServer {
  origin: string;
  /** The redirect URIs' requests, in order (path and query). */
  requests: string[];
  /** Resolves with the next request's URL. */
  next(): Promise<URL>;
}

/** The relying party's side: answers every request with a small page and remembers its URL. */
export async function startRelyingParty(t: TestContext): Promise<RelyingPartyServer> {
  const requests: string[] = [];
  const waiting: ((url: URL) => void)[] = [];
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const server = createServer((request: IncomingMessage, response) => {
    const url = request.url ?? "/";
    // Chromium asks for the icon of each page it shows, at a moment of its choosing: not a redirect.
    if (url.startsWith("/favicon")) return void response.writeHead(404).end();
    requests.push(url);
    waiting.shift()?.(new URL(url, origin));
    response.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>RP</title><p>back</p>");
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    origin,
    requests,
    next: () => new Promise((resolve) => waiting.push(resolve)),
  };
}

/** The test's clients: a confidential third-party app, a public first-party SPA, a client_secret_post app. */
export interface TestClients {
  partner: { id: string; secret: string };
  spa: { id: string };
  post: { id: string; secret: string };
}

export async function registerClients(store: UserStore, rpOrigin: string): Promise<TestClients> {
  const registry = createClientRegistry(store);
  const by = { userId: null, clientAddress: null };
  const partner = await registry.register(
    clientMetadata({
      client_name: "Partner <App>",
      redirect_uris: [`${rpOrigin}/callback`],
      post_logout_redirect_uris: [`${rpOrigin}/signed-out`],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "client_secret_basic",
      scope: "openid profile email offline_access",
    }),
    by,
  );
  const spa = await registry.register(
    clientMetadata({
      client_name: "Our SPA",
      redirect_uris: [`${rpOrigin}/spa/callback`],
      post_logout_redirect_uris: [`${rpOrigin}/spa/`],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
      scope: "openid profile email",
      first_party: true,
    }),
    by,
  );
  const post = await registry.register(
    clientMetadata({
      client_name: "Post App",
      redirect_uris: [`${rpOrigin}/post/callback`],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "client_secret_post",
      scope: "openid email",
      first_party: true,
    }),
    by,
  );
  return {
    partner: { id: partner.client.id, secret: partner.secret as string },
    spa: { id: spa.client.id },
    post: { id: post.client.id, secret: post.secret as string },
  };
}

export interface OidcService {
  app: FastifyInstance;
  store: UserStore;
  clock: TestClock;
  issuer: string;
  clients: TestClients;
}

/** The service listening at `http://localhost:<port>`, that URL its PUBLIC_URL and issuer. */
export async function startOidcService(
  t: TestContext,
  rpOrigin: string,
  overrides: Partial<Config> = {},
  options: { store?: UserStore; clock?: TestClock; metrics?: Metrics; resolve?: Resolve } = {},
): Promise<OidcService> {
  const clock = options.clock ?? new TestClock();
  const store = options.store ?? (await openTestStore(t, clock.read));
  const port = await freePort();
  const issuer = `http://localhost:${port}`;
  const app = await buildApp({
    config: testConfig({
      publicUrl: issuer,
      tokenIssuer: issuer,
      oidcSigningKeys: [OIDC_KEY],
      ...overrides,
    }),
    store,
    clock: clock.read,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  const clients = await registerClients(store, rpOrigin);
  await app.listen({ host: "127.0.0.1", port });
  t.after(async () => {
    await app.close();
    if (options.store === undefined) await store.close();
  });
  return { app, store, clock, issuer, clients };
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}
