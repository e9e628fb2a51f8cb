// POST /auth/register: dynamic client registration (RFC 7591), registered only
// when DYNAMIC_CLIENT_REGISTRATION is on. A registrant sends the initial
// access token of REGISTRATION_ACCESS_TOKEN as a bearer token (section 3:
// the protected registration the issue asks for; open registration is not
// offered) and RFC 7591 metadata as JSON; unknown metadata is ignored
// (section 2), and what the registrant may ask for is the policy's
// (oidc/registration-policy.ts: never first-party, the operator's grant
// types and scopes; its backchannel_logout_uri public and https, clients.ts).
// The answer is section 3.2.1's, the secret shown once; refusals are
// section 3.2.2's 400 `invalid_redirect_uri` or `invalid_client_metadata`,
// and RFC 6750's 401 for a missing or wrong initial access token.
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { OAuthError, renderOAuthError } from "../oauth-errors.ts";
import { describeError } from "../platform/error-handler.ts";
import { BEARER_SECURITY } from "../platform/openapi.ts";
import { ClientRegistration, ClientWithSecretOut } from "./client-schemas.ts";
import { type ClientRegistry, clientMetadata, InvalidClientMetadata } from "./clients.ts";
import { withSecret } from "./present.ts";
import { admitRegistration, type DynamicRegistrationPolicy } from "./registration-policy.ts";

export const REGISTRATION_PATH = "/auth/register";
export const REGISTRATION_TOKEN_REFUSED = "Registration needs the initial access token";

export interface RegistrationRouteOptions {
  clients: ClientRegistry;
  initialAccessToken: string;
  /** The grant types and scopes a registrant may ask for (DYNAMIC_CLIENT_GRANT_TYPES, DYNAMIC_CLIENT_SCOPES). */
  policy: DynamicRegistrationPolicy;
}

const digest = (value: string) => createHash("sha256").update(value).digest();

const oauthError = (description: string, codes: string[], example: string) =>
  Type.Object(
    {
      error: Type.Union(codes.map((code) => Type.Literal(code))),
      error_description: Type.String(),
      detail: Type.String(),
    },
    { description, examples: [{ error: codes[0], error_description: example, detail: example }] },
  );

export const registrationRoutes: FastifyPluginAsyncTypebox<RegistrationRouteOptions> = async (
  app,
  { clients, initialAccessToken, policy },
) => {
  const expected = digest(initialAccessToken);

  app.setErrorHandler(function registrationErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    if (error instanceof OAuthError) return renderOAuthError(error, reply);
    if (error instanceof InvalidClientMetadata)
      return renderOAuthError(new OAuthError(400, error.code, error.detail), reply);
    const { status, detail, headers } = describeError(error, request);
    // RFC 7591 section 3.2.2: metadata of the wrong shape is invalid_client_metadata too.
    const code = status === 422 ? "invalid_client_metadata" : status >= 500 ? "server_error" : "invalid_request";
    renderOAuthError(new OAuthError(status === 422 ? 400 : status, code, detail, headers), reply);
  });

  /** RFC 6750: no token, no error code; a wrong one, invalid_token. Compared as digests, in constant time. */
  function checkInitialAccessToken(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
    const header = request.headers.authorization;
    const match = header === undefined ? null : /^bearer +(\S+) *$/i.exec(header);
    if (match === null)
      return done(new OAuthError(401, "invalid_token", REGISTRATION_TOKEN_REFUSED, { "www-authenticate": "Bearer" }));
    if (!timingSafeEqual(digest(match[1] as string), expected))
      return done(
        new OAuthError(401, "invalid_token", REGISTRATION_TOKEN_REFUSED, {
          "www-authenticate": 'Bearer error="invalid_token"',
        }),
      );
    done();
  }

  app.post(
    REGISTRATION_PATH,
    {
      // Before the body is validated: a stranger learns nothing about what the metadata lacks.
      preValidation: [checkInitialAccessToken],
      schema: {
        operationId: "registerClient",
        tags: ["clients"],
        summary: "Dynamic client registration (RFC 7591)",
        description:
          "On only with DYNAMIC_CLIENT_REGISTRATION=on. Send the initial access token (REGISTRATION_ACCESS_TOKEN) " +
          "as a bearer token and the client's RFC 7591 metadata as JSON; unknown metadata is ignored, and a client " +
          "registered here is never first-party. Grant types must be among DYNAMIC_CLIENT_GRANT_TYPES " +
          "(`authorization_code`, `refresh_token` by default) and the scope among DYNAMIC_CLIENT_SCOPES (`openid " +
          "profile email offline_access` by default): anything else is refused (400 `invalid_client_metadata`). A " +
          "`backchannel_logout_uri` must be https to a public address. The answer carries the `client_secret` " +
          "(confidential clients) this once.",
        security: BEARER_SECURITY,
        body: ClientRegistration,
        response: {
          201: ClientWithSecretOut,
          400: oauthError(
            "The metadata breaks a rule (RFC 7591 section 3.2.2).",
            ["invalid_redirect_uri", "invalid_client_metadata", "invalid_request"],
            "redirect_uris: must not have a fragment",
          ),
          401: oauthError(
            "No initial access token, or a wrong one (RFC 6750).",
            ["invalid_token"],
            REGISTRATION_TOKEN_REFUSED,
          ),
          415: oauthError("The body is not JSON.", ["invalid_request"], "Unsupported Media Type"),
        },
      },
    },
    async function registerClient(request, reply) {
      const registered = await clients.register(
        clientMetadata(admitRegistration(request.body, policy)),
        { userId: null, clientAddress: request.ip },
        "dynamic",
      );
      reply.code(201).header("location", `/clients/${registered.client.id}`);
      return withSecret(registered);
    },
  );
};
