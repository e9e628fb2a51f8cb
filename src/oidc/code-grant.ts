// The token endpoint's grants for registered clients (OpenID Connect):
// authorization_code, which redeems a code for an access token for the
// client (RFC 9068), a refresh token and the ID token; and the refresh of a
// session such a code started, which only its client may spend (rotation and
// reuse detection are the service's own, auth/sessions.ts). A code works
// once: it is spent before anything else is checked, and presented again it
// revokes the session its first redemption started (RFC 6749 4.1.2, RFC 9700
// 4.2.4). Errors carry RFC 6749 5.2's `error` beside the spec's `detail`.
// The access token is for the relying party's own audience (audiences.ts):
// userinfo and the resources registered for the client, never the service's
// first-party audience; it carries no credential stamp (its session decides).
// With a DPoP proof (RFC 9449 section 5), the access token is bound to its
// key (`token_type` DPoP), and a public client's session too: its refresh
// tokens then need a proof by that key (a confidential client's are already
// bound to the client by its authentication).
import type { FastifyRequest } from "fastify";
import type { ClientInfo, Sessions } from "../auth/sessions.ts";
import { parseRefreshToken } from "../auth/sessions.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS, type TokenService } from "../auth/tokens.ts";
import { proofKeyOf } from "../dpop/request-key.ts";
import { HttpError } from "../errors.ts";
import { OAuthError } from "../oauth-errors.ts";
import type { Audit } from "../platform/audit.ts";
import type { AuditEntry, ClientSessionRecord, UserStore } from "../store/store.ts";
import { delegatedAudience, resourcesFor } from "./audiences.ts";
import { hashCode, pkceMatches } from "./authorization.ts";
import { userClaims } from "./claims.ts";
import { authenticateClient } from "./client-auth.ts";
import type { Client, ClientRegistry } from "./clients.ts";
import type { IdTokens } from "./id-tokens.ts";
import { meetsSecondFactorRule, SECOND_FACTOR_REQUIRED } from "./second-factor-rule.ts";

export const INVALID_CODE = "The authorization code is invalid, expired, already used or not for this request";
export const INVALID_CLIENT_REFRESH = "Invalid or expired refresh token";

export interface ClientTokenResponse {
  access_token: string;
  token_type: "bearer" | "DPoP";
  expires_in: number;
  refresh_token: string;
  id_token?: string;
  scope: string;
}

export interface OidcGrants {
  /** The client is authenticated already (the token route does it for a grant that requires one). */
  authorizationCode(
    request: FastifyRequest,
    form: Record<string, string | undefined>,
    client: Client,
  ): Promise<ClientTokenResponse>;
  /** The client binding of the session a refresh token names, if it is a client's. */
  bindingOf(refreshToken: string): Promise<ClientSessionRecord | undefined>;
  /** `client`: already authenticated by the route; else the client is authenticated here (401 invalid_client). */
  refresh(
    request: FastifyRequest,
    form: Record<string, string | undefined>,
    binding: ClientSessionRecord,
    client?: Client,
  ): Promise<ClientTokenResponse>;
}

function invalidGrant(detail: string): OAuthError {
  return new OAuthError(400, "invalid_grant", detail);
}

function requiredField(form: Record<string, string | undefined>, name: string): string {
  const value = form[name];
  if (value === undefined) throw new OAuthError(400, "invalid_request", `body.${name}: field required`);
  return value;
}

