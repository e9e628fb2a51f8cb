// The one place where errors become responses. Every error leaves as
// {"detail": "..."}: our HttpErrors with their status and headers, schema
// failures as 422, Fastify's own client errors (413, 415, bad JSON) with
// their safe messages, and anything else as a logged 500 whose detail is
// generic: no stack trace or internal message reaches a client.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { HttpError, INTERNAL_ERROR, StoreUnavailable } from "./errors.ts";

type ValidationIssue = NonNullable<FastifyError["validation"]>[number];

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof StoreUnavailable) {
    // The operator's first clue in an outage: what the driver said (never a password: drivers do not
    // put the connection URL in their messages), once per failed request.
    const reason = error.cause instanceof Error ? error.cause.message : "unknown";
    request.log.warn({ reason }, "database or Redis unavailable; answered 503");
  }
  if (error instanceof HttpError) {
    reply.code(error.status).headers(error.headers).send({ detail: error.detail });
  } else if (error.validation) {
    reply.code(422).send({ detail: describeValidation(error.validationContext ?? "request", error.validation) });
  } else if (error.code === "FST_ERR_CTP_INVALID_JSON_BODY" || error instanceof SyntaxError) {
    reply.code(400).send({ detail: "The request body is not valid JSON" });
  } else if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
    reply.code(error.statusCode).send({ detail: error.message });
  } else {
    request.log.error({ err: error }, "request failed");
    reply.code(500).send({ detail: INTERNAL_ERROR });
  }
}

export function handleNotFound(_request: FastifyRequest, reply: FastifyReply): void {
  reply.code(404).send({ detail: "Not Found" });
}

/** One readable line naming the field: "body.password: must NOT have fewer than 8 characters". */
function describeValidation(context: string, issues: ValidationIssue[]): string {
  const issue = issues[0];
  if (issue === undefined) return `${context}: invalid`;
  const path = context + issue.instancePath.replaceAll("/", ".");
  const params = issue.params as Record<string, unknown>;
  if (issue.keyword === "required") return `${path}.${String(params.missingProperty)}: field required`;
  if (issue.keyword === "additionalProperties") return `${path}.${String(params.additionalProperty)}: unknown field`;
  return `${path}: ${issue.message ?? "invalid"}`;
}
