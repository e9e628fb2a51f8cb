// RFC 6749 section 5.2 error codes for the OAuth endpoints (token and
// revocation), opt-in with OAUTH_ERROR_FIELDS=on. The spec's error body is
// `detail` alone, and that stays the default. OAuth client libraries (authlib,
// oauth4webapi) look for `error` to tell an error from a token response, so
// with the setting on the body carries `error` and `error_description` beside
// the spec's `detail`, with the spec's status and message unchanged. Rendered
// by this plugin-level error handler, which otherwise says exactly what the
// service-wide one says.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { type Headers, HttpError, UNSUPPORTED_GRANT_TYPE } from "./errors.ts";
import { describeError } from "./platform/error-handler.ts";

export const OAUTH_ERROR_CODES = [
  "invalid_request",
  "invalid_grant",
  "unsupported_grant_type",
  "temporarily_unavailable",
  "server_error",
  // The second-factor challenge (Auth0's name; the token endpoint's 403 for an account with a factor).
  "mfa_required",
] as const;
export type OAuthErrorCode = (typeof OAUTH_ERROR_CODES)[number];
/**
 * The codes of client authentication and the clients' grants (OAuthError below), which always carry
 * `error`: RFC 6749 section 5.2's, RFC 7591's (registration) and RFC 9068's resource side has none.
 */
export const CLIENT_ERROR_CODES = [
  "invalid_client",
  "invalid_scope",
  "unauthorized_client",
  "invalid_redirect_uri",
  "invalid_client_metadata",
  // RFC 8707 section 2: a `resource` the client may not ask for.
  "invalid_target",
  // RFC 8628 section 3.5 (issue 36, the device grant): the poll's answers before and instead of tokens.
  "authorization_pending",
  "slow_down",
  "access_denied",
  "expired_token",
  // RFC 9449 (DPoP, issue 36): a refused proof, and the server's nonce asked for (section 8).
  "invalid_dpop_proof",
  "use_dpop_nonce",
] as const;

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
    .send({ error: oauthErrorCode(status, detail), error_description: detail, detail });
}

/**
 * An error of a grant or endpoint no spec row covers (client authentication, client_credentials,
 * the grants of OpenID Connect clients): it always carries RFC 6749 section 5.2's `error` and
 * `error_description`, whatever OAUTH_ERROR_FIELDS says, and `detail` (the service's error shape).
 */
export class OAuthError extends HttpError {
  readonly error: string;
  /** Machine-readable members beside `error` (the mail link's confirmation hint); listed in the route's schema. */
  readonly extra: Readonly<Record<string, unknown>>;
  constructor(
    status: number,
    error: string,
    description: string,
    headers: Headers = {},
    extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(status, description, headers);
    this.name = "OAuthError";
    this.error = error;
    this.extra = extra;
  }
}

/** RFC 6749 section 5.2 body of an OAuthError. */
export function renderOAuthError(error: OAuthError, reply: FastifyReply): void {
  reply
    .code(error.status)
    .headers(error.headers)
    .send({ error: error.error, error_description: error.detail, detail: error.detail, ...error.extra });
}
