// Request validation with two Ajv instances. Bodies are checked strictly: a
// JSON number is not a password, whatever Ajv's coercion would like. Path and
// query parameters arrive as text, so there "20" may become 20 and "true"
// true. Neither instance removes unknown fields (schemas refuse them where
// they must) and both stop at the first error, which also bounds the work a
// hostile body can cause.
import { Ajv, type Options } from "ajv";
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
  const bodies = addFormats(new Ajv({ ...COMMON, coerceTypes: false }));
  const text = addFormats(new Ajv({ ...COMMON, coerceTypes: true }));
  return ({ schema, httpPart }) => (httpPart === "body" ? bodies : text).compile(schema as object);
}
