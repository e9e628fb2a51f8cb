// Request validation with two Ajv instances. Bodies are checked strictly: a
// JSON number is not a password, whatever Ajv's coercion would like. Path and
// query parameters arrive as text, so there "20" may become 20 and "true"
// true. Neither instance removes unknown fields (schemas refuse them where
// they must) and both stop at the first error, which also bounds the work a
// hostile body can cause.
//
// Each route's validator is compiled the first time the route is called, not
// at start-up: compiling every route's schemas up front was the largest part
// of the time to first answer (see docs/performance.md), and most instances
// never see most routes (the admin routes, the account pages' endpoints).
// The first call of a route pays its compile, a few milliseconds, once.
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import type { DataValidationCxt } from "ajv/dist/types/index.js";
import addFormatsModule from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

// ajv-formats is CommonJS; under Node's ESM loader its default export is the function itself.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const COMMON: Options = {
  allErrors: false,
  removeAdditional: false,
  useDefaults: true,
  addUsedSchema: false,
  strict: false,
};

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  // Made with the first compile too: two Ajv instances with their formats are a few milliseconds of start.
  let bodies: Ajv | undefined;
  let text: Ajv | undefined;
  const ajvFor = (httpPart: string | undefined): Ajv => {
    if (httpPart === "body") {
      bodies ??= addFormats(new Ajv({ ...COMMON, coerceTypes: false }));
      return bodies;
    }
    text ??= addFormats(new Ajv({ ...COMMON, coerceTypes: true }));
    return text;
  };
  return ({ schema, httpPart }) => compileOnFirstUse(() => ajvFor(httpPart).compile(schema as object));
}

type LazyValidator = ((data: unknown, context?: DataValidationCxt) => boolean) & {
  errors?: ErrorObject[] | null;
  schemaEnv?: unknown;
};

function compileOnFirstUse(compile: () => ValidateFunction): LazyValidator {
  let compiled: ValidateFunction | undefined;
  const validate: LazyValidator = (data, context) => {
    compiled ??= compile();
    const valid = compiled(data, context);
    validate.errors = compiled.errors;
    return valid;
  };
  // Fastify passes the request as Ajv's parent data (so that a default or a coercion can replace a whole
  // part, such as an absent query) only to a function that has Ajv's schemaEnv; this one forwards it.
  validate.schemaEnv = true;
  return validate;
}
