// POST /auth/introspect's shapes (RFC 7662): the form a resource server or
// a registered client sends, and the answer, {"active": false} alone for
// anything not valid now.
import { type Static, Type } from "typebox";

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
    token_type: Type.Optional(
      Type.Union([Type.Literal("Bearer"), Type.Literal("DPoP")], {
        description: "`DPoP` for a token bound to a DPoP key (RFC 9449 section 6.2), which then carries `cnf`.",
      }),
    ),
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
    cnf: Type.Optional(
      Type.Object(
        { jkt: Type.String({ description: "The JWK SHA-256 thumbprint of the DPoP key (RFC 7638)." }) },
        { description: "RFC 9449 section 6.2: the key a DPoP-bound token is bound to." },
      ),
    ),
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
