// RFC 6749 section 5.2 error codes for the OAuth endpoints (token and
// revocation), opt-in with OAUTH_ERROR_FIELDS=on. The spec's error body is
// `detail` alone, and that stays the default. OAuth client libraries (authlib,
// oauth4webapi) look for `error` to tell an error from a token response, so
// with the setting on the body carries `error` and `error_description` beside
// the spec's `detail`, with the spec's status and message unchanged. Rendered
// by this plugin-level error handler, which otherwise says exactly what the
// service-wide one says.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { describeError, handleError } from "./error-handler.ts";
import { HttpError, UNSUPPORTED_GRANT_TYPE } from "./errors.ts";

export const OAUTH_ERROR_CODES = [
  "invalid_request",
  "invalid_grant",
  "unsupported_grant_type",
  "temporarily_unavailable",
  "server_error",
  // The second-factor challenge (Auth0's name; the token endpoint's 403 for an account with a factor).
  "mfa_required",
  // The grants of registered clients (OpenID Connect), whose errors always carry a code.
  "invalid_client",
  "unauthorized_client",
  "invalid_scope",
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];

/**
 * The code for a status. The spec answers bad credentials with 401 where RFC 6749 says 400; the
 * code is still invalid_grant. Rate limits (429) and an unreachable store (503) have no code in
 * section 5.2; temporarily_unavailable (section 4.1.2.1) says "try again later", as Retry-After does.
 */
export function oauthErrorCode(status: number, detail: string): OAuthErrorCode {
  // 403: the password is right but the account may not log in yet (an unverified e-mail), as Keycloak says.
  if (status === 401 || status === 403) return "invalid_grant";
  if (status === 400 && detail === UNSUPPORTED_GRANT_TYPE) return "unsupported_grant_type";
  if (status === 429 || status === 503) return "temporarily_unavailable";
  if (status >= 500) return "server_error";
  return "invalid_request";
}

export function handleOAuthError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, detail, headers } = describeError(error, request);
  reply
    .code(status)
    .headers(headers)
    .send({
      error: error instanceof OAuthError ? error.code : oauthErrorCode(status, detail),
      error_description: detail,
      detail,
    });
}

/**
 * An error of a grant that no spec row covers (OpenID Connect's, for registered clients): RFC 6749
 * section 5.2's `error` is part of its answer whatever OAUTH_ERROR_FIELDS says, as every OAuth
 * library needs it; `detail` stays beside it.
 */
export class OAuthError extends HttpError {
  readonly code: OAuthErrorCode;

  constructor(status: number, code: OAuthErrorCode, detail: string, headers: Record<string, string> = {}) {
    super(status, detail, headers);
    this.name = "OAuthError";
    this.code = code;
  }
}

/** The token endpoint's handler with OAUTH_ERROR_FIELDS off: the spec's body, but an OAuthError's code is kept. */
export function handleGrantError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (!(error instanceof OAuthError)) {
    handleError(error, request, reply);
    return;
  }
  reply
    .code(error.status)
    .headers(error.headers)
    .send({ error: error.code, error_description: error.detail, detail: error.detail });
}
