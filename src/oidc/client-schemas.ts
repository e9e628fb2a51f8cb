// The schemas of OAuth clients, declared once for validation, OpenAPI and
// serialisation: RFC 7591's metadata names in (what an admin may set, and
// what a dynamic registration may send), RFC 7591 section 3.2.1's response
// fields out (client_id, client_id_issued_at, client_secret_expires_at 0,
// client_secret once). Types only: the rules (redirect URIs, grant types and
// methods that go together) are clients.ts's, with messages that say why.
import { type Static, Type } from "typebox";
import { MAX_REDIRECT_URIS, MAX_RESOURCES, MAX_SECRET_GRACE_SECONDS, MAX_URI_LENGTH } from "./clients.ts";

const Uri = Type.String({ minLength: 1, maxLength: MAX_URI_LENGTH });
const UriList = (description: string, examples: string[]) =>
  Type.Array(Uri, { maxItems: MAX_REDIRECT_URIS, description, examples: [examples] });

/** RFC 7591 section 2 metadata, as an admin sets it (POST and PUT /clients). */
const metadataFields = {
  client_name: Type.String({
    minLength: 1,
    maxLength: 200,
    description: "Shown to people on the consent page.",
    examples: ["Grafana"],
  }),
  redirect_uris: Type.Optional(
    UriList(
      "Where the browser may be sent back with a code, matched exactly. https; http only on a loopback host " +
        "(127.0.0.1 and [::1] on any port, RFC 8252 section 7.3); a private-use scheme (`com.example.app:/cb`) " +
        "only for a public client. No fragment, no wildcard. Required with `authorization_code`.",
      ["https://grafana.example.com/login/generic_oauth"],
    ),
  ),
  post_logout_redirect_uris: Type.Optional(
    UriList("Where RP-initiated logout may send the browser back (same rules).", ["https://grafana.example.com/"]),
  ),
  grant_types: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), {
      maxItems: 4,
      description:
        "`authorization_code` (the default), `refresh_token` (with it, or with the device grant), " +
        "`client_credentials` (confidential clients only), `urn:ietf:params:oauth:grant-type:device_code` " +
        "(RFC 8628: a device without a browser; public or confidential).",
      examples: [["authorization_code", "refresh_token"]],
    }),
  ),
  response_types: Type.Optional(
    Type.Array(Type.String({ maxLength: 64 }), {
      maxItems: 1,
      description: "`code` with `authorization_code` (the default then); empty otherwise.",
      examples: [["code"]],
    }),
  ),
  token_endpoint_auth_method: Type.Optional(
    Type.String({
      maxLength: 64,
      description:
        "`client_secret_basic` (the default), `client_secret_post`, or `none` for a public client (a browser or " +
        "native app: no secret, PKCE required). Fixed once registered between public and confidential.",
      examples: ["client_secret_basic"],
    }),
  ),
  scope: Type.Optional(
    Type.String({
      maxLength: 1000,
      description:
        "The scopes the client may ask for, space-separated; `openid profile email` by default for a client " +
        "that signs users in, none otherwise.",
      examples: ["openid profile email"],
    }),
  ),
  backchannel_logout_uri: Type.Optional(
    Type.Union([Uri, Type.Null()], {
      description:
        "Where logout tokens are POSTed when a user's session with the client ends, by any route (OpenID Connect " +
        "Back-Channel Logout 1.0): `logout_token` form-encoded, signed RS256 (`typ: logout+jwt`), always with `sid`. " +
        "https to a public address, checked here and at every delivery; private addresses, and plain http to a " +
        "loopback host, only for a client registered by an admin while WEBHOOK_REFUSE_PRIVATE_ADDRESSES is off. No " +
        "user name or password.",
    }),
  ),
  first_party: Type.Optional(
    Type.Boolean({ description: "The deployment's own app: users are not asked for consent. False by default." }),
  ),
  resources: Type.Optional(
    Type.Array(Uri, {
      maxItems: MAX_RESOURCES,
      description:
        "RFC 8707 resource indicators: the resource servers (absolute https URIs, or http on a loopback host; no " +
        "fragment) whose identifier the client's access tokens may carry as `aud`. Left out: none. A token names " +
        "all of them, or the one asked for with `resource` at the token endpoint. Never the service's own " +
        "audience. Admins only.",
      examples: [["https://invoices.example.com"]],
    }),
  ),
  resource_server: Type.Optional(
    Type.Boolean({
      description:
        "A resource server: may introspect every token (`POST /auth/introspect`), as the clients of " +
        "`INTROSPECTION_CLIENTS` do; other clients see only the tokens issued to them. False by default. Admins only.",
    }),
  ),
  // Issue 36, PAR.
  require_pushed_authorization_requests: Type.Optional(
    Type.Boolean({
      description:
        "RFC 9126 section 6: the client's authorization requests must be pushed first (`POST /oauth/par`); a " +
        "plain request to the authorization endpoint is refused (`invalid_request`). False by default (true for " +
        "every client under `REQUIRE_PUSHED_AUTHORIZATION_REQUESTS=on`). A dynamic registration may set it too.",
    }),
  ),
  dpop_bound_access_tokens: Type.Optional(
    Type.Boolean({
      description:
        "RFC 9449 section 5.2: every token request of the client must carry a DPoP proof (`invalid_dpop_proof` " +
        "otherwise), so all its tokens are DPoP-bound. False by default.",
    }),
  ),
  // Issue 37, branding.
  brand_color: Type.Optional(
    Type.Union([Type.String({ maxLength: 7, examples: ["#0f766e"] }), Type.Null()], {
      description:
        "Issue 37: the colour of the sign-in and consent pages of the client's authorization requests, `#RRGGBB`; " +
        "refused unless white text on it, and it as link text on the page background, reach WCAG AA contrast " +
        "(4.5:1). Shown with its logo (`PUT /clients/{id}/logo`; `logo_uri` is never fetched) and its name. A " +
        "dynamic registration may set it too. Null or left out: the service's brand.",
    }),
  ),
};

