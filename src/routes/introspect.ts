// POST /auth/introspect (RFC 7662): for resource servers that want the answer
// a local JWT check cannot give, such as an ended session or a deactivated or
// deleted user. Only callers the operator configured may ask: a resource
// server from INTROSPECTION_CLIENTS with HTTP Basic, or an admin with a
// bearer token; anyone else could otherwise probe stolen tokens. The answer
// is {"active": false} for anything not valid now; an active token gets its
// claims. The check is the token check of protected routes (the same guard),
// plus the session: the hot path does not look sessions up, this does.
// Registered confidential clients (issue 24) may ask too, authenticating as
// they registered (HTTP Basic, or client_id and client_secret in the form),
// and a client's own token (client_credentials) introspects as active with
// its client_id and scope while its client is registered.
import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Guards } from "../auth/guard.ts";
import { type ClientAccessClaims, InvalidToken, jsonSegment, type TokenService } from "../auth/tokens.ts";
import type { IntrospectionClient } from "../config.ts";
import { BEARER_SECURITY, INTROSPECTION_SCHEME } from "../docs.ts";
import { NOT_ENOUGH_PRIVILEGES, unauthorized } from "../errors.ts";
import { acceptFormBodies } from "../forms.ts";
import { basicCredentials, presentedClient } from "../oidc/client-auth.ts";
import type { ClientRegistry } from "../oidc/clients.ts";
import { errorResponse, IntrospectForm, IntrospectionOut } from "../schemas.ts";
import type { UserStore } from "../store/store.ts";

export interface IntrospectRouteOptions {
  store: UserStore;
  guards: Guards;
  tokens: TokenService;
  clients: readonly IntrospectionClient[];
  /** Registered OAuth clients: confidential ones may introspect; their own tokens are introspected. */
  registry: ClientRegistry;
  clock: () => number;
}

export const INTROSPECTION_CLIENT_REFUSED = "Introspection needs a configured client's credentials or an admin token";

function digest(value: string): Buffer {
  return hash("sha256", value, "buffer");
}

const NO_CLIENT = digest("no client: compare against something all the same");

/**
 * A check of Basic credentials against the configured clients: the client id when they match one,
 * else undefined. Secrets are compared as SHA-256 digests in constant time, so neither their content
 * nor their length leaks; the configured ones are hashed once here, not on every request.
 */
function configuredClients(clients: readonly IntrospectionClient[]) {
  const digests = new Map<string, Buffer>();
  for (const client of clients) if (!digests.has(client.id)) digests.set(client.id, digest(client.secret));
  return (credentials: { id: string; secret: string }): string | undefined => {
    if (digests.size === 0) return undefined;
    const expected = digests.get(credentials.id);
    return timingSafeEqual(expected ?? NO_CLIENT, digest(credentials.secret)) && expected ? credentials.id : undefined;
  };
}

/** The claims of a client's own token, read without verifying: only to choose which check to run first. */
function looksLikeAClientToken(token: string): boolean {
  const start = token.indexOf(".");
  const end = token.indexOf(".", start + 1);
  if (start < 0 || end < 0) return false;
  const payload = jsonSegment(token.slice(start + 1, end));
  return typeof payload?.client_id === "string" && payload.stamp === undefined;
}

