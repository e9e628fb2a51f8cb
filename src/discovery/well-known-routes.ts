// Metadata for other services: GET /.well-known/jwks.json, the public keys
// that verify this service's access tokens (RFC 7517; empty under HS256,
// whose secret is never published), and GET
// /.well-known/oauth-authorization-server (RFC 8414). Both are public and
// cacheable: the key set briefly (max-age plus an ETag), so verifiers pick
// up a rotation soon; verifiers that meet an unknown kid refetch at once.
import { createHash } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { type KeySet, publicJwkSet } from "../auth/keys.ts";
import { DEVICE_AUTHORIZATION_PATH } from "../device/paths.ts";
import { DPOP_SIGNING_ALGORITHMS } from "../dpop/proof.ts";
import { PROMPTS, SUPPORTED_SCOPES } from "../oidc/authorization.ts";
import { DEVICE_CODE_GRANT_TYPE } from "../oidc/clients.ts";
import type { ClientCors } from "../oidc/cors.ts";
import { ACR_MULTI_FACTOR, ACR_SINGLE_FACTOR } from "../oidc/id-tokens.ts";
import { AUTHORIZE_PATH, END_SESSION_PATH, PUSHED_AUTHORIZATION_REQUEST_PATH, USERINFO_PATH } from "../oidc/paths.ts";
import { REGISTRATION_PATH } from "../oidc/registration-routes.ts";
import type { Addresses } from "../platform/addresses.ts";
import { NO_SECURITY } from "../platform/openapi.ts";

export interface WellKnownRouteOptions {
  keys: KeySet;
  addresses: Addresses;
  /** The RSA keys of ID tokens, when OpenID Connect is on: published too, and discovery is served. */
  oidcKeys?: KeySet;
  /** CORS for registered public clients' origins (browser apps read discovery and the key set). */
  cors?: ClientCors;
  /**
   * Every grant_type the token endpoint answers (its grant table, core/grants/registry.ts), read when
   * the metadata is asked for: the capabilities add their grants as they install, after this.
   */
  grantTypes: () => readonly string[];
  /** Whether dynamic client registration is on: then the metadata names its endpoint. */
  registration: boolean;
  /** REQUIRE_PUSHED_AUTHORIZATION_REQUESTS (issue 36, RFC 9126 section 5). */
  requirePushedAuthorizationRequests?: boolean;
}

/** Five minutes: short against the 30-minute token lifetime, so a rotation is seen well before old tokens expire. */
export const JWKS_MAX_AGE_SECONDS = 300;
export const METADATA_MAX_AGE_SECONDS = 3600;

const Jwk = Type.Object(
  {
    kty: Type.String({ examples: ["OKP"] }),
    crv: Type.Optional(Type.String({ examples: ["Ed25519"], description: "OKP and EC keys." })),
    x: Type.Optional(Type.String({ description: "OKP and EC keys." })),
    y: Type.Optional(Type.String({ description: "EC keys (ES256) only." })),
    n: Type.Optional(Type.String({ description: "RSA keys (RS256, ID tokens) only: the modulus." })),
    e: Type.Optional(Type.String({ description: "RSA keys (RS256, ID tokens) only: the exponent." })),
    kid: Type.String({ description: "RFC 7638 thumbprint; every access token names its key in the header's kid." }),
    alg: Type.String({ examples: ["EdDSA", "ES256", "RS256"] }),
    use: Type.Literal("sig"),
  },
  { description: "A public signing key. Never a private part." },
);

const JwkSet = Type.Object(
  { keys: Type.Array(Jwk) },
  {
    $id: "JwkSet",
    description:
      "The keys that verify access tokens (EdDSA or ES256), then those that verify ID tokens (RS256): within " +
      "each, the current one first, then those still accepted.",
  },
);

