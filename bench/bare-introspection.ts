// A floor for introspection (group 8): the least a client-authenticated RFC 7662 answer takes in bare
// Fastify on the same Node. The form parsed, HTTP Basic decoded, the secret's SHA-256 compared in
// constant time with the one client's (from BENCH_CLIENT_ID and BENCH_CLIENT_SECRET), the token's
// claims decoded and answered. Its signature is taken as known, as the service's verified-token
// cache takes a token it has seen; no store, no logging, no headers beyond Fastify's. Listens on PORT.
import { hash, timingSafeEqual } from "node:crypto";
import Fastify from "fastify";

const clientId = process.env.BENCH_CLIENT_ID ?? "";
const expected = hash("sha256", process.env.BENCH_CLIENT_SECRET ?? "", "buffer");

const app = Fastify({ logger: false });
app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
  done(null, Object.fromEntries(new URLSearchParams(body as string))),
);
app.get("/healthz", async () => ({ status: "ok" }));
app.post("/introspect", async (request, reply) => {
  const decoded = Buffer.from((request.headers.authorization ?? "").slice(6), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const presented = hash("sha256", decodeURIComponent(decoded.slice(colon + 1)), "buffer");
  if (decodeURIComponent(decoded.slice(0, colon)) !== clientId || !timingSafeEqual(presented, expected))
    return reply.code(401).send({ detail: "Client authentication failed" });
  const token = (request.body as { token?: string }).token ?? "";
  const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
  return { active: true, token_type: "Bearer", ...claims };
});
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
