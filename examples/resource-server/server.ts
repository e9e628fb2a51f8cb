// A resource server: a separate small service that trusts this repository's
// user-and-token service without sharing any secret with it. It verifies each
// access token locally with jose against the service's published keys
// (createRemoteJWKSet on /.well-known/jwks.json, refetched when a token names
// a kid it has not seen, so a key rotation needs no restart here), pinning
// the algorithms, the issuer, the audience and the token type. Under HS256,
// where the service publishes no keys, it takes the shared secret(s) instead.
//
//   ISSUER=http://127.0.0.1:8000 node examples/resource-server/server.ts
//   curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8001/hello
//
// Settings: ISSUER (required: the service's issuer), AUDIENCE (default: the
// issuer), JWKS_URL (default: ISSUER/.well-known/jwks.json), ALGORITHMS
// (default EdDSA,ES256), SHARED_SECRET (HS256 only: the service's
// SIGNING_SECRET, comma-separated while rotating), JWKS_COOLDOWN_MS (default
// 30000: the least time between two fetches of the key set), HOST, PORT.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";

function setting(name: string, fallback?: string): string {
  const value = process.env[name]?.trim() || fallback;
  if (value === undefined) {
    process.stderr.write(`configuration error: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const issuer = setting("ISSUER");
const audience = setting("AUDIENCE", issuer);
const sharedSecrets = process.env.SHARED_SECRET?.split(",").map((secret) => new TextEncoder().encode(secret.trim()));
const algorithms = sharedSecrets ? ["HS256"] : setting("ALGORITHMS", "EdDSA,ES256").split(",");
const keySet = createRemoteJWKSet(new URL(setting("JWKS_URL", `${issuer}/.well-known/jwks.json`)), {
  cooldownDuration: Number(setting("JWKS_COOLDOWN_MS", "30000")),
});
const options = { issuer, audience, algorithms, typ: "at+jwt", requiredClaims: ["sub", "exp", "iat"] };

/** The token's claims when it verifies; throws jose's error otherwise. */
async function verify(token: string): Promise<JWTPayload> {
  if (!sharedSecrets) return (await jwtVerify(token, keySet, options)).payload;
  // A shared secret per rotation step: the token verifies against one of them or it is refused.
  let failure: unknown;
  for (const secret of sharedSecrets) {
    try {
      return (await jwtVerify(token, secret, options)).payload;
    } catch (error) {
      if (!(error instanceof errors.JWSSignatureVerificationFailed)) throw error;
      failure = error;
    }
  }
  throw failure;
}

function send(response: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers });
  response.end(JSON.stringify(body));
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method !== "GET" || request.url !== "/hello") return send(response, 404, { detail: "Not Found" });
  const match = /^bearer +([^ ]+) *$/i.exec(request.headers.authorization ?? "");
  if (!match) return send(response, 401, { detail: "Not authenticated" }, { "www-authenticate": "Bearer" });
  let claims: JWTPayload;
  try {
    claims = await verify(match[1] as string);
  } catch (error) {
    // The key set could not be fetched: not the token's fault, so not a 401; the client may retry.
    if (error instanceof errors.JWKSTimeout || !(error instanceof errors.JOSEError)) {
      process.stdout.write("key set unreachable\n");
      return send(response, 503, { detail: "Cannot check tokens right now" }, { "retry-after": "5" });
    }
    // RFC 6750 section 3.1. The reason (expired, bad signature, wrong issuer...) is for our log only.
    process.stdout.write(`token refused: ${error.code}\n`);
    return send(response, 401, { detail: "Invalid token" }, { "www-authenticate": 'Bearer error="invalid_token"' });
  }
  send(response, 200, { message: `Hello, ${claims.sub}`, sub: claims.sub });
}

const server = createServer((request, response) => {
  handle(request, response).catch(() => send(response, 500, { detail: "Internal Server Error" }));
});
server.listen(Number(setting("PORT", "8001")), setting("HOST", "127.0.0.1"), () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`resource server listening at http://127.0.0.1:${port}\n`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