/** The members of RFC 8414 section 2 this service serves; OpenID Connect Discovery shares them. */
const oauthMembers = {
  issuer: Type.String(),
  authorization_endpoint: Type.Optional(Type.String({ description: "While OpenID Connect is on." })),
  token_endpoint: Type.String(),
  jwks_uri: Type.String(),
  registration_endpoint: Type.Optional(
    Type.String({ description: "While dynamic client registration is on (DYNAMIC_CLIENT_REGISTRATION=on)." }),
  ),
  scopes_supported: Type.Optional(Type.Array(Type.String(), { description: "While OpenID Connect is on." })),
  response_types_supported: Type.Array(Type.String(), {
    description: '`["code"]` while OpenID Connect is on; otherwise empty (no authorization endpoint).',
  }),
  response_modes_supported: Type.Optional(Type.Array(Type.String())),
  grant_types_supported: Type.Array(Type.String(), {
    description: "Every grant the token endpoint answers; extension grants by their URIs.",
  }),
  token_endpoint_auth_methods_supported: Type.Array(Type.String()),
  service_documentation: Type.String(),
  revocation_endpoint: Type.String(),
  revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
  introspection_endpoint: Type.String(),
  // Issue 36, the device authorization grant (RFC 8628 section 4).
  device_authorization_endpoint: Type.Optional(
    Type.String({ description: "While the device grant is served (with OpenID Connect)." }),
  ),
  introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
  code_challenge_methods_supported: Type.Optional(Type.Array(Type.String())),
  authorization_response_iss_parameter_supported: Type.Optional(Type.Boolean({ description: "RFC 9207." })),
  access_token_signing_alg_values_supported: Type.Array(Type.String(), {
    description: "The algorithm of the service's own access tokens (SIGNING_ALGORITHM).",
  }),
  // Issue 36, PAR (RFC 9126 section 5).
  pushed_authorization_request_endpoint: Type.Optional(Type.String({ description: "While OpenID Connect is on." })),
  require_pushed_authorization_requests: Type.Optional(
    Type.Boolean({ description: "While OpenID Connect is on: REQUIRE_PUSHED_AUTHORIZATION_REQUESTS." }),
  ),
  dpop_signing_alg_values_supported: Type.Array(Type.String(), {
    description: "RFC 9449 section 5.1: the algorithms a DPoP proof may be signed with.",
  }),
};

const Metadata = Type.Object(oauthMembers, {
  $id: "AuthorizationServerMetadata",
  description: "RFC 8414 section 2: what is served, the same as in the OpenID configuration.",
});

const OpenIdConfiguration = Type.Object(
  {
    ...oauthMembers,
    authorization_endpoint: Type.String(),
    scopes_supported: Type.Array(Type.String()),
    response_modes_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    userinfo_endpoint: Type.String(),
    end_session_endpoint: Type.String(),
    subject_types_supported: Type.Array(Type.String()),
    id_token_signing_alg_values_supported: Type.Array(Type.String()),
    claims_supported: Type.Array(Type.String()),
    prompt_values_supported: Type.Array(Type.String()),
    acr_values_supported: Type.Array(Type.String()),
    claims_parameter_supported: Type.Boolean(),
    request_parameter_supported: Type.Boolean(),
    request_uri_parameter_supported: Type.Boolean(),
    backchannel_logout_supported: Type.Boolean(),
    backchannel_logout_session_supported: Type.Boolean(),
  },
  {
    $id: "OpenIdConfiguration",
    description: "OpenID Connect Discovery 1.0 section 3: the RFC 8414 metadata plus OpenID Connect's own members.",
  },
);

/** Client authentication at the token and revocation endpoints: any registered client's method. */
const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"];

function etagOf(body: unknown): string {
  return `"${createHash("sha256").update(JSON.stringify(body)).digest("base64url").slice(0, 27)}"`;
}

