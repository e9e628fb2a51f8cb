// A peer for bench group 8: panva's oidc-provider (a dev dependency) as a production deployment would
// run it for machine clients: client_credentials and introspection on, one confidential client
// (BENCH_CLIENT_ID, BENCH_CLIENT_SECRET, client_secret_basic) as the service's bench client has, a
// signing key and cookie keys of its own rather than the development ones, NODE_ENV=production (set
// by the runner), and its defaults otherwise: opaque access tokens in its default in-memory adapter,
// its own routes (POST /token, POST /token/introspection). Listens on PORT; ready once its discovery
// document answers.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import Provider from "oidc-provider";

const port = Number(process.env.PORT ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.BENCH_CLIENT_ID ?? "",
      client_secret: process.env.BENCH_CLIENT_SECRET ?? "",
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "bench", use: "sig", alg: "RS256" }] },
  // Its default (600 s) comes with a notice that a deployment should choose one: the service's client tokens' lifetime.
  ttl: { ClientCredentials: 1800 },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    // The library asks a deployment to set who may introspect what; the service's own rule: a client
    // introspects the tokens issued to it.
    introspection: {
      enabled: true,
      allowedPolicy: async (
        ctx: { oidc: { client?: { clientId: string } } },
        _client: unknown,
        token: { clientId?: string },
      ) => token.clientId === ctx.oidc.client?.clientId,
    },
  },
});
// Its own request handler on Node's HTTP server, as its documentation mounts it standalone.
const server = createServer(provider.callback()).listen(port, "127.0.0.1");
process.on("SIGTERM", () => server.close(() => process.exit(0)));
