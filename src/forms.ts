// The application/x-www-form-urlencoded parser, registered only inside the
// token endpoint's plugin so that no JSON route accepts a form by accident.
// A repeated parameter is refused (RFC 6749 section 3.1) and an empty value
// counts as absent, so `scope=` is ignored and `username=` is "missing". A
// request with no body at all is an empty form: its fields are missing too.
import type { FastifyInstance } from "fastify";
import { HttpError } from "./errors.ts";

export function parseForm(body: string): Record<string, string> {
  const fields: Record<string, string> = Object.create(null);
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
    request.body ??= Object.create(null);
    done();
  });
}
