// The token endpoint's shapes: its form (every grant's fields, with what
// each grant requires as the server enforces it), its answers (a user's
// tokens, a client's token, the second-factor challenge) and the revocation
// form. The extension grants' grant_type values are named here too.
import { type Static, Type } from "typebox";
import { PASSWORD_MAX_LENGTH } from "../auth/password-policy.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS } from "../auth/tokens.ts";
import { ErrorBody } from "../platform/openapi.ts";

/** Extension grants (RFC 6749 section 4.5) that answer the password grant's second-factor challenge. */
export const MFA_OTP_GRANT = "urn:user-token-service:grant-type:mfa-otp";
/** Sign-in with an upstream provider (issue 25): the sign-in page spends the callback's ticket here. */
export const UPSTREAM_GRANT = "urn:user-token-service:grant-type:upstream";
/** Sign-in by mail (issue 37): the mail's 6-digit code, or its link's token. */
export const MAIL_CODE_GRANT = "urn:user-token-service:grant-type:mail-code";
export const MAIL_LINK_GRANT = "urn:user-token-service:grant-type:mail-link";
export const MFA_RECOVERY_CODE_GRANT = "urn:user-token-service:grant-type:mfa-recovery-code";
/** A passkey as the second factor: `mfa_token` + `webauthn_response` (auth/passkeys.ts verifies it). */
export const MFA_WEBAUTHN_GRANT = "urn:user-token-service:grant-type:mfa-webauthn";

/**
 * What each grant requires, as the server enforces it: the password grant (also when grant_type is
 * left out) needs username and password; the refresh grant needs refresh_token; any other
 * grant_type is answered 400 unsupported_grant_type by the handler. Empty fields count as missing.
 */
