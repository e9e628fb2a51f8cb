// The sign-in page's script for sign-in by mail (mail-sign-in.js, issue 37),
// served beside the page's other scripts. Read relative to this module, so
// that it is found both in src/pages/ and beside the bundle (scripts/build.ts
// copies src/pages/*.js there).
import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";

const source = readFileSync(new URL("./mail-sign-in.js", import.meta.url), "utf8");

export function registerMailSignInScript(app: FastifyInstance): void {
  app.get("/pages/mail-sign-in.js", { schema: { hide: true } }, async function mailSignInScript(_request, reply) {
    return reply.type("text/javascript; charset=utf-8").header("cache-control", "no-cache").send(source);
  });
}
