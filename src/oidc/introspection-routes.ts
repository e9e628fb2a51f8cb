// POST /auth/introspect (RFC 7662): for resource servers that want the answer
// a local JWT check cannot give, such as an ended session or a deactivated or
// deleted user. Only callers the operator configured may ask: a resource
// server from INTROSPECTION_CLIENTS with HTTP Basic, or an admin with a
// bearer token; anyone else could otherwise probe stolen tokens. The answer
// is {"active": false} for anything not valid now; an active token gets its
// claims. The check is the token check of protected routes (the same guard),
// plus the session: the hot path does not look sessions up, this does.
// Registered confidential clients (issue 24) may ask too, authenticating as
// they registered (HTTP Basic, or client_id and client_secret in the form).
// RFC 7662 section 4 leaves it to the server whether a caller may see a
// token: the configured resource servers, admins and registered clients that
// an admin marked as resource servers see every token; any other registered
// client sees only the tokens issued to it (its own client_credentials
// tokens, its relying-party tokens for users) and `{"active": false}` for
// the rest, so a third-party app cannot read a user's first-party token (the
// e-mail, the session) or another client's.
import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Guards } from "../auth/guard.ts";
import { type ClientAccessClaims, InvalidToken, type TokenService, tokenKind } from "../auth/tokens.ts";
import { NOT_ENOUGH_PRIVILEGES, unauthorized } from "../errors.ts";
import { refuse } from "../platform/error-handler.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import { BEARER_SECURITY, errorResponse, INTROSPECTION_SCHEME } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";
import { basicCredentials, presentedClient } from "./client-auth.ts";
import type { ClientRegistry } from "./clients.ts";
import { liveDelegatedToken } from "./delegated-tokens.ts";
import { IntrospectForm, IntrospectionOut } from "./introspection-schemas.ts";
import type { IntrospectionClient } from "./settings.ts";

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
/** The one refusal of a caller without the right credentials, built once: only its status, headers and detail are sent. */
const REFUSED = unauthorized(INTROSPECTION_CLIENT_REFUSED);

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

/** Which tokens a caller may see: every one (a resource server, an admin), or only a client's own. */
type Sight = { every: true } | { every: false; clientId: string };
const EVERY: Sight = { every: true };

/** One audience as a string, several as an array (RFC 7662 section 2.2 follows RFC 7519's aud). */
const audClaim = (aud: readonly string[]) => (aud.length === 1 ? aud[0] : [...aud]);

export const introspectRoutes: FastifyPluginAsyncTypebox<IntrospectRouteOptions> = async (
  app,
  { store, guards, tokens, clients, registry, clock },
) => {
  const configuredClient = configuredClients(clients);
  const sights = new WeakMap<FastifyRequest, Sight>();
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  /**
   * A configured resource server (HTTP Basic), a registered confidential client (as it registered:
   * Basic or the form), or an admin (bearer token); 401 or 403 otherwise, the same words whatever
   * was wrong. A caller's own 401 is sent rather than thrown (the answer the error handler would
   * give): a refused client is this route's hot failure, and Fastify's error path costs more than it.
   */
  async function authorizeCaller(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const header = request.headers.authorization;
    const form = (request.body ?? {}) as { client_id?: string; client_secret?: string };
    const basic = basicCredentials(header);
    if (basic !== undefined || form.client_secret !== undefined) {
      if (basic && form.client_secret === undefined && configuredClient(basic) !== undefined) {
        sights.set(request, EVERY);
        return;
      }
      let presented: ReturnType<typeof presentedClient>;
      try {
        presented = presentedClient(header, { client_id: form.client_id, client_secret: form.client_secret });
      } catch {
        return refuse(reply, REFUSED);
      }
      // Public clients (`none`) have nothing to prove who they are with: they may not introspect.
      const client = presented && presented.method !== "none" ? await registry.authenticate(presented) : undefined;
      if (client === undefined) return refuse(reply, REFUSED);
      sights.set(request, client.resourceServer ? EVERY : { every: false, clientId: client.id });
      return;
    }
    if (!/^bearer /i.test(header ?? "")) return refuse(reply, REFUSED);
    await guards.authenticate(request, reply);
    await guards.requireAdmin(request, reply);
    sights.set(request, EVERY);
  }

  /** Whether the caller may see a token issued to `clientId` (undefined: a first-party user token). */
  const sees = (request: FastifyRequest, clientId: string | undefined) => {
    const sight = sights.get(request);
    return sight !== undefined && (sight.every || sight.clientId === clientId);
  };

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
          "The clients of `INTROSPECTION_CLIENTS`, registered clients an admin marked `resource_server`, and " +
          "admins see every token; any other registered client sees only the tokens issued to it (its own " +
          '`client_credentials` tokens, its access tokens for users) and `{"active": false}` for the rest ' +
          "(RFC 7662 section 4). A client's token is active with its `client_id` and `scope` while that client " +
          "is registered (and, for a user's, while its session lives). Answers " +
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

  /** RFC 9449 section 6.2: a DPoP-bound token's type is DPoP, and its key is named in `cnf`. */
  function tokenTypeOf(jkt: string | undefined) {
    return jkt === undefined ? { token_type: "Bearer" as const } : { token_type: "DPoP" as const, cnf: { jkt } };
  }

  /** RFC 7662 section 2.2: the token's claims while it is valid now and the caller may see it, else inactive. */
  async function introspect(request: FastifyRequest & { body: IntrospectForm }) {
    const inactive = { active: false };
    const { token } = request.body;
    const kind = tokenKind(token);
    if (kind === "client") {
      const client = await checkClientToken(token);
      if (client === undefined || !sees(request, client.client_id)) return inactive;
      return {
        active: true,
        ...tokenTypeOf(client.jkt),
        client_id: client.client_id,
        ...(client.scope === "" ? {} : { scope: client.scope }),
        sub: client.sub,
        iss: client.iss,
        aud: audClaim(client.aud),
        iat: client.iat,
        exp: client.exp,
        jti: client.jti,
      };
    }
    if (kind === "delegated") {
      // A relying party's token for a user: its client (RFC 9068), and only while its session lives.
      const live = await liveDelegatedToken(token, { tokens, store, clock });
      if (live === undefined || !sees(request, live.claims.clientId)) return inactive;
      const { claims } = live;
      return {
        active: true,
        ...tokenTypeOf(claims.jkt),
        client_id: claims.clientId,
        scope: claims.scope,
        sub: claims.sub,
        iss: claims.iss,
        aud: audClaim(claims.aud),
        iat: claims.iat,
        exp: claims.exp,
        jti: claims.jti,
      };
    }
    // A first-party user token: for the resource servers and admins only.
    if (!sees(request, undefined)) return inactive;
    // The protected routes' own token check, so that both always agree (guard.ts).
    const caller = await guards.callerOf(token, request.log);
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
      ...tokenTypeOf(claims.jkt),
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