export const ClientCreate = Type.Object(metadataFields, {
  $id: "ClientCreate",
  additionalProperties: false,
  description: "A client's metadata (RFC 7591 names); a field left out takes its default.",
});
export type ClientCreate = Static<typeof ClientCreate>;

export const ClientPatch = Type.Object(
  { ...metadataFields, client_name: Type.Optional(metadataFields.client_name) },
  {
    $id: "ClientPatch",
    additionalProperties: false,
    description: "Only the fields sent change; the result is checked as a whole.",
  },
);
export type ClientPatch = Static<typeof ClientPatch>;

/**
 * What a dynamic registration may send (RFC 7591 section 2): a relying party's own metadata, under
 * the same names. `first_party`, and any field only admins set, is not the registrant's: it is not
 * listed, and like other unknown metadata it is ignored (section 2: "MUST ignore"), whatever its value.
 */
export const ClientRegistration = Type.Object(
  {
    client_name: Type.Optional(metadataFields.client_name),
    redirect_uris: metadataFields.redirect_uris,
    post_logout_redirect_uris: metadataFields.post_logout_redirect_uris,
    grant_types: metadataFields.grant_types,
    response_types: metadataFields.response_types,
    token_endpoint_auth_method: metadataFields.token_endpoint_auth_method,
    scope: metadataFields.scope,
    backchannel_logout_uri: metadataFields.backchannel_logout_uri,
    require_pushed_authorization_requests: metadataFields.require_pushed_authorization_requests,
    dpop_bound_access_tokens: metadataFields.dpop_bound_access_tokens,
    brand_color: metadataFields.brand_color,
  },
  { $id: "ClientRegistration", description: "RFC 7591 client metadata; unknown fields are ignored." },
);
export type ClientRegistration = Static<typeof ClientRegistration>;

const clientOutFields = {
  client_id: Type.String({ format: "uuid", examples: ["0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"] }),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  scope: Type.String(),
  backchannel_logout_uri: Type.Union([Type.String(), Type.Null()]),
  first_party: Type.Boolean(),
  resources: Type.Array(Type.String()),
  resource_server: Type.Boolean(),
  require_pushed_authorization_requests: Type.Boolean(),
  dpop_bound_access_tokens: Type.Boolean(),
  brand_color: Type.Optional(Type.String({ description: "Only when set (issue 37)." })),
  client_id_issued_at: Type.Integer({ description: "Seconds since the epoch (RFC 7591 section 3.2.1)." }),
  client_secret_expires_at: Type.Optional(
    Type.Integer({ description: "0: the secret does not expire (confidential clients only)." }),
  ),
  previous_secret_expires_at: Type.Optional(
    Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
      description: "After a rotation: until when the previous secret still works (null: it does not).",
    }),
  ),
  registered_by: Type.String({ description: "`admin`, or `dynamic` (RFC 7591 registration)." }),
};

export const ClientOut = Type.Object(clientOutFields, {
  $id: "Client",
  description: "A registered client; never its secret.",
});
export type ClientOut = Static<typeof ClientOut>;

export const ClientWithSecretOut = Type.Object(
  {
    ...clientOutFields,
    client_secret: Type.Optional(
      Type.String({
        description:
          "Shown this once (confidential clients): store it now. Only its hash is kept; a lost secret is replaced " +
          "by a rotation.",
      }),
    ),
  },
  { $id: "ClientWithSecret", description: "The client, with its new secret (confidential clients) shown once." },
);

export const ClientPage = Type.Object(
  {
    items: Type.Array(ClientOut),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: "Pass as `cursor` for the next page." }),
    next: Type.Union([Type.String(), Type.Null()], { description: "The next page's path, or null." }),
  },
  { $id: "ClientPage", description: "Clients in creation order." },
);

export const ClientListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ format: "uuid" })),
  },
  { additionalProperties: false },
);

export const ClientIdParams = Type.Object({ id: Type.String({ format: "uuid", description: "The client_id." }) });

export const SecretRotation = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_SECRET_GRACE_SECONDS,
        default: 0,
        description:
          "How long the current secret keeps working beside the new one, so the client's deployments can be " +
          "updated; 0 (the default) ends it at once (a leaked secret). At most 30 days.",
        examples: [86_400],
      }),
    ),
  },
  { $id: "SecretRotation", additionalProperties: false },
);
export type SecretRotation = Static<typeof SecretRotation>;