export function createOidcGrants(options: {
  store: UserStore;
  sessions: Sessions;
  tokens: TokenService;
  idTokens: IdTokens;
  clients: ClientRegistry;
  audit: Audit;
  clock: () => number;
  clientInfo: (request: FastifyRequest) => ClientInfo;
  /** The userinfo endpoint's absolute URL: the audience of a token granted `openid`. */
  userinfoUrl: () => string;
  /**
   * Issue 35: the service's own apps (the admin console's client, while it is on), whose access tokens
   * are the service's first-party user tokens, as the sign-in page's password grant issues, so that they
   * open the account and admin API; every other client's are RFC 9068 tokens for their resources.
   */
  serviceApps?: ReadonlySet<string>;
  /**
   * Issue 35, ADMIN_CONSOLE_REQUIRE_MFA: clients (the console's) whose code and refresh grants are refused
   * (invalid_grant) for a sign-in without a second factor or a user without one (second-factor-rule.ts).
   */
  secondFactorRequired?: ReadonlySet<string>;
}): OidcGrants {
  const { store, sessions, tokens, idTokens, clients, audit, clock, clientInfo, userinfoUrl } = options;
  const serviceApps = options.serviceApps ?? new Set<string>();
  const secondFactorRequired = options.secondFactorRequired ?? new Set<string>();
  const iso = () => new Date(clock()).toISOString();

  return {
    async authorizationCode(request, form, client) {
      if (!client.grantTypes.includes("authorization_code"))
        throw new OAuthError(
          400,
          "unauthorized_client",
          "This client is not registered for the authorization_code grant",
        );
      const code = requiredField(form, "code");
      const redirectUri = requiredField(form, "redirect_uri");
      const verifier = requiredField(form, "code_verifier");
      // Before the code is spent: a resource the client may not ask for (invalid_target) leaves it usable.
      const resources = resourcesFor(client, form.resource);
      const now = iso();
      const redemption = await store.redeemAuthorizationCode(hashCode(code), now);
      if (redemption.outcome === "unknown") throw invalidGrant(INVALID_CODE);
      const stored = redemption.code;
      if (redemption.outcome === "replayed") {
        // RFC 6749 4.1.2: a code used twice revokes what it issued; the legitimate client signs in again.
        const replayed: AuditEntry = { type: "oidc", outcome: "code_replayed", clientAddress: request.ip };
        const revoked = stored.issuedSessionId !== null && (await sessions.revoke(stored.issuedSessionId, [replayed]));
        // Recorded also when nothing was left to revoke (its first redemption failed, or its session has
        // ended): a replayed code is a stolen one whatever it still opens.
        if (!revoked) await audit.record("oidc", stored.userId, "code_replayed", request.ip);
        request.actionOutcome = "replayed";
        throw invalidGrant(INVALID_CODE);
      }
      if (
        stored.clientId !== client.id ||
        stored.expiresAt <= now ||
        stored.redirectUri !== redirectUri ||
        !pkceMatches(verifier, stored.codeChallenge) ||
        // RFC 9449 section 10: a code asked for with dpop_jkt is redeemed only with a proof by that key.
        (typeof stored.dpopJkt === "string" && stored.dpopJkt !== proofKeyOf(request))
      ) {
        await audit.record("oidc", stored.userId, "code_refused", request.ip);
        throw invalidGrant(INVALID_CODE);
      }
      // The code dies with the browser session it was approved in, and with its user.
      const browser = await store.findSession(stored.browserSessionId);
      const user = await store.findById(stored.userId);
      if (!browser || browser.revokedAt !== null || browser.expiresAt <= now || !user?.isActive)
        throw invalidGrant(INVALID_CODE);
      // The code is spent already: the person signs in again, with a second factor, for a new one.
      if (secondFactorRequired.has(client.id) && !(await meetsSecondFactorRule(store, user.id, browser.amr))) {
        await audit.record("oidc", user.id, "second_factor_required", request.ip);
        throw invalidGrant(SECOND_FACTOR_REQUIRED);
      }
      const jkt = proofKeyOf(request);
      const issued = await sessions.startForClient(
        user.id,
        clientInfo(request),
        { clientId: client.id, scope: stored.scope, browserSessionId: browser.id, fromCodeHash: stored.codeHash },
        [{ type: "oidc", outcome: "code_redeemed", clientAddress: request.ip }],
        browser.amr,
        client.tokenEndpointAuthMethod === "none" ? jkt : undefined,
      );
      const scopes = stored.scope.split(" ");
      const accessToken = serviceApps.has(client.id)
        ? tokens.issueAccessToken(user, issued.session.id, browser.amr, jkt)
        : tokens.issueDelegatedAccessToken({
            userId: user.id,
            clientId: client.id,
            scope: stored.scope,
            sessionId: issued.session.id,
            amr: browser.amr,
            audience: delegatedAudience(resources, userinfoUrl()),
            jkt,
          });
      const { sub: _sub, ...profile } = userClaims(user, scopes);
      return {
        access_token: accessToken,
        token_type: jkt === undefined ? "bearer" : "DPoP",
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        refresh_token: issued.refreshToken,
        id_token: idTokens.issue({
          sub: user.id,
          aud: client.id,
          authTime: Math.floor(Date.parse(browser.createdAt) / 1000),
          nonce: stored.nonce,
          amr: browser.amr,
          sid: browser.id,
          accessToken,
          extra: profile,
        }),
        scope: stored.scope,
      };
    },

    async bindingOf(refreshToken) {
      const parsed = parseRefreshToken(refreshToken);
      return parsed && store.findClientSession(parsed.sessionId);
    },

    async refresh(request, form, binding, authenticated) {
      const client = authenticated ?? (await authenticateClient(clients, request.headers.authorization, form));
      // Another client's refresh token is refused before it is spent, so it stays its owner's.
      if (client.id !== binding.clientId) throw invalidGrant(INVALID_CLIENT_REFRESH);
      const presented = requiredField(form, "refresh_token");
      // Before the refresh token is spent: a resource the client may not ask for leaves it usable.
      const audience = delegatedAudience(resourcesFor(client, form.resource), userinfoUrl());
      let rotated: Awaited<ReturnType<Sessions["refresh"]>>;
      try {
        rotated = await sessions.refresh(presented, clientInfo(request), proofKeyOf(request));
      } catch (error) {
        if (error instanceof HttpError && error.status === 401) throw invalidGrant(INVALID_CLIENT_REFRESH);
        throw error;
      }
      if (!rotated.user.isActive) throw invalidGrant(INVALID_CLIENT_REFRESH);
      // A session from before the setting was on, or whose user has since lost every factor, ends here.
      if (
        secondFactorRequired.has(client.id) &&
        !(await meetsSecondFactorRule(store, rotated.user.id, rotated.session.amr))
      ) {
        await sessions.revoke(rotated.session.id, [
          { type: "oidc", outcome: "second_factor_required", clientAddress: request.ip },
        ]);
        throw invalidGrant(SECOND_FACTOR_REQUIRED);
      }
      const jkt = proofKeyOf(request);
      return {
        access_token: serviceApps.has(client.id)
          ? tokens.issueAccessToken(rotated.user, rotated.session.id, rotated.session.amr, jkt)
          : tokens.issueDelegatedAccessToken({
              userId: rotated.user.id,
              clientId: client.id,
              scope: binding.scope,
              sessionId: rotated.session.id,
              amr: rotated.session.amr,
              audience,
              jkt,
            }),
        token_type: jkt === undefined ? "bearer" : "DPoP",
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        refresh_token: rotated.refreshToken,
        scope: binding.scope,
      };
    },
  };
}
