// Every request and response shape, declared once with TypeBox. Each schema
// does three jobs: request validation (Ajv), the OpenAPI document, and the
// compiled response serialiser, which drops any field a schema does not list
// (a second guard that a password hash never leaves the service).
import { type Static, Type } from "typebox";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./auth/password-policy.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS } from "./auth/tokens.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS, PASSWORD_CHECKS_BUSY } from "./errors.ts";
import { CLIENT_ERROR_CODES, OAUTH_ERROR_CODES, type OAuthErrorCode } from "./oauth-errors.ts";

/** Extension grants (RFC 6749 section 4.5) that answer the password grant's second-factor challenge. */
export const MFA_OTP_GRANT = "urn:user-token-service:grant-type:mfa-otp";
/** Sign-in with an upstream provider (issue 25): the sign-in page spends the callback's ticket here. */
export const UPSTREAM_GRANT = "urn:user-token-service:grant-type:upstream";
export const MFA_RECOVERY_CODE_GRANT = "urn:user-token-service:grant-type:mfa-recovery-code";
/** A passkey as the second factor: `mfa_token` + `webauthn_response` (auth/passkeys.ts verifies it). */
export const MFA_WEBAUTHN_GRANT = "urn:user-token-service:grant-type:mfa-webauthn";

/** RFC 5321 caps a forward path at 256 octets, so an address is at most 254 characters. */
export const EMAIL_MAX_LENGTH = 254;

export const ErrorBody = Type.Object(
  { detail: Type.String({ description: "What went wrong, for a person to read." }) },
  {
    $id: "Error",
    description: "The service's one error shape.",
    examples: [{ detail: "Could not validate credentials" }],
  },
);

const Email = (options: object = {}) =>
  Type.String({ format: "email", maxLength: EMAIL_MAX_LENGTH, examples: ["ada@example.com"], ...options });
const Password = (options: object = {}) =>
  Type.String({
    minLength: PASSWORD_MIN_LENGTH,
    maxLength: PASSWORD_MAX_LENGTH,
    description: `From ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters, kept exactly as typed.`,
    examples: ["correct horse battery staple"],
    ...options,
  });