const GRANT_REQUIREMENTS = {
  if: { properties: { grant_type: { const: "refresh_token" } }, required: ["grant_type"] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keywords, not a thenable.
  then: { required: ["refresh_token"] },
  else: {
    if: { properties: { grant_type: { const: "password" } } },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keywords, not a thenable.
    then: { required: ["username", "password"] },
  },
};

export const TokenForm = Type.Object(
  {
    grant_type: Type.Optional(
      Type.String({
        description:
          "`password` (the default when left out), `refresh_token`, after a 403 `mfa_required` answer " +
          `\`${MFA_OTP_GRANT}\`, \`${MFA_RECOVERY_CODE_GRANT}\` or \`${MFA_WEBAUTHN_GRANT}\` (a passkey as the ` +
          "second factor: `mfa_token`, `webauthn_response`), or `urn:user-token-service:grant-type:webauthn` (a " +
          "passkey alone: `challenge_id`, `webauthn_response`). Registered clients: `authorization_code`, " +
          "`client_credentials`, and `urn:ietf:params:oauth:grant-type:device_code` (RFC 8628: `device_code`; " +
          "400 `authorization_pending`, `slow_down`, `access_denied` or `expired_token` until the tokens). Any " +
          "other value is answered 400 `unsupported_grant_type`.",
        examples: ["password", "refresh_token", MFA_OTP_GRANT, "urn:user-token-service:grant-type:webauthn"],
      }),
    ),
    username: Type.Optional(
      Type.String({
        maxLength: 320,
        description: "Password grant, required: the user's e-mail (OAuth 2.0 calls the field username).",
        examples: ["ada@example.com"],
      }),
    ),
    password: Type.Optional(
      Type.String({
        maxLength: PASSWORD_MAX_LENGTH,
        description: "Password grant, required: the password.",
        examples: ["correct horse battery staple"],
      }),
    ),
    refresh_token: Type.Optional(
      Type.String({
        maxLength: 512,
        description: "Refresh grant (RFC 6749 section 6), required: the refresh token to spend.",
      }),
    ),
    challenge_id: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "Passkey grants: the `challenge_id` of `POST /auth/webauthn/authentication-options` (required for the " +
          "`webauthn` grant; for `mfa-webauthn` optional, the signed challenge names it).",
      }),
    ),
    webauthn_response: Type.Optional(
      Type.String({
        maxLength: 8192,
        description:
          "Passkey grants, required: the assertion from `navigator.credentials.get()` as JSON text (its `toJSON()`, " +
          "or @simplewebauthn/browser's `startAuthentication()`).",
      }),
    ),
    upstream_ticket: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          `\`${UPSTREAM_GRANT}\`, required: the one-use ticket the upstream sign-in's callback handed to the ` +
          "sign-in page (two minutes, and only from the browser that started the sign-in).",
      }),
    ),
    mfa_token: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          "Second-factor grants, required: the `mfa_token` of the password grant's 403 `mfa_required` answer.",
      }),
    ),
    otp: Type.Optional(
      Type.String({
        maxLength: 16,
        description: `Grant \`${MFA_OTP_GRANT}\`, required: the six-digit code of the authenticator app.`,
        examples: ["123456"],
      }),
    ),
    recovery_code: Type.Optional(
      Type.String({
        maxLength: 64,
        description: `Grant \`${MFA_RECOVERY_CODE_GRANT}\`, required: one unused recovery code (dashes optional).`,
        examples: ["7q2x-m9kd-4vbn"],
      }),
    ),
    code: Type.Optional(
      Type.String({
        maxLength: 256,
        description:
          "`authorization_code` grant, required: the code (OpenID Connect). `urn:user-token-service:grant-type:mail-code`, " +
          "required: the 6-digit code of the sign-in mail.",
      }),
    ),
    attempt: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "Sign-in by mail (`...:mail-code`, `...:mail-link`), required: the `attempt` of `POST /auth/mail-sign-in`.",
      }),
    ),
    token: Type.Optional(
      Type.String({
        maxLength: 128,
        description: "`urn:user-token-service:grant-type:mail-link`, required: the token in the link's fragment.",
      }),
    ),
    confirm: Type.Optional(
      Type.String({
        maxLength: 8,
        description:
          "`urn:user-token-service:grant-type:mail-link`: `true` when the person confirmed on the page that they " +
          "asked for the link (needed when the browser is not the one that asked).",
      }),
    ),
    redirect_uri: Type.Optional(
      Type.String({
        maxLength: 2048,
        description: "`authorization_code` grant, required: the redirect URI of the authorization request.",
      }),
    ),
    code_verifier: Type.Optional(
      Type.String({
        maxLength: 128,
        description: "`authorization_code` grant, required: the PKCE verifier (RFC 7636) of the S256 challenge.",
      }),
    ),
    device_code: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          "`urn:ietf:params:oauth:grant-type:device_code` (RFC 8628), required: the `device_code` of the device " +
          "authorization answer.",
      }),
    ),
    scope: Type.Optional(
      Type.String({
        description:
          "`client_credentials`: the scopes asked for, space-separated, within the client's registered scope " +
          "(left out: all of it). Accepted and ignored by the spec's grants.",
      }),
    ),
    resource: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          "Registered clients' grants (RFC 8707): the one resource server the access token is for, among the " +
          "`resources` the admin registered for the client (`invalid_target` otherwise); left out, all of them. " +
          "The token's `aud` names it. Accepted and ignored by the spec's grants.",
        examples: ["https://invoices.example.com"],
      }),
    ),
    client_id: Type.Optional(
      Type.String({
        description:
          "`client_credentials` (and the grants of registered clients): the client, with `client_secret` " +
          "(`client_secret_post`) or alone (a public client, `none`). Accepted and ignored by the spec's grants " +
          "(first-party clients only).",
      }),
    ),
    client_secret: Type.Optional(
      Type.String({
        description: "`client_secret_post`: the client's secret. Accepted and ignored by the spec's grants.",
      }),
    ),
  },
  {
    $id: "TokenForm",
    description:
      "OAuth 2.0 password grant (RFC 6749 section 4.3.2: `username`, `password`) or refresh grant " +
      "(section 6: `grant_type=refresh_token`, `refresh_token`), form-encoded; for an account with a second " +
      "factor, a second-factor grant (`mfa_token` with `otp` or `recovery_code`). An empty field counts as " +
      "missing; a repeated field is refused (400).",
    ...GRANT_REQUIREMENTS,
  },
);
export type TokenForm = Static<typeof TokenForm>;

/** `bearer` (the spec's), or `DPoP` for tokens issued with a DPoP proof (RFC 9449 section 5). */
const TokenType = Type.Union([Type.Literal("bearer"), Type.Literal("DPoP")], {
  description:
    "`bearer`; `DPoP` when the request carried a DPoP proof (RFC 9449): the access token is then bound to the " +
    "proof's key (`cnf.jkt`) and is sent as `Authorization: DPoP <token>` with a proof of that key.",
});

export const TokenOut = Type.Object(
  {
    access_token: Type.String({
      description:
        "A JSON Web Token signed with HS256 (or EdDSA / ES256 when configured; see /.well-known/jwks.json), " +
        "`typ` at+jwt, with `kid`, `iss`, `aud`; `sub` is the e-mail, valid 30 minutes.",
    }),
    token_type: TokenType,
    expires_in: Type.Integer({
      description: "Seconds until the access token expires (RFC 6749 section 5.1).",
      examples: [ACCESS_TOKEN_LIFETIME_SECONDS],
    }),
    refresh_token: Type.String({
      description: "Opaque, single use: spend it at this endpoint with `grant_type=refresh_token` for a new pair.",
    }),
    id_token: Type.Optional(
      Type.String({
        description:
          "`authorization_code` grant with the `openid` scope: the ID token (OpenID Connect Core 2), RS256, " +
          "verifiable with the JWK Set.",
      }),
    ),
    scope: Type.Optional(
      Type.String({ description: "Tokens issued to a registered client: the scopes granted, space-separated." }),
    ),
  },
  {
    $id: "Token",
    examples: [
      {
        access_token: "eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9...",
        token_type: "bearer",
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        refresh_token: "Hq8Yt2n0y1mW9q3Z4r5s6t7u8v9w0x1y2z3A4B5C6D7",
      },
    ],
  },
);
export type TokenOut = Static<typeof TokenOut>;

