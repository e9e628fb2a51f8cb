// POST /auth/introspect (RFC 7662): for resource servers that want the answer
// a local JWT check cannot give, such as an ended session or a deactivated or
// deleted user. Only callers the operator configured may ask: a resource
// server from INTROSPECTION_CLIENTS with HTTP Basic, or an admin with a
// bearer token; anyone else could otherwise probe stolen tokens. The answer
// is {"active": false} for anything not valid now; an active token gets its
// claims. The check is the token check of protected routes (the same guard),
// plus the session: the hot path does not look sessions up, this does.
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Guards } from "../auth/guard.ts";
import { InvalidToken, type TokenService } from "../auth/tokens.ts";
import type { IntrospectionClient } from "../config.ts";
import { BEARER_SECURITY, INTROSPECTION_SCHEME } from "../docs.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, unauthorized } from "../errors.ts";
import { acceptFormBodies } from "../forms.ts";
import { errorResponse, IntrospectForm, IntrospectionOut } from "../schemas.ts";
import type { UserStore } from "../store/store.ts";

export interface IntrospectRouteOptions {
  store: UserStore;
  guards: Guards;
  tokens: TokenService;
  clients: readonly IntrospectionClient[];
  clock: () => number;
}

export const INTROSPECTION_CLIENT_REFUSED = "Introspection needs a configured client's credentials or an admin token";

const BASIC = /^basic +([A-Za-z0-9+/=]+) *$/i;

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/**
 * The client id when the Basic credentials match a configured client, else undefined. Secrets are
 * compared as SHA-256 digests in constant time, so neither their content nor their length leaks.
 */
function basicClient(header: string, clients: readonly IntrospectionClient[]): string | undefined {
  const match = BASIC.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  // RFC 6749 section 2.3.1: client id and secret are form-encoded before Basic encoding.
  let id: string;
  let secret: string;
  try {
    id = decodeURIComponent(decoded.slice(0, colon).replaceAll("+", " "));
    secret = decodeURIComponent(decoded.slice(colon + 1).replaceAll("+", " "));
  } catch {
    return undefined;
  }
  const client = clients.find((candidate) => candidate.id === id);
  const expected = digest(client?.secret ?? "no client: compare against something all the same");
  return timingSafeEqual(expected, digest(secret)) && client ? client.id : undefined;
}

export const introspectRoutes: FastifyPluginAsyncTypebox<IntrospectRouteOptions> = async (
  app,
  { store, guards, tokens, clients, clock },
) => {
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  /** A configured resource server (HTTP Basic) or an admin (bearer token); 401 or 403 otherwise. */
  async function authorizeCaller(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization ?? "";
    if (/^basic /i.test(header)) {
      if (basicClient(header, clients) === undefined) throw unauthorized(INTROSPECTION_CLIENT_REFUSED);
      return;
    }
    if (!/^bearer /i.test(header)) throw unauthorized(INTROSPECTION_CLIENT_REFUSED);
    await guards.authenticate(request, reply);
    await guards.requireAdmin(request, reply);
  }

  /**
   * Runs the protected routes' own token check on the token being introspected, so both always
   * agree (a later change to that check applies here too): it reads the token from the
   * Authorization header of the request it is given, so it gets a request of its own.
   */
  async function checkToken(request: FastifyRequest, reply: FastifyReply, token: string) {
    const probe = Object.create(request) as FastifyRequest;
    probe.headers = { authorization: `Bearer ${token}` };
    probe.user = null;
    probe.sessionId = null;
    try {
      await guards.authenticate(probe, reply);
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) return undefined;
      throw error;
    }
    // The guard set these on success; read them back through the request type, not the narrowed nulls.
    const { user, sessionId } = probe as FastifyRequest;
    return user ? { user, sessionId } : undefined;
  }

  app.post(
    "/auth/introspect",
    {
      // Before the body is validated, so a stranger learns nothing, not even what the form lacks.
      preValidation: [authorizeCaller],
      schema: {
        operationId: "introspectToken",
        security: [{ [INTROSPECTION_SCHEME]: [] }, ...BEARER_SECURITY],
        tags: ["auth"],
        summary: "Is this access token valid now? (RFC 7662)",
        description:
          "For resource servers. The caller authenticates with HTTP Basic as a client listed in " +
          "`INTROSPECTION_CLIENTS`, or with an admin's bearer token. Form-encoded `token`. Answers " +
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
    async function introspectToken(request, reply) {
      const inactive = { active: false };
      const checked = await checkToken(request, reply, request.body.token);
      if (checked === undefined) return inactive;
      let claims: ReturnType<TokenService["verifyAccessToken"]>;
      try {
        claims = tokens.verifyAccessToken(request.body.token);
      } catch (error) {
        if (error instanceof InvalidToken) return inactive;
        throw error;
      }
      if (checked.sessionId !== null) {
        const session = await store.findSession(checked.sessionId);
        const live =
          session !== undefined &&
          session.userId === checked.user.id &&
          session.revokedAt === null &&
          Date.parse(session.expiresAt) > clock();
        if (!live) return inactive;
      }
      return {
        active: true,
        token_type: "Bearer" as const,
        sub: claims.sub,
        username: checked.user.email,
        user_id: checked.user.id,
        iss: claims.iss,
        aud: claims.aud,
        iat: claims.iat,
        exp: claims.exp,
        ...(claims.sid === undefined ? {} : { sid: claims.sid }),
        ...(claims.amr === undefined ? {} : { amr: claims.amr }),
      };
    },
  );
};