const FullName = Type.Union(
  [Type.String({ minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f]*$" }), Type.Null()],
  {
    description: "Display name, or null.",
    examples: ["Ada Lovelace"],
  },
);
const IsActive = Type.Boolean({ description: "Inactive users cannot log in and their tokens stop working." });
const IsAdmin = Type.Boolean({ description: "Admins manage all users." });
const Timestamp = Type.String({ format: "date-time", examples: ["2026-11-22T16:40:03.123Z"] });
export const UserId = Type.String({
  format: "uuid",
  description: "Stable user id: a UUID version 7 (time-ordered, not guessable).",
  examples: ["0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
});

export const UserOut = Type.Object(
  {
    id: UserId,
    email: Type.String({
      format: "email",
      description: "Stored trimmed and lower-cased.",
      examples: ["ada@example.com"],
    }),
    full_name: FullName,
    is_active: IsActive,
    is_admin: IsAdmin,
    created_at: Timestamp,
    updated_at: Timestamp,
    email_verified: Type.Boolean({ description: "Whether the owner of `email` proved it by opening a link." }),
    email_verified_at: Type.Union([Timestamp, Type.Null()], { description: "When the address was verified." }),
  },
  { $id: "UserOut", description: "A user as the API returns it. Never carries the password hash." },
);
export type UserOut = Static<typeof UserOut>;

export const UserCreate = Type.Object(
  {
    email: Email(),
    password: Password(),
    full_name: Type.Optional(FullName),
    is_active: Type.Optional(Type.Boolean({ description: "Admins only; default true." })),
    is_admin: Type.Optional(Type.Boolean({ description: "Admins only; default false." })),
  },
  {
    $id: "UserCreate",
    additionalProperties: false,
    description: "A new user. Anyone may sign up (while sign-up is open); only admins may set is_active or is_admin.",
    examples: [{ email: "ada@example.com", password: "correct horse battery staple", full_name: "Ada Lovelace" }],
  },
);
export type UserCreate = Static<typeof UserCreate>;

export const UserReplace = Type.Object(
  {
    email: Email(),
    full_name: Type.Optional(FullName),
    is_active: Type.Optional(IsActive),
    is_admin: Type.Optional(IsAdmin),
  },
  {
    $id: "UserReplace",
    additionalProperties: false,
    description:
      "The whole record. A field left out takes its default: full_name null, is_active true, is_admin false.",
    examples: [{ email: "ada@example.com", full_name: null, is_active: true, is_admin: false }],
  },
);
export type UserReplace = Static<typeof UserReplace>;

export const UserPatch = Type.Object(
  {
    email: Type.Optional(Email()),
    full_name: Type.Optional(FullName),
    is_active: Type.Optional(Type.Boolean({ description: "Admins only." })),
    is_admin: Type.Optional(Type.Boolean({ description: "Admins only." })),
  },
  {
    $id: "UserPatch",
    additionalProperties: false,
    description: "Only the fields sent change. A user may change its own email and full_name; the rest is for admins.",
    examples: [{ full_name: "Ada King" }],
  },
);
export type UserPatch = Static<typeof UserPatch>;

export const SelfPatch = Type.Object(
  { email: Type.Optional(Email()), full_name: Type.Optional(FullName) },
  {
    $id: "SelfPatch",
    additionalProperties: false,
    description: "Only the fields sent change. Changing the e-mail ends the tokens issued for the old one.",
    examples: [{ full_name: "Ada King" }],
  },
);
export type SelfPatch = Static<typeof SelfPatch>;

export const PasswordChange = Type.Object(
  {
    current_password: Type.String({
      maxLength: PASSWORD_MAX_LENGTH,
      minLength: 1,
      examples: ["correct horse battery staple"],
    }),
    new_password: Password({ examples: ["a new and longer passphrase"] }),
  },
  { $id: "PasswordChange", additionalProperties: false, description: "The current password proves it is the user." },
);
export type PasswordChange = Static<typeof PasswordChange>;

export const USERS_PAGE_DEFAULT = 20;
export const USERS_PAGE_MAX = 100;

export const UserListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: USERS_PAGE_MAX, default: USERS_PAGE_DEFAULT, description: "Page size." }),
    ),
    cursor: Type.Optional(Type.String({ format: "uuid", description: "The `next_cursor` of the previous page." })),
    email: Type.Optional(
      Type.String({ maxLength: EMAIL_MAX_LENGTH, description: "Only the user with this e-mail (any case)." }),
    ),
    is_active: Type.Optional(Type.Boolean({ description: "Only active (true) or inactive (false) users." })),
    is_admin: Type.Optional(Type.Boolean({ description: "Only admins (true) or non-admins (false)." })),
  },
  { additionalProperties: false },
);
export type UserListQuery = Static<typeof UserListQuery>;

export const UserPage = Type.Object(
  {
    items: Type.Array(UserOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
      description: "Pass as `cursor` for the next page; null on the last page.",
    }),
    next: Type.Union([Type.String(), Type.Null()], {
      description: "The path and query of the next page, with the same filters; null on the last page.",
      examples: ["/users?limit=20&cursor=0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
    }),
  },
  { $id: "UserPage", description: "One page of users, oldest first." },
);
export type UserPage = Static<typeof UserPage>;

export const UserIdParams = Type.Object({ id: UserId });

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
          "passkey alone: `challenge_id`, `webauthn_response`). Any other value is answered 400 " +
          "`unsupported_grant_type`.",
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
      Type.String({ maxLength: 256, description: "`authorization_code` grant, required: the code (OpenID Connect)." }),
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

