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

/** A field named twice: refused (RFC 6749 section 3.1). */
function repeated(name: string): HttpError {
  return new HttpError(400, `Form field '${name.slice(0, 64)}' is repeated`);
}

/**
 * The fields of a form body, as URLSearchParams reads them. A body without `%` or `+` (every form a
 * client library sends with plain values) needs no decoding: it is cut at `&` and each piece at its
 * first `=`, by hand, which is what URLSearchParams does with such a body, without its iterator, its
 * list of pairs and a Set per request. Any other body goes through URLSearchParams itself.
 */
export function parseForm(body: string): Record<string, string> {
  const fields = newFields();
  // Names whose value was empty: absent from `fields`, but a second one is still a repeat.
  let empty: Set<string> | undefined;
  const add = (name: string, value: string) => {
    if (fields[name] !== undefined || empty?.has(name)) throw repeated(name);
    if (value !== "") fields[name] = value;
    else {
      empty ??= new Set();
      empty.add(name);
    }
  };
  if (body.indexOf("%") >= 0 || body.indexOf("+") >= 0) {
    for (const [name, value] of new URLSearchParams(body)) add(name, value);
    return fields;
  }
  let start = 0;
  while (start <= body.length) {
    let end = body.indexOf("&", start);
    if (end < 0) end = body.length;
    if (end > start) {
      const equals = body.indexOf("=", start);
      if (equals >= 0 && equals < end) add(body.slice(start, equals), body.slice(equals + 1, end));
      else add(body.slice(start, end), "");
    }
    start = end + 1;
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
