// Metadata for other services: GET /.well-known/jwks.json, the public keys
// that verify this service's access tokens (RFC 7517; empty under HS256,
// whose secret is never published), and GET
// /.well-known/oauth-authorization-server (RFC 8414). Both are public and
// cacheable: the key set briefly (max-age plus an ETag), so verifiers pick
// up a rotation soon; verifiers that meet an unknown kid refetch at once.
import { createHash } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Addresses } from "../addresses.ts";
import { type KeySet, publicJwkSet } from "../auth/keys.ts";
import { WEBAUTHN_GRANT } from "../auth/passkeys.ts";
import { NO_SECURITY } from "../docs.ts";
import { MFA_OTP_GRANT, MFA_RECOVERY_CODE_GRANT, MFA_WEBAUTHN_GRANT } from "../schemas.ts";

export interface WellKnownRouteOptions {
  keys: KeySet;
  addresses: Addresses;
}

/** Five minutes: short against the 30-minute token lifetime, so a rotation is seen well before old tokens expire. */
export const JWKS_MAX_AGE_SECONDS = 300;
export const METADATA_MAX_AGE_SECONDS = 3600;

const Jwk = Type.Object(
  {
    kty: Type.String({ examples: ["OKP"] }),
    crv: Type.String({ examples: ["Ed25519"] }),
    x: Type.String(),
    y: Type.Optional(Type.String({ description: "EC keys (ES256) only." })),
    kid: Type.String({ description: "RFC 7638 thumbprint; every access token names its key in the header's kid." }),
    alg: Type.String({ examples: ["EdDSA", "ES256"] }),
    use: Type.Literal("sig"),
  },
  { description: "A public signing key. Never a private part." },
);

const JwkSet = Type.Object(
  { keys: Type.Array(Jwk) },
  {
    $id: "JwkSet",
    description: "The keys that verify access tokens: the current one first, then those still accepted.",
  },
);

const Metadata = Type.Object(
  {
    issuer: Type.String(),
    token_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    introspection_endpoint: Type.String(),
    jwks_uri: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
    access_token_signing_alg_values_supported: Type.Array(Type.String()),
    service_documentation: Type.String(),
  },
  { $id: "AuthorizationServerMetadata", description: "RFC 8414 section 2." },
);

function etagOf(body: unknown): string {
  return `"${createHash("sha256").update(JSON.stringify(body)).digest("base64url").slice(0, 27)}"`;
}

export const wellKnownRoutes: FastifyPluginAsyncTypebox<WellKnownRouteOptions> = async (app, { keys, addresses }) => {
  const jwks = publicJwkSet(keys);
  const jwksEtag = etagOf(jwks);

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
          "The issuer of the access tokens, the token, revocation and introspection endpoints, the JWK Set URL, " +
          "the grants, the client authentication methods and the signing algorithm in use.",
        response: { 200: Metadata },
      },
    },
    async function describeServer(_request, reply) {
      const base = addresses.baseUrl();
      reply.header("cache-control", `public, max-age=${METADATA_MAX_AGE_SECONDS}`);
      return {
        issuer: addresses.issuer(),
        token_endpoint: `${base}/auth/token`,
        revocation_endpoint: `${base}/auth/revoke`,
        introspection_endpoint: `${base}/auth/introspect`,
        jwks_uri: `${base}/.well-known/jwks.json`,
        // RFC 8414 section 2: extension grants are named by their URIs.
        grant_types_supported: [
          "password",
          "refresh_token",
          MFA_OTP_GRANT,
          MFA_RECOVERY_CODE_GRANT,
          MFA_WEBAUTHN_GRANT,
          WEBAUTHN_GRANT,
        ],
        // No authorization endpoint, so no response types (RFC 8414 requires the member).
        response_types_supported: [],
        // First-party public clients: nothing to authenticate at the token and revocation endpoints.
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        // Resource servers listed in INTROSPECTION_CLIENTS use HTTP Basic (admins may also send their bearer
        // token, which has no registered method name).
        introspection_endpoint_auth_methods_supported: ["client_secret_basic"],
        access_token_signing_alg_values_supported: [keys.algorithm],
        service_documentation: `${base}/docs`,
      };
    },
  );
};