export const TokenOut = Type.Object(
  {
    access_token: Type.String({
      description:
        "A JSON Web Token signed with HS256 (or EdDSA / ES256 when configured; see /.well-known/jwks.json), " +
        "`typ` at+jwt, with `kid`, `iss`, `aud`; `sub` is the e-mail, valid 30 minutes.",
    }),
    token_type: Type.Literal("bearer"),
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
    token_type: Type.Literal("bearer"),
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

export const IntrospectForm = Type.Object(
  {
    token: Type.String({ maxLength: 4096, description: "The token to check: an access token." }),
    token_type_hint: Type.Optional(
      Type.String({ description: "`access_token` or `refresh_token`; accepted and not needed." }),
    ),
    client_id: Type.Optional(
      Type.String({ description: "A registered client using `client_secret_post`: its id (with `client_secret`)." }),
    ),
    client_secret: Type.Optional(Type.String({ description: "A registered client using `client_secret_post`." })),
  },
  { $id: "IntrospectForm", description: "RFC 7662 token introspection, form-encoded." },
);
export type IntrospectForm = Static<typeof IntrospectForm>;

export const IntrospectionOut = Type.Object(
  {
    active: Type.Boolean({ description: "True only for an access token that would open a protected route now." }),
    token_type: Type.Optional(Type.Literal("Bearer")),
    client_id: Type.Optional(
      Type.String({
        description:
          "A registered client's token (its own, or a relying party's for a user): the client it was issued to.",
      }),
    ),
    scope: Type.Optional(Type.String({ description: "A registered client's token: the scopes it carries." })),
    sub: Type.Optional(
      Type.String({
        description:
          "The user's e-mail, as in the token; for a relying party's token, the user's id; for a client's own " +
          "token, its client_id.",
      }),
    ),
    username: Type.Optional(Type.String({ description: "A first-party token: the user's e-mail." })),
    user_id: Type.Optional(Type.String({ format: "uuid", description: "The user's id." })),
    iss: Type.Optional(Type.String()),
    aud: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: "Whom the token is for (RFC 7519 section 4.1.3: one string, or an array of several).",
      }),
    ),
    iat: Type.Optional(Type.Integer()),
    exp: Type.Optional(Type.Integer()),
    jti: Type.Optional(Type.String({ description: "A registered client's token: its unique id." })),
    sid: Type.Optional(Type.String({ description: "The session the token was issued in." })),
    amr: Type.Optional(
      Type.Array(Type.String(), {
        description: 'How the user authenticated (RFC 8176): ["pwd"], or with a second factor ["pwd","otp","mfa"].',
      }),
    ),
  },
  {
    $id: "Introspection",
    description:
      'RFC 7662 section 2.2. `{"active": false}` alone for anything not valid now: unknown, forged or expired, ' +
      "of a deleted or deactivated user, from before a password change, or of an ended session.",
    examples: [
      {
        active: true,
        token_type: "Bearer",
        sub: "ada@example.com",
        username: "ada@example.com",
        user_id: "0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f",
        iss: "https://auth.example.com",
        aud: "https://auth.example.com",
        iat: 1795000000,
        exp: 1795001800,
        sid: "0190e0c4-8a11-7c3d-8e52-4b3c2d1e0f9a",
        amr: ["pwd", "otp", "mfa"],
      },
      { active: false },
    ],
  },
);
export type IntrospectionOut = Static<typeof IntrospectionOut>;

export const SessionOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    created_at: Type.String({ format: "date-time", description: "When the user logged in." }),
    last_used_at: Type.String({ format: "date-time", description: "The last refresh (or the login)." }),
    expires_at: Type.String({ format: "date-time", description: "The absolute end of the session." }),
    client_address: Type.Union([Type.String(), Type.Null()], { description: "Address of the last login or refresh." }),
    user_agent: Type.Union([Type.String(), Type.Null()], { description: "User-Agent of the last login or refresh." }),
    current: Type.Boolean({ description: "True for the session of the access token making this call." }),
  },
  { $id: "SessionOut", description: "A signed-in session: one chain of refresh tokens." },
);
export const SessionListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: USERS_PAGE_MAX, default: USERS_PAGE_DEFAULT, description: "Page size." }),
    ),
    cursor: Type.Optional(Type.String({ format: "uuid", description: "The `next_cursor` of the previous page." })),
  },
  { additionalProperties: false },
);
export type SessionListQuery = Static<typeof SessionListQuery>;
export const SessionList = Type.Object(
  {
    items: Type.Array(SessionOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
      description: "Pass as `cursor` for the next page; null on the last page.",
    }),
    next: Type.Union([Type.String(), Type.Null()], {
      description: "The path and query of the next page; null on the last page.",
      examples: ["/me/sessions?limit=20&cursor=0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
    }),
  },
  { $id: "SessionList", description: "One page of your live sessions, newest first." },
);
export const SessionIdParams = Type.Object({ id: Type.String({ format: "uuid" }) });

