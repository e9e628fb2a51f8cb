// The service's one error shape. Anything that should reach a client as an
// error is an HttpError (status, detail, optional headers); the single error
// handler (platform/error-handler.ts) renders it as {"detail": "..."}. The spec's fixed messages
// live here as constants so every route and test uses the same words.

/** Spec, Errors table: token endpoint, unknown e-mail or wrong password. */
export const INCORRECT_EMAIL_OR_PASSWORD = "Incorrect email or password";
/** Spec, Errors table: protected endpoint, any failure of the token check. */
export const COULD_NOT_VALIDATE_CREDENTIALS = "Could not validate credentials";
/** No usable Authorization header at all (the FastAPI wording; the spec is silent). */
export const NOT_AUTHENTICATED = "Not authenticated";
export const EMAIL_TAKEN = "A user with this email already exists";
export const UNSUPPORTED_GRANT_TYPE =
  "Unsupported grant_type: only 'password', 'refresh_token' and the documented second-factor grants are supported";
export const INTERNAL_ERROR = "Internal Server Error";
/** Bad JSON syntax, or bytes that are not UTF-8 (RFC 8259 section 8.1). */
export const MALFORMED_JSON = "The request body is not valid JSON";
export const NOT_ENOUGH_PRIVILEGES = "Not enough privileges";
export const USER_NOT_FOUND = "User not found";
export const SIGNUP_CLOSED = "Sign-up is closed: only admins can create users";
export const LAST_ACTIVE_ADMIN = "The last active admin cannot be deleted, demoted or deactivated";
export const INCORRECT_CURRENT_PASSWORD = "Current password is incorrect";
export const SERVICE_UNAVAILABLE = "The service is temporarily unavailable; try again shortly";
/** A route that hashes a password, while too many hashes already wait for a core (PASSWORD_HASH_QUEUE_LIMIT). */
export const PASSWORD_CHECKS_BUSY = "Too many password checks are waiting right now; try again in a few seconds";
/** /readyz while the process drains after SIGTERM. */
export const SHUTTING_DOWN = "The service is shutting down";

export type Headers = Readonly<Record<string, string>>;

/**
 * Runs `work` with stack capture off. For work whose errors are expected and answered, never logged
 * (malformed client input, forged tokens): capturing a stack was the largest single cost of refusing
 * such a request. The limit is put back however `work` ends.
 */
export function withoutStackTraces<T>(work: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return work();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export class HttpError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly headers: Headers;

  constructor(status: number, detail: string, headers: Headers = {}) {
    // An expected refusal (a wrong password, an unknown token) is an answer, not a fault to debug:
    // capturing its stack was the largest single cost of a refused request (a fifth of a refused
    // introspection's CPU time). A 5xx keeps its stack: it is logged and someone will look for its source.
    const limit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(detail);
    Error.stackTraceLimit = limit;
    this.name = "HttpError";
    this.status = status;
    this.detail = detail;
    this.headers = headers;
  }
}

/** Every 401 of this service carries `WWW-Authenticate: Bearer` (spec, Errors rules). */
export function unauthorized(detail: string): HttpError {
  return new HttpError(401, detail, { "www-authenticate": "Bearer" });
}

/** Thrown by any store when the unique e-mail is already taken: a 409 wherever it surfaces. */
export class EmailTaken extends HttpError {
  constructor() {
    super(409, EMAIL_TAKEN);
    this.name = "EmailTaken";
  }
}

/** Thrown by any store when a change would leave no active admin: a 409 wherever it surfaces. */
export class LastActiveAdmin extends HttpError {
  constructor() {
    super(409, LAST_ACTIVE_ADMIN);
    this.name = "LastActiveAdmin";
  }
}

/**
 * Thrown by a store write that adds a way in for a signed-in request (a passkey, a linked identity)
 * when the account's credentials changed since that sign-in (every session ended: a proof of the
 * address, a password change or reset): the 401 the request's token now gets.
 */
export class CredentialsChanged extends HttpError {
  constructor() {
    super(401, COULD_NOT_VALIDATE_CREDENTIALS, { "www-authenticate": "Bearer" });
    this.name = "CredentialsChanged";
  }
}

/** A store (database or Redis) cannot be reached right now: 503, and the client may retry shortly. */
export class StoreUnavailable extends HttpError {
  constructor(cause?: unknown) {
    super(503, SERVICE_UNAVAILABLE, { "retry-after": "1" });
    this.name = "StoreUnavailable";
    this.cause = cause;
  }
}

/**
 * Thrown by the password hasher when a hash would queue behind PASSWORD_HASH_QUEUE_LIMIT others: 503 at once,
 * with Retry-After in whole seconds (at least 1), rather than a wait that grows with the storm.
 */
export class PasswordHashQueueFull extends HttpError {
  constructor(retryAfterSeconds: number) {
    super(503, PASSWORD_CHECKS_BUSY, { "retry-after": String(retryAfterSeconds) });
    this.name = "PasswordHashQueueFull";
  }
}

export function forbidden(detail: string = NOT_ENOUGH_PRIVILEGES): HttpError {
  return new HttpError(403, detail);
}

export function notFound(detail: string = USER_NOT_FOUND): HttpError {
  return new HttpError(404, detail);
}

/** A setting that cannot be used; the process prints one line naming it and exits. */
export class ConfigError extends Error {
  readonly setting: string;

  constructor(setting: string, problem: string) {
    super(`${setting}: ${problem}`);
    this.name = "ConfigError";
    this.setting = setting;
  }
}
