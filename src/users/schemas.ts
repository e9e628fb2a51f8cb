// The users resource's shapes, named by role (FastAPI template style): what
// sign-up accepts (UserCreate) is not what an admin may replace or patch, nor
// what the owner may change (SelfPatch, PasswordChange), and none of them is
// the output (UserOut, which never carries the hash). The field shapes at
// the top (Email, Password, Timestamp, UserId) are shared with the other
// capabilities' schemas. Each schema does three jobs: request validation
// (Ajv), the OpenAPI document, and the compiled response serialiser, which
// drops any field a schema does not list.
import { type Static, Type } from "typebox";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../auth/password-policy.ts";
import { LOCALES, type Locale } from "../i18n/locales.ts";

/** RFC 5321 caps a forward path at 256 octets, so an address is at most 254 characters. */
export const EMAIL_MAX_LENGTH = 254;

export const Email = (options: object = {}) =>
  Type.String({ format: "email", maxLength: EMAIL_MAX_LENGTH, examples: ["ada@example.com"], ...options });
export const Password = (options: object = {}) =>
  Type.String({
    minLength: PASSWORD_MIN_LENGTH,
    maxLength: PASSWORD_MAX_LENGTH,
    description: `From ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters, kept exactly as typed.`,
    examples: ["correct horse battery staple"],
    ...options,
  });
/** Text that a database can hold and a log line can show: no NUL nor other control characters. */
const NO_CONTROL_CHARACTERS = "^[^\\u0000-\\u001f]*$";
const FullName = Type.Union(
  [Type.String({ minLength: 1, maxLength: 200, pattern: "^[^\\u0000-\\u001f]*$" }), Type.Null()],
  {
    description: "Display name, or null.",
    examples: ["Ada Lovelace"],
  },
);
/** One of the languages the pages and mails speak (issue 37). */
const LocaleTag = Type.Unsafe<Locale>({
  type: "string",
  enum: [...LOCALES],
  description:
    "The language the user chose for the hosted pages and the mails. Left out of the answer while the user " +
    "has not chosen one.",
  examples: ["de"],
});
/** A language to save, or null to clear the choice (pages and mails then follow the browser or DEFAULT_LOCALE). */
const LocaleInput = Type.Union([LocaleTag, Type.Null()], {
  description: `The language for the hosted pages and the mails: one of ${LOCALES.join(", ")}, or null to clear it.`,
  examples: ["de"],
});
const IsActive = Type.Boolean({ description: "Inactive users cannot log in and their tokens stop working." });
const IsAdmin = Type.Boolean({ description: "Admins manage all users." });
export const Timestamp = Type.String({ format: "date-time", examples: ["2026-11-22T16:40:03.123Z"] });
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
    locale: Type.Optional(LocaleTag),
  },
  { $id: "UserOut", description: "A user as the API returns it. Never carries the password hash." },
);
export type UserOut = Static<typeof UserOut>;

export const UserCreate = Type.Object(
  {
    email: Email(),
    password: Password(),
    full_name: Type.Optional(FullName),
    locale: Type.Optional(LocaleInput),
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
    locale: Type.Optional(LocaleInput),
    is_active: Type.Optional(IsActive),
    is_admin: Type.Optional(IsAdmin),
  },
  {
    $id: "UserReplace",
    additionalProperties: false,
    description:
      "The whole record. A field left out takes its default: full_name null, locale null, is_active true, " +
      "is_admin false.",
    examples: [{ email: "ada@example.com", full_name: null, is_active: true, is_admin: false }],
  },
);
export type UserReplace = Static<typeof UserReplace>;

export const UserPatch = Type.Object(
  {
    email: Type.Optional(Email()),
    full_name: Type.Optional(FullName),
    locale: Type.Optional(LocaleInput),
    is_active: Type.Optional(Type.Boolean({ description: "Admins only." })),
    is_admin: Type.Optional(Type.Boolean({ description: "Admins only." })),
    email_verified: Type.Optional(
      Type.Boolean({
        description:
          "Admins only: true marks the current e-mail verified now (as if its owner had opened the link), " +
          "false marks it unverified.",
      }),
    ),
  },
  {
    $id: "UserPatch",
    additionalProperties: false,
    description:
      "Only the fields sent change. A user may change its own email, full_name and locale; the rest is for admins.",
    examples: [{ full_name: "Ada King" }],
  },
);
export type UserPatch = Static<typeof UserPatch>;

export const SelfPatch = Type.Object(
  { email: Type.Optional(Email()), full_name: Type.Optional(FullName), locale: Type.Optional(LocaleInput) },
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
    email_prefix: Type.Optional(
      Type.String({
        maxLength: EMAIL_MAX_LENGTH,
        pattern: NO_CONTROL_CHARACTERS,
        description: "Only users whose e-mail begins with this (any case).",
        examples: ["ada@"],
      }),
    ),
    name: Type.Optional(
      Type.String({
        maxLength: 200,
        pattern: NO_CONTROL_CHARACTERS,
        description: "Only users whose full name contains this (ASCII letters in any case).",
        examples: ["lovelace"],
      }),
    ),
    is_verified: Type.Optional(
      Type.Boolean({ description: "Only users whose e-mail is verified (true) or not yet (false)." }),
    ),
    has_second_factor: Type.Optional(
      Type.Boolean({ description: "Only users with (true) or without (false) an authenticator app or a passkey." }),
    ),
    upstream_provider: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        pattern: NO_CONTROL_CHARACTERS,
        description: "Only users with an identity linked at this upstream provider (its name in `UPSTREAM_PROVIDERS`).",
        examples: ["google"],
      }),
    ),
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