// Passkeys (WebAuthn). The options and credential objects are WebAuthn's own JSON shapes
// (PublicKeyCredentialCreationOptionsJSON and friends): open objects here, checked by the library.
const WebAuthnJson = (description: string) =>
  Type.Object({}, { additionalProperties: true, description, examples: [{}] });
const ChallengeId = Type.String({
  format: "uuid",
  description: "Names the ceremony's stored challenge; send it back with the answer. Single use, 5 minutes.",
});
const PasskeyName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: "^[^\\u0000-\\u001f]*$",
  description: "Your name for it, to tell your passkeys apart.",
  examples: ["Laptop fingerprint"],
});

export const PasskeyOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    name: PasskeyName,
    created_at: Timestamp,
    last_used_at: Type.Union([Timestamp, Type.Null()], { description: "The last sign-in with it." }),
    backed_up: Type.Boolean({ description: "Whether the authenticator says it is synced (a multi-device passkey)." }),
  },
  { $id: "Passkey", description: "One of your passkeys. Never its key material." },
);

export const PasskeyAddedOut = Type.Object(
  {
    ...PasskeyOut.properties,
    recovery_codes: Type.Array(Type.String(), {
      description:
        "Your first second factor's ten recovery codes, shown this once: each works once in place of a " +
        "passkey or an app's code. Empty when you already had codes (they stay valid).",
    }),
  },
  { $id: "PasskeyAdded", description: "The passkey just added, and the recovery codes of a first factor." },
);
export const PasskeyList = Type.Array(PasskeyOut, { $id: "PasskeyList", description: "Your passkeys, oldest first." });
export const PasskeyIdParams = Type.Object({ id: Type.String({ format: "uuid" }) });
export const PasskeyRename = Type.Object(
  { name: PasskeyName },
  { $id: "PasskeyRename", additionalProperties: false, description: "The new name." },
);
export type PasskeyRename = Static<typeof PasskeyRename>;
export const PasskeyCreate = Type.Object(
  {
    challenge_id: ChallengeId,
    name: PasskeyName,
    response: WebAuthnJson(
      "The credential from `navigator.credentials.create()`, as JSON (its `toJSON()`, or @simplewebauthn/browser's " +
        "`startRegistration()`): `id`, `rawId`, `type`, `response.clientDataJSON`, `response.attestationObject`...",
    ),
  },
  {
    $id: "PasskeyCreate",
    additionalProperties: false,
    description: "The answer to the registration options, with a name for the new passkey.",
  },
);
export type PasskeyCreate = Static<typeof PasskeyCreate>;
/** A ceremony begun: the id of its stored challenge and WebAuthn's options for the browser. */
const CeremonyOut = ($id: string, what: string, options: string) =>
  Type.Object({ challenge_id: ChallengeId, options: WebAuthnJson(options) }, { $id, description: `${what}, begun.` });
export const RegistrationOptionsOut = CeremonyOut(
  "PasskeyRegistrationOptions",
  "A registration ceremony",
  "PublicKeyCredentialCreationOptionsJSON: pass to `navigator.credentials.create()`.",
);
export const AuthenticationOptionsIn = Type.Object(
  {
    mfa_token: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: "The `mfa_token` of the password grant's 403 `mfa_required`: a passkey as the second factor.",
      }),
    ),
  },
  {
    $id: "PasskeyAuthenticationOptionsRequest",
    additionalProperties: false,
    description: "`{}` for a sign-in with a passkey alone (discoverable); `{mfa_token}` for the second factor.",
  },
);
export type AuthenticationOptionsIn = Static<typeof AuthenticationOptionsIn>;
export const AuthenticationOptionsOut = CeremonyOut(
  "PasskeyAuthenticationOptions",
  "An authentication ceremony",
  "PublicKeyCredentialRequestOptionsJSON: pass to `navigator.credentials.get()`.",
);

