// The OpenAPI document and the Swagger UI at /docs. Every asset is served by
// the service itself (no CDN). The password-flow security scheme advertises
// /auth/token to the UI's Authorize control as metadata only; the service
// never redirects there. Protected routes list BEARER_SECURITY
// (platform/openapi.ts), which is what draws their padlock; open routes list
// none.
//
// Swagger UI's plugin is loaded on the first request for /docs, not at start:
// it and the static-file server under it (with glob and a YAML library) were
// about 50 ms of every start, for a page most processes never serve.
import { STATUS_CODES } from "node:http";
import swagger from "@fastify/swagger";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { HttpError } from "../errors.ts";
import { INTROSPECTION_SCHEME, SECURITY_SCHEME } from "../platform/openapi.ts";
import { openApiWebhooks } from "../webhooks/schemas.ts";

const DESCRIPTION = `A user and token service: sign up, exchange e-mail and password for a signed
bearer token (OAuth 2.0 password grant), and read the current user with it.

**First-party clients only.** The password grant hands the user's password to the client, so it is
meant for the service's own applications. RFC 9700 (OAuth 2.0 Security Best Current Practice) says it
must not be used by third-party clients; use another flow for those.

To try the protected routes here: sign up with \`POST /users\`, press **Authorize**, enter the e-mail as
*username* and the password, leave the client fields empty, then call \`GET /me\`.`;

/**
 * The docs page's Content-Security-Policy: its own origin only. Scripts must be the page's own files
 * (plus any inline-script hashes the plugin's default policy lists; the current plugin has none);
 * Swagger UI sets inline styles from script, so styles allow 'unsafe-inline' (styles cannot run
 * code). No https: wildcard, no third-party image validator, and no upgrade-insecure-requests (TLS
 * is the deployment's choice).
 */
function docsContentSecurityPolicy(defaultPolicy: string): string {
  const scriptHashes = /script-src 'self'([^;]*);/.exec(defaultPolicy)?.[1]?.trim() ?? "";
  return [
    "default-src 'self'",
    "base-uri 'self'",
    "connect-src 'self'",
    "font-src 'self' data:",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "img-src 'self' data:",
    "object-src 'none'",
    `script-src 'self' ${scriptHashes}`.trim(),
    "script-src-attr 'none'",
    "style-src 'self' 'unsafe-inline'",
  ].join("; ");
}

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "User and token service",
        version: "0.1.0",
        description: DESCRIPTION,
        license: { name: "UNLICENSED" },
      },
      servers: [{ url: "/", description: "This service (the same origin as these docs)" }],
      tags: [
        {
          name: "auth",
          description:
            "Tokens: the OAuth 2.0 password and refresh grants, revocation, introspection, and the metadata other " +
            "services verify tokens with.",
        },
        { name: "me", description: "The caller's own record." },
        {
          name: "second factors",
          description:
            "Authenticator apps (TOTP) and recovery codes: set up, confirm, turn off, regenerate. With one on, the " +
            "password grant answers 403 `mfa_required` and a second-factor grant completes the login.",
        },
        { name: "users", description: "Users of the service." },
        {
          name: "clients",
          description:
            "OAuth clients (relying parties) registered with the service: apps that sign users in, and services " +
            "that get tokens for themselves (client_credentials).",
        },
        {
          name: "account",
          description: "Account recovery by e-mail: password reset and address verification links.",
        },
        { name: "health", description: "Liveness and readiness probes." },
        {
          name: "admin",
          description: "Service-wide reads for admins: the audit log, the dashboard's counts, the configuration.",
        },
        {
          name: "webhooks",
          description:
            "Endpoints that receive account events, signed by the Standard Webhooks scheme (admins); the events " +
            "themselves are listed under Webhooks.",
        },
        {
          name: "branding",
          description:
            "The product's name, logo, colour, support address and terms and privacy links on every page and mail (admins).",
        },
      ],
      // Plain JSON Schema objects (TypeBox); the plugin's types name its own object types.
      webhooks: openApiWebhooks() as never,
      components: {
        securitySchemes: {
          [SECURITY_SCHEME]: {
            type: "oauth2",
            description: "Bearer access token from the password grant at /auth/token.",
            flows: { password: { tokenUrl: "/auth/token", scopes: {} } },
          },
          [INTROSPECTION_SCHEME]: {
            type: "http",
            scheme: "basic",
            description: "A resource server's client id and secret from INTROSPECTION_CLIENTS (introspection only).",
          },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`),
    },
  });

  registerDocsPage(app);

  app.get("/openapi.json", { schema: { hide: true } }, async function openApiDocument() {
    return app.swagger();
  });
}

/** Headers of the page's own answer that belong to its connection, not to what it says. */
const CONNECTION_HEADERS = new Set(["connection", "content-length", "date", "keep-alive", "transfer-encoding"]);

/**
 * GET (and HEAD) /docs and /docs/*: Swagger UI, answered by a Fastify instance of its own that is
 * built on the first request with the plugin and this service's OpenAPI document, and asked
 * in-process (inject) for each request. Its answer is passed on with its status and headers (the
 * page's Content-Security-Policy, the assets' caching and ranges); what it does not have is this
 * service's 404, in this service's error shape.
 */
function registerDocsPage(app: FastifyInstance): void {
  let page: Promise<FastifyInstance> | undefined;

  async function buildPage(): Promise<FastifyInstance> {
    const { default: swaggerUi } = await import("@fastify/swagger-ui");
    const docs = Fastify();
    await docs.register(swagger, { mode: "static", specification: { document: app.swagger() as never } });
    await docs.register(swaggerUi, {
      routePrefix: "/docs",
      staticCSP: true,
      transformStaticCSP: docsContentSecurityPolicy,
      uiConfig: { docExpansion: "list", deepLinking: true, persistAuthorization: false },
    });
    await docs.ready();
    return docs;
  }

  async function servePage(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    page ??= buildPage().catch((error: unknown) => {
      page = undefined;
      throw error;
    });
    const docs = await page;
    // A HEAD is asked as a GET, so that Fastify answers it with the GET's length and no body.
    const answer = await docs.inject({ method: "GET", url: request.url, headers: request.headers });
    const policy = answer.headers["content-security-policy"];
    if (answer.statusCode === 404) {
      if (policy !== undefined) reply.header("content-security-policy", policy);
      return reply.callNotFound();
    }
    if (answer.statusCode >= 400) throw new HttpError(answer.statusCode, STATUS_CODES[answer.statusCode] ?? "Error");
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !CONNECTION_HEADERS.has(name)) reply.header(name, value);
    }
    reply.code(answer.statusCode);
    // An empty answer (a redirect, a 304) is sent as none, so that no type or length is made up for it.
    return answer.rawPayload.length === 0 ? reply.send() : reply.send(answer.rawPayload);
  }

  app.get("/docs", { schema: { hide: true } }, servePage);
  app.get("/docs/*", { schema: { hide: true } }, servePage);
  app.addHook("onClose", async function closeDocsPage() {
    if (page) await (await page.catch(() => undefined))?.close();
  });
}
