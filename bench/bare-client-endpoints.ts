// Floors for the OAuth client endpoints (group 8): the least a client-authenticated answer takes in
// bare Fastify on the same Node, to set the service's figures against what any such answer costs.
// Both parse the form, decode HTTP Basic and compare the secret's SHA-256 in constant time with the
// one client's (BENCH_CLIENT_ID, BENCH_CLIENT_SECRET). POST /token (client_credentials) then signs an
// HS256 access token with the service's library and claims (fast-jwt, a random jti); POST /introspect
// decodes the token's claims and answers them, taking its signature as known, as the service's
// verified-token cache takes a token it has seen. No store, no logging, no headers beyond Fastify's.
// A true floor: each piece done the cheapest way the service itself does it (the jti's random bytes
// from the service's pool, src/random-pool.ts, not a call into OpenSSL per grant), so that the
// service's figure over the floor's is what its own layers add. Run alone it listens on PORT;
// bench/post-path.ts builds it in its own process with bareClientEndpoints().
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import { createSigner } from "fast-jwt";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { randomBase64url } from "../src/random-pool.ts";

/** The floor's server for one client, not yet listening. */
export function bareClientEndpoints(clientId: string, clientSecret: string): FastifyInstance {
  const expected = hash("sha256", clientSecret, "buffer");
  const sign = createSigner({
    algorithm: "HS256",
    key: randomBytes(32),
    header: { alg: "HS256", typ: "at+jwt", kid: "bench" },
  });
  const issuer = "http://127.0.0.1";

  /** True when the request's HTTP Basic credentials are the client's. */
  function authenticated(request: FastifyRequest): boolean {
    const decoded = Buffer.from((request.headers.authorization ?? "").slice(6), "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const presented = hash("sha256", decodeURIComponent(decoded.slice(colon + 1)), "buffer");
    return decodeURIComponent(decoded.slice(0, colon)) === clientId && timingSafeEqual(presented, expected);
  }

  const app = Fastify({ logger: false });
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
  app.get("/healthz", async () => ({ status: "ok" }));
  app.post("/token", async (request, reply) => {
    if (!authenticated(request)) return reply.code(401).send({ error: "invalid_client" });
    const iat = Math.floor(Date.now() / 1000);
    const accessToken = sign({
      iss: issuer,
      sub: clientId,
      aud: issuer,
      iat,
      exp: iat + 1800,
      client_id: clientId,
      jti: randomBase64url(16),
      scope: "bench",
    });
    return { access_token: accessToken, token_type: "bearer", expires_in: 1800, scope: "bench" };
  });
  app.post("/introspect", async (request, reply) => {
    if (!authenticated(request)) return reply.code(401).send({ detail: "Client authentication failed" });
    const token = (request.body as { token?: string }).token ?? "";
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
    return { active: true, token_type: "Bearer", ...claims };
  });
  return app;
}

if (import.meta.main) {
  const app = bareClientEndpoints(process.env.BENCH_CLIENT_ID ?? "", process.env.BENCH_CLIENT_SECRET ?? "");
  await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
  process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
}
