// The one place where errors become responses. Every error leaves as
// {"detail": "..."}: our HttpErrors with their status and headers, schema
// failures as 422, Fastify's own client errors (413, 415, bad JSON) with
// their safe messages, and anything else as a logged 500 whose detail is
// generic: no stack trace or internal message reaches a client.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import {
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
  PASSWORD_TOO_LONG,
  PASSWORD_TOO_SHORT,
} from "../auth/password-policy.ts";
import {
  type Headers,
  HttpError,
  INTERNAL_ERROR,
  MALFORMED_JSON,
  PasswordHashQueueFull,
  StoreUnavailable,
} from "../errors.ts";
import { noteRefusedHashTurn } from "./refused-hash-turns.ts";

type ValidationIssue = NonNullable<FastifyError["validation"]>[number];

export interface ErrorAnswer {
  status: number;
  detail: string;
  headers: Headers;
}

/** What a client is told about an error: status, a safe detail, and headers. Logs what it hides. */
export function describeError(error: FastifyError, request: FastifyRequest): ErrorAnswer {
  if (error instanceof StoreUnavailable) {
    // The operator's first clue in an outage: what the driver said (never a password: drivers do not
    // put the connection URL in their messages), once per failed request.
    const reason = error.cause instanceof Error ? error.cause.message : "unknown";
    request.log.warn({ reason }, "database or Redis unavailable; answered 503");
  }
  // Every error handler describes its error here: the metrics tell this 503 from a store's by the mark.
  if (error instanceof PasswordHashQueueFull) noteRefusedHashTurn(request);
  if (error instanceof HttpError) return { status: error.status, detail: error.detail, headers: error.headers };
  if (error.validation)
    return {
      status: 422,
      detail: describeValidation(error.validationContext ?? "request", error.validation),
      headers: {},
    };
  if (error.code === "FST_ERR_CTP_INVALID_JSON_BODY" || error instanceof SyntaxError)
    return { status: 400, detail: MALFORMED_JSON, headers: {} };
  if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500)
    return { status: error.statusCode, detail: error.message, headers: {} };
  request.log.error({ err: error }, "request failed");
  return { status: 500, detail: INTERNAL_ERROR, headers: {} };
}

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, detail, headers } = describeError(error, request);
  reply.code(status).headers(headers).send({ detail });
}

/**
 * Sends the answer handleError would send for `error`, without throwing it: for refusals on hot
 * paths (a client's failed authentication), where Fastify's error path (the rejected promise, its
 * onError hooks, the handler's lookup) costs more than the refusal itself. Same status, headers, body.
 */
export function refuse(reply: FastifyReply, error: HttpError): FastifyReply {
  return reply.code(error.status).headers(error.headers).send({ detail: error.detail });
}

export const PATH_SEGMENT_TOO_LONG = "A part of the URL's path is too long";
export const MALFORMED_URL = "The URL's path is malformed";

/**
 * The router's refusals before any route (Fastify's frameworkErrors): a path segment over its length
 * (414) or a malformed percent escape (400). Fastify's own answers echo the path in its error shape.
 */
export function refuseUnroutableUrl(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
  // No route's hooks run for these: the common headers (platform/hardening.ts) are set here.
  reply
    .code(tooLong ? 414 : 400)
    .header("x-content-type-options", "nosniff")
    .header("x-request-id", request.id)
    .header("cache-control", "no-store")
    .send({ detail: tooLong ? PATH_SEGMENT_TOO_LONG : MALFORMED_URL });
}

export function handleNotFound(_request: FastifyRequest, reply: FastifyReply): void {
  reply.code(404).send({ detail: "Not Found" });
}

/** One readable line naming the field: "body.email: must match format \"email\"". */
function describeValidation(context: string, issues: ValidationIssue[]): string {
  const issue = issues[0];
  if (issue === undefined) return `${context}: invalid`;
  const path = context + issue.instancePath.replaceAll("/", ".");
  const params = issue.params as Record<string, unknown>;
  if (issue.keyword === "required") return `${path}.${String(params.missingProperty)}: field required`;
  if (issue.keyword === "additionalProperties") return `${path}.${String(params.additionalProperty)}: unknown field`;
  // A new password outside its lengths gets a sentence, as the password list's refusal does.
  if (path.endsWith("password")) {
    if (issue.keyword === "minLength" && params.limit === PASSWORD_MIN_LENGTH) return PASSWORD_TOO_SHORT;
    if (issue.keyword === "maxLength" && params.limit === PASSWORD_MAX_LENGTH) return PASSWORD_TOO_LONG;
  }
  return `${path}: ${issue.message ?? "invalid"}`;
}
