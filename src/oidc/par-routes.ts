// POST /oauth/par: the pushed authorization request endpoint (RFC 9126,
// issue 36). The client authenticates exactly as at the token endpoint
// (client-auth.ts: Basic, post, or a public client by its client_id) and
// sends the authorization request's parameters form-encoded; they are
// checked by the authorization endpoint's own reading of a request
// (authorization.ts), so a push is refused for what the endpoint would
// refuse, with the RFC 6749 error it would send to the client, here as a
// 400 body. A request_uri inside a push is refused (section 2.1). The answer
// is 201 with the request_uri and expires_in (section 2.2), never cached;
// the request itself is kept in the store (pushed-requests.ts).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { RateLimits } from "../auth/rate-limits.ts";
import { OAuthError, renderOAuthError } from "../oauth-errors.ts";
import type { Audit } from "../platform/audit.ts";
import { describeError } from "../platform/error-handler.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import { NO_SECURITY } from "../platform/openapi.ts";
import { parseAuthorizationRequest } from "./authorization.ts";
import { authenticatePresented, CLIENT_AUTHENTICATION_FAILED, invalidClient, presentedClient } from "./client-auth.ts";
import type { ClientRegistry } from "./clients.ts";
import type { ClientCors } from "./cors.ts";
import { PUSHED_AUTHORIZATION_REQUEST_PATH } from "./paths.ts";
import type { PushedRequests } from "./pushed-requests.ts";

export interface ParRouteOptions {
  clients: ClientRegistry;
  pushedRequests: PushedRequests;
  audit: Audit;
  cors: ClientCors;
  /** Counts public clients' pushes and refused ones per address (CLIENT_REQUEST_LIMIT_PER_ADDRESS). */
  limits: RateLimits;
}

export const REQUEST_URI_PUSHED = "request_uri must not be pushed (RFC 9126 section 2.1)";
export const NOT_A_SIGN_IN_CLIENT = "The client is not registered for the authorization_code grant";

const text = (description: string, maxLength = 2000) => Type.Optional(Type.String({ maxLength, description }));

const PushForm = Type.Object(
  {
    response_type: text("`code`.", 64),
    client_id: text("The client; with HTTP Basic it may be left out (and must match if sent).", 200),
    client_secret: text("`client_secret_post` clients: the secret (never stored with the request).", 200),
    redirect_uri: text("One of the client's registered redirect URIs."),
    scope: text("Space-separated; `openid` required."),
    state: text("Returned to the client with the code.", 1000),
    nonce: text("Put in the ID token.", 1000),
    code_challenge: text("PKCE S256 challenge (43 characters): required.", 128),
    code_challenge_method: text("`S256`.", 16),
    prompt: text("`none`, `login`, `consent`.", 100),
    max_age: text("Seconds.", 20),
    login_hint: text("The e-mail to fill in on the sign-in page.", 320),
    acr_values: text("Space-separated.", 200),
    request_uri: text("Refused here (RFC 9126 section 2.1)."),
  },
  {
    $id: "PushedAuthorizationRequest",
    description:
      "RFC 9126 section 2.1: the authorization request's parameters (OpenID Connect Core 3.1.2.1), form-encoded, " +
      "with the client's authentication as at the token endpoint.",
  },
);

const PushedOut = Type.Object(
  {
    request_uri: Type.String({
      description: "Send the browser to the authorization endpoint with this and `client_id` only. Used once.",
      examples: ["urn:ietf:params:oauth:request_uri:6esc_11ACC5bwc014ltc14eY22c"],
    }),
    expires_in: Type.Integer({ description: "Seconds it can be used in.", examples: [60] }),
  },
  { $id: "PushedAuthorizationResponse", description: "RFC 9126 section 2.2." },
);

const oauthError = (description: string, codes: string[], example: string) =>
  Type.Object(
    {
      error: Type.Union(codes.map((code) => Type.Literal(code))),
      error_description: Type.String(),
      detail: Type.String(),
    },
    { description, examples: [{ error: codes[0], error_description: example, detail: example }] },
  );

// The metrics' name of this route's action (operations/observed-actions.ts).
const PUSH = { observed: "pushed_authorization_request" } as const;