/** Link tokens are 43 characters (256 bits, base64url); a little room, and nothing that could be a novel. */
const LinkToken = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "The token from the link's fragment (`#token=...`). Sent in the body, never in a URL.",
  examples: ["q3J8mB0c6kqvTQ9f2wS1yX4rA7nL5hD0eZ8uP2iG6oK"],
});

export const EmailRequest = Type.Object(
  { email: Email() },
  {
    $id: "EmailRequest",
    additionalProperties: false,
    description: "The e-mail address of the account.",
    examples: [{ email: "ada@example.com" }],
  },
);
export type EmailRequest = Static<typeof EmailRequest>;

export const PasswordResetConfirm = Type.Object(
  { token: LinkToken, new_password: Password({ examples: ["a new and longer passphrase"] }) },
  {
    $id: "PasswordResetConfirm",
    additionalProperties: false,
    description: "The token from the link, and the new password.",
  },
);
export type PasswordResetConfirm = Static<typeof PasswordResetConfirm>;

export const EmailVerificationConfirm = Type.Object(
  { token: LinkToken },
  { $id: "EmailVerificationConfirm", additionalProperties: false, description: "The token from the link." },
);
export type EmailVerificationConfirm = Static<typeof EmailVerificationConfirm>;

export const Accepted = Type.Object(
  { message: Type.String({ description: "The same words whether or not the account exists." }) },
  { $id: "Accepted", description: "The request is taken; a mail follows if there is an account to write to." },
);

export const EmailVerified = Type.Object(
  { email: Type.String({ format: "email" }), email_verified_at: Timestamp },
  { $id: "EmailVerified", description: "The address is verified (and, after a change, is now the account's e-mail)." },
);
/** An error response of the OAuth endpoints: the spec's detail and RFC 6749 section 5.2's error code. */
export function oauthErrorResponse(
  description: string,
  example: string,
  code: OAuthErrorCode | (typeof CLIENT_ERROR_CODES)[number],
  withFields: boolean,
) {
  const error = Type.Union(
    [...OAUTH_ERROR_CODES, ...CLIENT_ERROR_CODES].map((value) => Type.Literal(value)),
    {
      description:
        "RFC 6749 section 5.2 error code: always for client authentication and the clients' grants " +
        "(client_credentials), and for the spec's grants with OAUTH_ERROR_FIELDS=on.",
    },
  );
  const errorDescription = Type.String({ description: "The same words as `detail`." });
  // The spec's grants answer `detail` alone unless OAUTH_ERROR_FIELDS is on; the clients' grants always
  // add `error`, so the fields are in the schema either way (the serialiser drops what it does not list).
  if (!withFields)
    return Type.Object(
      {
        error: Type.Optional(error),
        error_description: Type.Optional(errorDescription),
        detail: ErrorBody.properties.detail,
      },
      { description, examples: [{ detail: example }] },
    );
  return Type.Object(
    { error, error_description: errorDescription, detail: ErrorBody.properties.detail },
    { description, examples: [{ error: code, error_description: example, detail: example }] },
  );
}

/** An error response entry for a route schema, with its own description and example. */
export function errorResponse(description: string, example: string) {
  return Type.Object(ErrorBody.properties, { description, examples: [{ detail: example }] });
}

/** The 401 of every route behind the token check. */
export const UnauthorizedResponse = errorResponse(
  "No token, or the token check failed.",
  COULD_NOT_VALIDATE_CREDENTIALS,
);

/** Why a route that hashes or verifies a password answers 503 (the token endpoint says it in its own entry). */
export const PASSWORD_CHECKS_BUSY_DESCRIPTION =
  "too many password checks are already waiting for a core (`PASSWORD_HASH_QUEUE_LIMIT`), so this one is " +
  "refused at once rather than queued";

