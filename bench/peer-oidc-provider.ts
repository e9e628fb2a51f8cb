// A peer for bench groups 8 and 9: panva's oidc-provider (a dev dependency) as a production deployment
// would run it: client_credentials and introspection on, one confidential client (BENCH_CLIENT_ID,
// BENCH_CLIENT_SECRET, client_secret_basic) as the service's bench client has, and, when
// BENCH_CODE_CLIENT_ID and BENCH_CODE_CLIENT_SECRET are set, the service's first-party code client
// (BENCH_CODE_REDIRECT_URI); an RS256 signing key and cookie keys of its own rather than the
// development ones, NODE_ENV=production (set by the runner), the settings it asks a deployment to
// choose (token lifetimes, who may introspect, the account lookup), and its defaults otherwise: opaque
// access tokens in its default in-memory adapter, its own routes (POST /token, POST
// /token/introspection, GET /auth). Listens on PORT; ready once its discovery document answers.
//
// Its sign-in and consent pages are the deployment's to write; this one's (/interaction/<uid>) sign the
// browser in as the authorization request's login_hint and grant the client what it asked, at once:
// the bench opens browser sessions with them before it times anything, as it does on the service.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Provider from "oidc-provider";

/** The parts of oidc-provider's API the interaction pages use (the package ships no types). */
interface InteractionApi {
  interactionDetails(
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<{
    prompt: { name: string; details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[] } };
    params: { client_id: string; login_hint?: string };
    session?: { accountId: string };
    grantId?: string;
  }>;
  interactionFinished(
    request: IncomingMessage,
    response: ServerResponse,
    result: unknown,
    options: { mergeWithLastSubmission: boolean },
  ): Promise<void>;
  Grant: new (properties: {
    accountId: string;
    clientId: string;
  }) => { addOIDCScope(scope: string): void; addOIDCClaims(claims: string[]): void; save(): Promise<string> };
}

const port = Number(process.env.PORT ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });

const provider = new Provider(issuer, {
  clients: [
    ...(process.env.BENCH_CLIENT_ID
      ? [
          {
            client_id: process.env.BENCH_CLIENT_ID,
            client_secret: process.env.BENCH_CLIENT_SECRET ?? "",
            grant_types: ["client_credentials"],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: "client_secret_basic",
          },
        ]
      : []),
    ...(process.env.BENCH_CODE_CLIENT_ID
      ? [
          {
            client_id: process.env.BENCH_CODE_CLIENT_ID,
            client_secret: process.env.BENCH_CODE_CLIENT_SECRET ?? "",
            grant_types: ["authorization_code"],
            response_types: ["code"],
            redirect_uris: [process.env.BENCH_CODE_REDIRECT_URI ?? ""],
            token_endpoint_auth_method: "client_secret_basic",
          },
        ]
      : []),
  ],
  interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
  jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "bench", use: "sig", alg: "RS256" }] },
  // Its defaults come with a notice that a deployment should choose them: the service's access tokens'
  // lifetime (30 minutes) for both kinds.
  ttl: { ClientCredentials: 1800, AccessToken: 1800 },
  // Accounts as the sign-in page names them (by e-mail address), with the claims the app asks for; a
  // deployment must write this (the default is a placeholder that warns), and it reads no store here.
  claims: { openid: ["sub"], email: ["email", "email_verified"] },
  findAccount: async (_ctx: unknown, id: string) => ({
    accountId: id,
    claims: async () => ({ sub: id, email: id, email_verified: true }),
  }),
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
const api = provider as unknown as InteractionApi;

/** The sign-in and consent pages: each finishes its prompt at once (see the header). */
async function interaction(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const details = await api.interactionDetails(request, response);
  if (details.prompt.name === "login") {
    const accountId = details.params.login_hint ?? "";
    await api.interactionFinished(request, response, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = new api.Grant({ accountId: details.session?.accountId ?? "", clientId: details.params.client_id });
  const { missingOIDCScope = [], missingOIDCClaims = [] } = details.prompt.details;
  if (missingOIDCScope.length > 0) grant.addOIDCScope(missingOIDCScope.join(" "));
  if (missingOIDCClaims.length > 0) grant.addOIDCClaims(missingOIDCClaims);
  const grantId = await grant.save();
  await api.interactionFinished(request, response, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

// Its own request handler on Node's HTTP server, as its documentation mounts it standalone.
const handle = provider.callback();
const server = createServer((request, response) => {
  if (!request.url?.startsWith("/interaction/")) return handle(request, response);
  interaction(request, response).catch((error: unknown) => {
    response.statusCode = 500;
    response.end(JSON.stringify({ detail: String(error) }));
  });
}).listen(port, "127.0.0.1");
process.on("SIGTERM", () => server.close(() => process.exit(0)));