export const introspectRoutes: FastifyPluginAsyncTypebox<IntrospectRouteOptions> = async (
  app,
  { store, guards, tokens, clients, registry, clock },
) => {
  const configuredClient = configuredClients(clients);
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  /**
   * A configured resource server (HTTP Basic), a registered confidential client (as it registered:
   * Basic or the form), or an admin (bearer token); 401 or 403 otherwise, the same words whatever
   * was wrong.
   */
  async function authorizeCaller(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    const form = (request.body ?? {}) as { client_id?: string; client_secret?: string };
    const basic = basicCredentials(header);
    if (basic !== undefined || form.client_secret !== undefined) {
      if (basic && form.client_secret === undefined && configuredClient(basic) !== undefined) return;
      let presented: ReturnType<typeof presentedClient>;
      try {
        presented = presentedClient(header, { client_id: form.client_id, client_secret: form.client_secret });
      } catch {
        throw unauthorized(INTROSPECTION_CLIENT_REFUSED);
      }
      // Public clients (`none`) have nothing to prove who they are with: they may not introspect.
      const client = presented && presented.method !== "none" ? await registry.authenticate(presented) : undefined;
      if (client === undefined) throw unauthorized(INTROSPECTION_CLIENT_REFUSED);
      return;
    }
    if (!/^bearer /i.test(header ?? "")) throw unauthorized(INTROSPECTION_CLIENT_REFUSED);
    await guards.authenticate(request, reply);
    await guards.requireAdmin(request, reply);
  }

  /** A client's own token, valid now and of a client still registered; undefined otherwise. */
  async function checkClientToken(token: string): Promise<ClientAccessClaims | undefined> {
    let claims: ClientAccessClaims;
    try {
      claims = tokens.verifyClientAccessToken(token);
    } catch (error) {
      if (error instanceof InvalidToken) return undefined;
      throw error;
    }
    // A deleted client's tokens end with it.
    return (await registry.find(claims.client_id)) === undefined ? undefined : claims;
  }

  app.post(
    "/auth/introspect",
    {
      config: { observed: "introspection" },
      // Before the body is validated, so a stranger learns nothing, not even what the form lacks.
      preValidation: [authorizeCaller],
      schema: {
        operationId: "introspectToken",
        security: [{ [INTROSPECTION_SCHEME]: [] }, ...BEARER_SECURITY],
        tags: ["auth"],
        summary: "Is this access token valid now? (RFC 7662)",
        description:
          "For resource servers. The caller authenticates with HTTP Basic as a client listed in " +
          "`INTROSPECTION_CLIENTS`, as a registered confidential client (the way it registered: HTTP Basic, or " +
          "`client_id` and `client_secret` in the form), or with an admin's bearer token. Form-encoded `token`. " +
          "A client's own token (`client_credentials`) is active with its `client_id` and `scope` while that " +
          "client is registered. Answers " +
          '`{"active": false}` for anything that would not open a protected route now: unknown, forged or expired ' +
          "tokens, refresh tokens, tokens of a deleted or deactivated user or from before a password change, and " +
          "tokens whose session was ended (logout, revocation), which a local JWT check cannot see.",
        consumes: ["application/x-www-form-urlencoded"],
        body: IntrospectForm,
        response: {
          200: IntrospectionOut,
          401: errorResponse("No client credentials or admin token, or wrong ones.", INTROSPECTION_CLIENT_REFUSED),
          403: errorResponse("The bearer token is not an admin's.", NOT_ENOUGH_PRIVILEGES),
          422: errorResponse("`token` is missing.", "body.token: field required"),
        },
      },
    },
    async function introspectToken(request) {
      const answer = await introspect(request);
      request.actionOutcome = answer.active ? "active" : "inactive";
      return answer;
    },
  );

  /** RFC 7662 section 2.2: the token's claims while it is valid now, `{"active": false}` otherwise. */
  async function introspect(request: FastifyRequest & { body: IntrospectForm }) {
    const inactive = { active: false };
    if (looksLikeAClientToken(request.body.token)) {
      const client = await checkClientToken(request.body.token);
      if (client === undefined) return inactive;
      return {
        active: true,
        token_type: "Bearer" as const,
        client_id: client.client_id,
        ...(client.scope === "" ? {} : { scope: client.scope }),
        sub: client.sub,
        iss: client.iss,
        aud: client.aud,
        iat: client.iat,
        exp: client.exp,
        jti: client.jti,
      };
    }
    // The protected routes' own token check, so that both always agree (guard.ts).
    const caller = await guards.callerOf(request.body.token, request.log);
    if (caller === undefined) return inactive;
    const { user, claims } = caller;
    if (claims.sid !== undefined) {
      const session = await store.findSession(claims.sid);
      const live =
        session !== undefined &&
        session.userId === user.id &&
        session.revokedAt === null &&
        Date.parse(session.expiresAt) > clock();
      if (!live) return inactive;
    }
    return {
      active: true,
      token_type: "Bearer" as const,
      sub: claims.sub,
      username: user.email,
      user_id: user.id,
      iss: claims.iss,
      aud: claims.aud,
      iat: claims.iat,
      exp: claims.exp,
      ...(claims.sid === undefined ? {} : { sid: claims.sid }),
      ...(claims.amr === undefined ? {} : { amr: claims.amr }),
    };
  }
};
