// Upstream providers for the tests of issue 25: a real OpenID Connect
// provider (panva's oidc-provider, configured like Google: email and
// email_verified claims, its own login and consent pages), a small server
// speaking GitHub's documented OAuth endpoints (/login/oauth/authorize,
// /login/oauth/access_token, /user, /user/emails), and a hand-made OpenID
// Connect provider whose token answer a test can spoil (bad signature, wrong
// issuer or audience, another nonce, slow, an error) and whose discovery,
// token and JWKS endpoints can fail (a 5xx, a 404, no answer in time, the
// connection cut) to provoke each failure.
import { createHash, generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { TestContext } from "node:test";
import { exportJWK, SignJWT } from "jose";
import Provider from "oidc-provider";
import type { UserStore } from "../../src/store/store.ts";
import { freePort } from "../browser/chromium.ts";

export interface UpstreamAccount {
  email: string;
  email_verified: boolean;
  name?: string;
}

export const UPSTREAM_CLIENT = { id: "uts-test", secret: "upstream-client-secret-for-tests" };

async function listen(t: TestContext, handler: (request: IncomingMessage, response: ServerResponse) => void) {
  const port = await freePort();
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.closeIdleConnections?.();
  t.after(() => server.closeAllConnections());
  return `http://localhost:${port}`;
}

/** oidc-provider at http://localhost:<port>; the login page takes an account's key as its login. */
export async function startOidcUpstream(
  t: TestContext,
  redirectUris: string[],
  accounts: Record<string, UpstreamAccount>,
  port?: number,
): Promise<string> {
  port ??= await freePort();
  const issuer = `http://localhost:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: UPSTREAM_CLIENT.id,
        client_secret: UPSTREAM_CLIENT.secret,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["upstream-test-cookie-key"] },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts[id];
      if (!account) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...account }) };
    },
    // The ID token carries the claims (as Google's does), not only userinfo.
    conformIdTokenClaims: false,
  } as never);
  const server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return issuer;
}

export interface GithubUser {
  id: number;
  login: string;
  name: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
}

/**
 * What the fake GitHub does wrong, as `fault()` says: its token endpoint answers an error the way
 * GitHub does (200 with `error`), the user API answers 401 or 500, or an endpoint answers later than
 * any timeout (the token endpoint not at all; the user API its headers, then nothing).
 */
export type GithubFault = "none" | "token-error" | "user-401" | "user-500" | "slow-token" | "slow-user-body";

/** GitHub's OAuth web flow and REST API, as documented, for one user at a time (`current`). */
export async function startFakeGithub(t: TestContext, user: () => GithubUser, fault: () => GithubFault = () => "none") {
  const codes = new Map<string, { challenge: string; redirect: string }>();
  const tokens = new Set<string>();
  const url = await listen(t, (request, response) => {
    const at = new URL(request.url ?? "/", "http://x");
    const json = (status: number, body: unknown) =>
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (at.pathname === "/login/oauth/authorize") {
      // GitHub asks the user to authorize the app; here the answer is yes at once.
      const code = randomBytes(10).toString("hex");
      codes.set(code, {
        challenge: at.searchParams.get("code_challenge") ?? "",
        redirect: at.searchParams.get("redirect_uri") ?? "",
      });
      const back = new URL(at.searchParams.get("redirect_uri") ?? "");
      back.searchParams.set("code", code);
      back.searchParams.set("state", at.searchParams.get("state") ?? "");
      response.writeHead(302, { location: back.href }).end();
      return;
    }
    if (at.pathname === "/login/oauth/access_token" && request.method === "POST") {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        const form = new URLSearchParams(body);
        const code = codes.get(form.get("code") ?? "");
        codes.delete(form.get("code") ?? "");
        const verifier = form.get("code_verifier") ?? "";
        const ok =
          code !== undefined &&
          form.get("client_id") === UPSTREAM_CLIENT.id &&
          form.get("client_secret") === UPSTREAM_CLIENT.secret &&
          createHash("sha256").update(verifier).digest("base64url") === code.challenge;
        if (fault() === "slow-token") return; // never answers: the service's timeout ends the wait
        if (!ok || fault() === "token-error")
          return json(200, {
            error: "bad_verification_code",
            error_description: "The code passed is incorrect or expired.",
            error_uri:
              "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
          }); // GitHub's way: 200 with error
        const token = `gho_${randomBytes(16).toString("hex")}`;
        tokens.add(token);
        json(200, { access_token: token, token_type: "bearer", scope: "read:user,user:email" });
      });
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1];
    if (!bearer || !tokens.has(bearer)) return json(401, { message: "Bad credentials" });
    const current = user();
    if (at.pathname === "/user" && fault() === "user-401") return json(401, { message: "Bad credentials" });
    if (at.pathname === "/user" && fault() === "user-500") return json(500, { message: "Server Error" });
    if (at.pathname === "/user" && fault() === "slow-user-body") {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"id": ');
      return; // the rest never comes
    }
    if (at.pathname === "/user") return json(200, { id: current.id, login: current.login, name: current.name });
    if (at.pathname === "/user/emails") return json(200, current.emails);
    json(404, { message: "Not Found" });
  });
  return url;
}

export type SpoiledAnswer =
  | "good"
  | "bad-signature"
  | "wrong-issuer"
  | "wrong-audience"
  | "other-nonce"
  | "expired"
  | "slow"
  | "error"
  | "no-verified-email";

/** The endpoints of the spoilable provider that the service calls. */
export type ProviderEndpoint = "discovery" | "token" | "jwks";

/**
 * How an endpoint fails: an OAuth error with 500, a 503 page in HTML, a 404, no answer in time (5 s
 * later), or the connection cut (a network failure as the service sees it).
 */
export type EndpointFault = "500" | "503-html" | "404" | "slow" | "reset";

export interface ProviderOutage {
  at: ProviderEndpoint;
  how: EndpointFault;
}

/**
 * A minimal OpenID Connect provider whose token answer is spoiled as `mode()` says, and whose
 * endpoints fail as `outage()` says; `hold()`, when given, is awaited before each token answer (a
 * test that needs something to happen meanwhile).
 */
export async function startSpoilableOidc(
  t: TestContext,
  mode: () => SpoiledAnswer,
  outage: () => ProviderOutage | undefined = () => undefined,
  hold?: () => Promise<void>,
) {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const { privateKey: otherKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...(await exportJWK(privateKey)), kid: "k1", alg: "RS256", use: "sig" };
  const publicJwk = { kty: jwk.kty, n: jwk.n, e: jwk.e, kid: "k1", alg: "RS256", use: "sig" };
  const state = { nonce: "", subject: "spoil-1", email: "spoil@example.com" };
  let issuer = "";
  issuer = await listen(t, (request, response) => {
    const at = new URL(request.url ?? "/", "http://x");
    const json = (status: number, body: unknown) =>
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    const endpoint = (
      { "/.well-known/openid-configuration": "discovery", "/token": "token", "/jwks": "jwks" } as const
    )[at.pathname as "/token"];
    const failing = outage();
    if (failing !== undefined && failing.at === endpoint) {
      request.resume();
      if (failing.how === "500")
        return json(500, { error: "server_error", error_description: "secret upstream words" });
      if (failing.how === "503-html")
        return response
          .writeHead(503, { "content-type": "text/html" })
          .end("<html><body>secret upstream words: down for maintenance</body></html>");
      if (failing.how === "404") return json(404, { message: "secret upstream words" });
      if (failing.how === "slow") return setTimeout(() => json(200, {}), 5_000).unref();
      return request.socket.destroy();
    }
    if (at.pathname === "/.well-known/openid-configuration")
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
      });
    if (at.pathname === "/jwks") return json(200, { keys: [publicJwk] });
    if (at.pathname === "/token") {
      request.resume();
      request.on("end", async () => {
        await hold?.();
        const how = mode();
        if (how === "slow") return setTimeout(() => json(200, {}), 5_000).unref();
        if (how === "error") return json(400, { error: "invalid_grant", error_description: "secret upstream words" });
        const now = Math.floor(Date.now() / 1000);
        const idToken = await new SignJWT({
          nonce: how === "other-nonce" ? "not-the-nonce" : state.nonce,
          email: state.email,
          email_verified: how !== "no-verified-email",
        })
          .setProtectedHeader({ alg: "RS256", kid: "k1" })
          .setIssuer(how === "wrong-issuer" ? "http://localhost:1/elsewhere" : issuer)
          .setAudience(how === "wrong-audience" ? "someone-else" : UPSTREAM_CLIENT.id)
          .setSubject(state.subject)
          .setIssuedAt(how === "expired" ? now - 7200 : now)
          .setExpirationTime(how === "expired" ? now - 3600 : now + 300)
          .sign(how === "bad-signature" ? otherKey : privateKey);
        json(200, { access_token: "upstream-access", token_type: "Bearer", expires_in: 300, id_token: idToken });
      });
      return;
    }
    json(404, {});
  });
  return { issuer, state };
}

/** A passkey record for `userId`, so that the account has a second factor (its key is never used). */
export function addTestPasskey(store: UserStore, userId: string) {
  return store.addPasskey({
    userId,
    credentialId: `credential-${userId}`,
    publicKey: "not-used",
    counter: 0,
    transports: [],
    name: "key",
    deviceType: "singleDevice",
    backedUp: false,
    aaguid: null,
  });
}
