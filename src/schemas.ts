// Every request and response shape, declared once with TypeBox. Each schema
// does three jobs: request validation (Ajv), the OpenAPI document, and the
// compiled response serialiser, which drops any field a schema does not list
// (a second guard that a password hash never leaves the service).
import { type Static, Type } from "typebox";
import { ACCESS_TOKEN_LIFETIME_SECONDS } from "./auth/tokens.ts";

/** RFC 5321 caps a forward path at 256 octets, so an address is at most 254 characters. */
export const EMAIL_MAX_LENGTH = 254;
/** OWASP ASVS: at least 8 characters; long passphrases allowed, never truncated. */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;

export const ErrorBody = Type.Object(
  { detail: Type.String({ description: "What went wrong, for a person to read." }) },
  {
    $id: "Error",
    description: "The service's one error shape.",
    examples: [{ detail: "Could not validate credentials" }],
  },
);

export const UserOut = Type.Object(
  {
    id: Type.String({
      format: "uuid",
      description: "Stable user id (UUID version 7).",
      examples: ["0190e0c4-7d2a-7b3c-9f41-3a2b1c0d9e8f"],
    }),
    email: Type.String({
      format: "email",
      description: "The user's e-mail, stored trimmed and lower-cased.",
      examples: ["ada@example.com"],
    }),
  },
  { $id: "UserOut", description: "A user as the API returns it. Never carries the password hash." },
);
export type UserOut = Static<typeof UserOut>;

export const UserCreate = Type.Object(
  {
    email: Type.String({ format: "email", maxLength: EMAIL_MAX_LENGTH, examples: ["ada@example.com"] }),
    password: Type.String({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
      description: `From ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`,
      examples: ["correct horse battery staple"],
    }),
  },
  { $id: "UserCreate", additionalProperties: false, description: "Sign-up: the new user's e-mail and password." },
);
export type UserCreate = Static<typeof UserCreate>;

export const TokenForm = Type.Object(
  {
    grant_type: Type.Optional(Type.String({ description: "`password`, or omitted.", examples: ["password"] })),
    username: Type.String({
      maxLength: 320,
      description: "The user's e-mail (OAuth 2.0 calls the field username).",
      examples: ["ada@example.com"],
    }),
    password: Type.String({ maxLength: PASSWORD_MAX_LENGTH, examples: ["correct horse battery staple"] }),
    scope: Type.Optional(Type.String({ description: "Accepted and ignored." })),
    client_id: Type.Optional(Type.String({ description: "Accepted and ignored (first-party clients only)." })),
    client_secret: Type.Optional(Type.String({ description: "Accepted and ignored." })),
  },
  { $id: "TokenForm", description: "OAuth 2.0 password grant (RFC 6749 section 4.3.2), form-encoded." },
);
export type TokenForm = Static<typeof TokenForm>;

export const TokenOut = Type.Object(
  {
    access_token: Type.String({
      description: "A JSON Web Token signed with HS256; `sub` is the e-mail, valid 30 minutes.",
    }),
    token_type: Type.Literal("bearer"),
    expires_in: Type.Integer({
      description: "Seconds until the access token expires (RFC 6749 section 5.1).",
      examples: [ACCESS_TOKEN_LIFETIME_SECONDS],
    }),
  },
  {
    $id: "Token",
    examples: [
      {
        access_token: "eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9...",
        token_type: "bearer",
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
      },
    ],
  },
);
export type TokenOut = Static<typeof TokenOut>;

/** An error response entry for a route schema, with its own description and example. */
export function errorResponse(description: string, example: string) {
  return Type.Object(ErrorBody.properties, { description, examples: [{ detail: example }] });
}