export const parRoutes: FastifyPluginAsyncTypebox<ParRouteOptions> = async (
  app,
  { clients, pushedRequests, audit, cors, limits },
) => {
  // Browser apps of public clients push cross-origin, as they call the token endpoint.
  cors.apply(app, { [PUSHED_AUTHORIZATION_REQUEST_PATH]: ["POST"] });
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  app.setErrorHandler(async function pushErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const { status, detail, headers } = describeError(error, request);
    const oauth =
      error instanceof OAuthError
        ? error
        : // RFC 6749 section 5.2: a malformed request (a repeated or over-long field) is 400 invalid_request.
          new OAuthError(
            status === 422 ? 400 : status,
            status === 429 || status === 503
              ? "temporarily_unavailable"
              : status >= 500
                ? "server_error"
                : "invalid_request",
            detail,
            headers,
          );
    request.actionOutcome ??= oauth.error;
    // A refusal is counted against its address, and one over the limit is neither counted nor recorded:
    // a stream of refused pushes costs the store nothing beyond the limit.
    if (oauth.status < 500 && oauth.status !== 429) {
      await limits.countClientRequest(request.ip).catch(() => {});
      await audit.record("oidc", null, "par_refused", request.ip).catch(() => {});
    }
    renderOAuthError(oauth, reply);
    return reply;
  });

  app.post(
    PUSHED_AUTHORIZATION_REQUEST_PATH,
    {
      config: PUSH,
      schema: {
        operationId: "pushAuthorizationRequest",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Push an authorization request (RFC 9126)",
        description:
          "The client sends its authorization request here first, authenticating as at the token endpoint " +
          "(HTTP Basic, `client_id` and `client_secret` in the form, or a public client's `client_id` alone), " +
          "and gets a `request_uri` to send the browser to the authorization endpoint with, beside `client_id` " +
          "(other parameters there are ignored). The request is checked as the authorization endpoint checks " +
          "one: a registered redirect URI, `openid` and the client's scopes, `response_type=code`, PKCE with " +
          "S256. The `request_uri` is used once, within `expires_in` seconds " +
          "(`PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS`, 60 by default), on any instance. A client registered " +
          "with `require_pushed_authorization_requests` (or every client, under " +
          "`REQUIRE_PUSHED_AUTHORIZATION_REQUESTS=on`) can only use the authorization endpoint this way.",
        consumes: ["application/x-www-form-urlencoded"],
        body: PushForm,
        response: {
          201: PushedOut,
          400: oauthError(
            "The request would be refused by the authorization endpoint (RFC 6749 section 4.1.2.1's error), " +
              "carries a request_uri, or is malformed.",
            [
              "invalid_request",
              "invalid_scope",
              "unsupported_response_type",
              "unauthorized_client",
              "request_not_supported",
            ],
            REQUEST_URI_PUSHED,
          ),
          401: oauthError(
            "Client authentication failed (`WWW-Authenticate: Basic` after a Basic attempt).",
            ["invalid_client"],
            CLIENT_AUTHENTICATION_FAILED,
          ),
        },
      },
    },
    async function pushAuthorizationRequest(request, reply) {
      await limits.checkClientRequests(request.ip);
      const form = request.body as Record<string, string>;
      const presented = presentedClient(request.headers.authorization, form);
      if (presented === undefined) throw invalidClient(false);
      const client = await authenticatePresented(clients, presented);
      if (form.request_uri !== undefined) throw new OAuthError(400, "invalid_request", REQUEST_URI_PUSHED);
      if (!client.grantTypes.includes("authorization_code"))
        throw new OAuthError(400, "unauthorized_client", NOT_A_SIGN_IN_CLIENT);
      const { client_secret: _secret, ...parameters } = form;
      // The same reading as the authorization endpoint's; the client is the one that authenticated.
      const parsed = await parseAuthorizationRequest({ ...parameters, client_id: client.id }, clients);
      if ("problem" in parsed) {
        const { problem } = parsed;
        if (problem.show === "page") throw new OAuthError(400, "invalid_request", problem.detail);
        throw new OAuthError(400, problem.error, problem.description);
      }
      // A public client's push needs no secret: counted, so one address cannot fill the store.
      if (client.tokenEndpointAuthMethod === "none") await limits.countClientRequest(request.ip);
      const requestUri = await pushedRequests.push(client, parameters);
      await audit.record("oidc", null, "par_pushed", request.ip);
      request.actionOutcome = "pushed";
      reply.code(201);
      return { request_uri: requestUri, expires_in: pushedRequests.lifetimeSeconds };
    },
  );
};