/** The 503 of a route that hashes or verifies a password: the store's reasons, and the full hash queue. */
export const PasswordRouteUnavailable = errorResponse(
  `The database or the shared counters cannot be reached, or ${PASSWORD_CHECKS_BUSY_DESCRIPTION}; ` +
    "`Retry-After` says when to try again.",
  PASSWORD_CHECKS_BUSY,
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

const TotpCode = Type.String({
  pattern: "^[0-9]{6}$",
  description: "The six-digit code the authenticator app shows now.",
  examples: ["123456"],
});
const RecoveryCodeIn = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "One unused recovery code; dashes and case do not matter.",
  examples: ["7q2x-m9kd-4vbn"],
});
const CurrentPassword = Type.String({
  minLength: 1,
  maxLength: PASSWORD_MAX_LENGTH,
  examples: ["correct horse battery staple"],
});

export const MfaStatus = Type.Object(
  {
    totp_enabled: Type.Boolean({ description: "An authenticator app is set up and confirmed." }),
    recovery_codes_remaining: Type.Integer({ description: "Unused recovery codes." }),
    passkeys: Type.Integer({ description: "Registered passkeys (each a second factor; see /me/passkeys)." }),
  },
  {
    $id: "MfaStatus",
    description: "Your second factors.",
    examples: [{ totp_enabled: true, recovery_codes_remaining: 9, passkeys: 1 }],
  },
);

export const TotpEnrolmentOut = Type.Object(
  {
    secret: Type.String({ description: "The base32 secret, to type into an app that cannot scan the QR code." }),
    otpauth_uri: Type.String({
      description: "The `otpauth://totp/...` URI (issuer, e-mail as label, SHA1, 6 digits, 30 s).",
    }),
    qr_code: Type.String({ description: "The URI as a QR code: a `data:image/png;base64,...` URI for an `<img>`." }),
  },
  {
    $id: "TotpEnrolment",
    description: "Scan the QR code (or type the secret), then confirm with a code at POST /me/totp/confirm.",
    examples: [
      {
        secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
        otpauth_uri:
          "otpauth://totp/Example:ada%40example.com?issuer=Example&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30",
        qr_code: "data:image/png;base64,iVBORw0KGgo...",
      },
    ],
  },
);

export const TotpConfirm = Type.Object(
  { code: TotpCode },
  { $id: "TotpConfirm", additionalProperties: false, examples: [{ code: "123456" }] },
);
export type TotpConfirm = Static<typeof TotpConfirm>;

export const TotpDisable = Type.Object(
  { password: CurrentPassword, code: Type.Optional(TotpCode), recovery_code: Type.Optional(RecoveryCodeIn) },
  {
    $id: "TotpDisable",
    additionalProperties: false,
    description: "Your password and either a code of the app or a recovery code (exactly one of the two).",
    examples: [{ password: "correct horse battery staple", code: "123456" }],
  },
);
export type TotpDisable = Static<typeof TotpDisable>;

export const PasswordConfirmation = Type.Object(
  { password: CurrentPassword },
  {
    $id: "PasswordConfirmation",
    additionalProperties: false,
    description: "Your password, to prove it is you.",
    examples: [{ password: "correct horse battery staple" }],
  },
);
export type PasswordConfirmation = Static<typeof PasswordConfirmation>;

export const RecoveryCodesOut = Type.Object(
  {
    recovery_codes: Type.Array(Type.String(), {
      description: "Shown this once: each code works once in place of the app's code. Empty when none were made now.",
    }),
  },
  {
    $id: "RecoveryCodes",
    examples: [
      {
        recovery_codes: [
          "7q2x-m9kd-4vbn",
          "h3tz-0c8w-p6rf",
          "e5ya-k1gn-9s2m",
          "b8dv-r4xq-t0hc",
          "n6wj-2fzk-a7pe",
          "y1mc-s5tb-8dgx",
          "q9re-v3nh-6kzw",
          "c2pf-x7ja-m4ty",
          "g0kd-w8eb-1vrn",
          "t4zs-h6qm-3cya",
        ],
      },
    ],
  },
);