export const ClientTokenOut = Type.Object(
  {
    access_token: Type.String({
      description:
        "An RFC 9068 JSON Web Token for the client itself (`typ` at+jwt): `sub` and `client_id` are the client's " +
        "id, with `scope`, `iss`, `aud`, `iat`, `exp`, `jti`; signed like the users' tokens, valid 30 minutes. It " +
        "opens no user route.",
    }),
    token_type: TokenType,
    expires_in: Type.Integer({
      description: "Seconds until the access token expires (RFC 6749 section 5.1).",
      examples: [ACCESS_TOKEN_LIFETIME_SECONDS],
    }),
    scope: Type.Optional(Type.String({ description: "The scopes granted; left out when the client has none." })),
  },
  {
    $id: "ClientToken",
    description: "The answer of `grant_type=client_credentials` (RFC 6749 section 4.4.3): no refresh token.",
    examples: [
      {
        access_token: "eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9...",
        token_type: "bearer",
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        scope: "invoices:read",
      },
    ],
  },
);

export const RevokeForm = Type.Object(
  {
    token: Type.String({ maxLength: 4096, description: "A refresh token, or an access token (its session is ended)." }),
    token_type_hint: Type.Optional(
      Type.String({ description: "`refresh_token` or `access_token`; accepted and not needed." }),
    ),
    client_id: Type.Optional(
      Type.String({
        description:
          "A registered client (with `client_secret`, or alone for a public client): it is authenticated and may " +
          "revoke only tokens issued to it. Any other value is ignored (the spec's first-party apps).",
      }),
    ),
    client_secret: Type.Optional(
      Type.String({ description: "`client_secret_post`; or HTTP Basic instead (`client_secret_basic`)." }),
    ),
  },
  { $id: "RevokeForm", description: "RFC 7009 token revocation, form-encoded." },
);
export type RevokeForm = Static<typeof RevokeForm>;

export const RevokeOut = Type.Object(
  {},
  {
    $id: "Revoked",
    additionalProperties: false,
    description: "Revoked, or nothing to revoke: an empty JSON object (RFC 7009 section 2.2).",
    examples: [{}],
  },
);

/** The password grant's answer for an account with a second factor (RFC 6749 section 5.2 shape, Auth0's code). */
export const MfaRequired = Type.Object(
  {
    error: Type.Literal("mfa_required", { description: "The step of the flow this answer asks for." }),
    detail: ErrorBody.properties.detail,
    error_description: Type.Optional(Type.String({ description: "The same words as `detail`." })),
    mfa_token: Type.Optional(
      Type.String({
        description:
          "Opaque, single use, valid `expires_in` seconds: send it with a second-factor grant. A few wrong " +
          "codes spend it; then log in with the password again.",
      }),
    ),
    mfa_factors: Type.Optional(
      Type.Array(Type.Union([Type.Literal("otp"), Type.Literal("recovery_code"), Type.Literal("webauthn")]), {
        description:
          "The factors this account can answer with: `otp` (grant `" +
          MFA_OTP_GRANT +
          "`), `recovery_code` (grant `" +
          MFA_RECOVERY_CODE_GRANT +
          "`), `webauthn` (a passkey).",
      }),
    ),
    expires_in: Type.Optional(Type.Integer({ description: "Seconds the `mfa_token` stays valid." })),
  },
  {
    description:
      "The password is right and the account has a second factor: no tokens yet. Answer with a second-factor " +
      "grant carrying `mfa_token` (no-store, like a token response). Also the refusal of a right password " +
      "for an e-mail address not verified yet (only while `EMAIL_VERIFICATION_REQUIRED` is true), with " +
      "`error` `invalid_grant` and `detail` alone.",
    examples: [
      {
        error: "mfa_required",
        detail: "A second factor is required",
        error_description: "A second factor is required",
        mfa_token: "Zk3v0Qx1b9T2mN8cR4yW6pL0sD5fH7jA2gK9eU3iO1w",
        mfa_factors: ["otp", "recovery_code"],
        expires_in: 300,
      },
    ],
  },
);

/**
 * The mail link grant's 400 when the link is opened in a browser other than the one that asked and the
 * person has not confirmed: `invalid_grant` with the hint the sign-in page turns into its question.
 */
export const MailLinkUnconfirmed = Type.Object(
  {
    error: Type.Literal("invalid_grant"),
    error_description: Type.String(),
    detail: ErrorBody.properties.detail,
    confirmation_required: Type.Literal(true, {
      description: "Send the grant again with `confirm=true` once the person confirmed they asked for the link.",
    }),
    requested_at: Type.String({ format: "date-time", description: "When the sign-in mail was asked for." }),
  },
  { description: "The mail link needs the person's confirmation (another browser than the one that asked)." },
);
