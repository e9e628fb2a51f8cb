// The words every route schema is written in for the OpenAPI document: who
// may call it (BEARER_SECURITY draws the padlock, NO_SECURITY says a route is
// open on purpose) and its error answers, all in the service's one error
// shape {"detail": ...}, with the OAuth endpoints' RFC 6749 fields beside it.
// Each capability's schemas.ts declares its own shapes with these.
import { Type } from "typebox";
import { COULD_NOT_VALIDATE_CREDENTIALS, PASSWORD_CHECKS_BUSY } from "../errors.ts";
import { CLIENT_ERROR_CODES, OAUTH_ERROR_CODES, type OAuthErrorCode } from "../oauth-errors.ts";

export const SECURITY_SCHEME = "OAuth2PasswordBearer";
export const BEARER_SECURITY = [{ [SECURITY_SCHEME]: [] as string[] }];
/** HTTP Basic for the resource servers that may call POST /auth/introspect. */
export const INTROSPECTION_SCHEME = "IntrospectionClient";
/** Open routes say so explicitly (an empty requirement): no padlock, and linters see it was meant. */
export const NO_SECURITY: Record<string, string[]>[] = [];

export const ErrorBody = Type.Object(
  { detail: Type.String({ description: "What went wrong, for a person to read." }) },
  {
    $id: "Error",
    description: "The service's one error shape.",
    examples: [{ detail: "Could not validate credentials" }],
  },
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