export const wellKnownRoutes: FastifyPluginAsyncTypebox<WellKnownRouteOptions> = async (
  app,
  { keys, addresses, oidcKeys, cors, grantTypes, registration, requirePushedAuthorizationRequests },
) => {
  cors?.apply(app, {
    "/.well-known/jwks.json": ["GET"],
    ...(oidcKeys ? { "/.well-known/openid-configuration": ["GET"] } : {}),
  });
  const jwks = oidcKeys ? publicJwkSet(keys, oidcKeys) : publicJwkSet(keys);
  const jwksEtag = etagOf(jwks);

  /**
   * RFC 8414 metadata, true to what is served: every grant of the token endpoint, the client
   * authentication methods, and the authorization endpoint and registration endpoint while they are on.
   */
  function oauthMetadata() {
    const base = addresses.baseUrl();
    return {
      issuer: addresses.issuer(),
      ...(oidcKeys ? { authorization_endpoint: `${base}${AUTHORIZE_PATH}` } : {}),
      token_endpoint: `${base}/auth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      ...(registration ? { registration_endpoint: `${base}${REGISTRATION_PATH}` } : {}),
      ...(oidcKeys
        ? {
            scopes_supported: [...SUPPORTED_SCOPES],
            response_types_supported: ["code"],
            response_modes_supported: ["query"],
          }
        : // No authorization endpoint, so no response types (RFC 8414 requires the member).
          { response_types_supported: [] }),
      grant_types_supported: [...grantTypes()],
      token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      service_documentation: `${base}/docs`,
      revocation_endpoint: `${base}/auth/revoke`,
      // The spec's first-party apps send nothing (none); registered clients authenticate as they registered.
      revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      introspection_endpoint: `${base}/auth/introspect`,
      // Issue 36: the device grant's endpoint, while the token endpoint answers that grant.
      ...(grantTypes().includes(DEVICE_CODE_GRANT_TYPE)
        ? { device_authorization_endpoint: `${base}${DEVICE_AUTHORIZATION_PATH}` }
        : {}),
      // INTROSPECTION_CLIENTS use Basic; registered confidential clients either method (admins may also send
      // their bearer token, which has no registered method name). Public clients may not introspect.
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      ...(oidcKeys
        ? { code_challenge_methods_supported: ["S256"], authorization_response_iss_parameter_supported: true }
        : {}),
      access_token_signing_alg_values_supported: [keys.algorithm],
      // Issue 36, PAR (RFC 9126 section 5).
      ...(oidcKeys
        ? {
            pushed_authorization_request_endpoint: `${base}${PUSHED_AUTHORIZATION_REQUEST_PATH}`,
            require_pushed_authorization_requests: requirePushedAuthorizationRequests ?? false,
          }
        : {}),
      // Issue 36: DPoP proofs, at the token endpoint and with DPoP-bound tokens at the API and userinfo.
      dpop_signing_alg_values_supported: [...DPOP_SIGNING_ALGORITHMS],
    };
  }

  app.get(
    "/.well-known/jwks.json",
    {
      schema: {
        operationId: "jwks",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Public keys that verify access tokens (JWK Set)",
        description:
          "RFC 7517. Under EdDSA or ES256, the public key that signs and every older key still accepted, each with " +
          "its `kid`. Under HS256 (the default) an empty set: that secret is shared, never published. Cacheable " +
          `for ${JWKS_MAX_AGE_SECONDS} seconds, with an ETag; fetch again when a token names an unknown kid.`,
        response: {
          200: JwkSet,
          304: { type: "null", description: "Not modified (If-None-Match matched the ETag)." },
        },
      },
    },
    async function publishKeys(request, reply) {
      reply.header("cache-control", `public, max-age=${JWKS_MAX_AGE_SECONDS}`).header("etag", jwksEtag);
      if (request.headers["if-none-match"] === jwksEtag) return reply.code(304).send(null);
      return jwks;
    },
  );

  app.get(
    "/.well-known/oauth-authorization-server",
    {
      schema: {
        operationId: "authorizationServerMetadata",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "OAuth 2.0 authorization server metadata (RFC 8414)",
        description:
          "What is served: the issuer, the token, revocation and introspection endpoints, the JWK Set URL, every " +
          "grant the token endpoint answers, the client authentication methods, the access tokens' signing " +
          "algorithm; while OpenID Connect is on, the authorization endpoint, its scopes, response type and PKCE " +
          "method; while dynamic client registration is on, its endpoint. The same values as the OpenID " +
          "configuration, which adds OpenID Connect's own members.",
        response: { 200: Metadata },
      },
    },
    async function describeServer(_request, reply) {
      reply.header("cache-control", `public, max-age=${METADATA_MAX_AGE_SECONDS}`);
      return oauthMetadata();
    },
  );

  if (oidcKeys === undefined) return;
  app.get(
    "/.well-known/openid-configuration",
    {
      schema: {
        operationId: "openidConfiguration",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "OpenID Connect Discovery",
        description:
          "What an OpenID Connect relying party needs: the issuer (PUBLIC_URL, or TOKEN_ISSUER; without either, " +
          "the listen address, which only works for a relying party on this machine), the endpoints, and what " +
          "they support. Served only while OpenID Connect is on (an RSA key for ID tokens).",
        response: { 200: OpenIdConfiguration },
      },
    },
    async function describeProvider(_request, reply) {
      const base = addresses.baseUrl();
      reply.header("cache-control", `public, max-age=${METADATA_MAX_AGE_SECONDS}`);
      return {
        ...oauthMetadata(),
        authorization_endpoint: `${base}${AUTHORIZE_PATH}`,
        scopes_supported: [...SUPPORTED_SCOPES],
        response_modes_supported: ["query"],
        code_challenge_methods_supported: ["S256"],
        authorization_response_iss_parameter_supported: true,
        userinfo_endpoint: `${base}${USERINFO_PATH}`,
        end_session_endpoint: `${base}${END_SESSION_PATH}`,
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        claims_supported: [
          "sub",
          "iss",
          "aud",
          "exp",
          "iat",
          "auth_time",
          "nonce",
          "amr",
          "acr",
          "at_hash",
          "sid",
          "name",
          "updated_at",
          "email",
          "email_verified",
        ],
        prompt_values_supported: [...PROMPTS],
        acr_values_supported: [ACR_SINGLE_FACTOR, ACR_MULTI_FACTOR],
        claims_parameter_supported: false,
        request_parameter_supported: false,
        request_uri_parameter_supported: false,
        // Back-Channel Logout 1.0: logout tokens always carry sid (the browser session the ID token named).
        backchannel_logout_supported: true,
        backchannel_logout_session_supported: true,
      };
    },
  );
};
