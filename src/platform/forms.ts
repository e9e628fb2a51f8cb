// The application/x-www-form-urlencoded parser, registered only inside the
// token endpoint's plugin so that no JSON route accepts a form by accident.
// A repeated parameter is refused (RFC 6749 section 3.1) and an empty value
// counts as absent, so `scope=` is ignored and `username=` is "missing". A
// request with no body at all is an empty form: its fields are missing too.
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors.ts";

/**
 * A form's fields: an object whose prototype has no members at all, so no field name (`__proto__`,
 * `constructor`, `toString`) reaches anything but the field itself. Object.create(null) gives the same
 * safety, but V8 keeps such an object as a hash table, and every read of it then missed the inline
 * caches: a fifth of a client introspection's CPU time went to its form. Objects made by `new` keep
 * V8's fast layout (the trick of fast-querystring, Fastify's own query parser).
 */
const FormFields = function FormFields() {} as unknown as new () => Record<string, never>;
FormFields.prototype = Object.create(null);

/** An empty set of form or query fields (see FormFields). */
export function newFields<Value = string>(): Record<string, Value> {
  return new FormFields();
}

export function parseForm(body: string): Record<string, string> {
  const fields = newFields();
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(body)) {
    if (seen.has(name)) throw new HttpError(400, `Form field '${name.slice(0, 64)}' is repeated`);
    seen.add(name);
    if (value !== "") fields[name] = value;
  }
  return fields;
}

export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addHook("preValidation", function noBodyIsAnEmptyForm(request, _reply, done) {
    request.body ??= newFields();
    done();
  });
}
