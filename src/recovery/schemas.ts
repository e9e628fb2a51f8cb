// Account recovery's shapes: the request for a link (an e-mail address; the
// answer says the same words whether or not the account exists) and the
// link's token spent, in the body, never in a URL.
import { type Static, Type } from "typebox";
import { Email, Password, Timestamp } from "../users/schemas.ts";

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
