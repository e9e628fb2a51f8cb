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
//
// `date-time` is the one place every date-time parameter and body field is
// checked, so it admits only instants the service can work with (see
// representableDateTime).
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

/** The first and last instants both databases store (PostgreSQL's timestamptz: years 1 to 9999, in UTC). */
const EARLIEST = Date.parse("0001-01-01T00:00:00.000Z");
const LATEST = Date.parse("9999-12-31T23:59:59.999Z");

/**
 * RFC 3339's date-time as ajv-formats checks it (a real calendar date, hours to 23, an offset), and
 * also an instant the service can represent: JavaScript's Date has no leap second (23:59:60 is NaN,
 * and toISOString() throws on it), reads no offset without its minutes (`+05`), and the databases
 * hold years 1 to 9999 in UTC (year 0, or 9999-12-31T23:59:59-01:00, is beyond them). Such a value is
 * refused like any other malformed one: 422, `must match format "date-time"`.
 */
function representableDateTime(rfc3339: (value: string) => boolean) {
  return function representable(value: string): boolean {
    if (!rfc3339(value)) return false;
    const instant = Date.parse(value);
    return instant >= EARLIEST && instant <= LATEST;
  };
}

function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  const rfc3339 = ajv.formats["date-time"] as { validate: (value: string) => boolean };
  ajv.addFormat("date-time", { type: "string", validate: representableDateTime(rfc3339.validate) });
  return ajv;
}

export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  // Made with the first compile too: two Ajv instances with their formats are a few milliseconds of start.
  let bodies: Ajv | undefined;
  let text: Ajv | undefined;
  const ajvFor = (httpPart: string | undefined): Ajv => {
    if (httpPart === "body") {
      bodies ??= withFormats(new Ajv({ ...COMMON, coerceTypes: false }));
      return bodies;
    }
    text ??= withFormats(new Ajv({ ...COMMON, coerceTypes: true }));
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
