// The token endpoint's device_code grant (RFC 8628 section 3.4): the device
// polls with its device code until the person approved or denied it at
// /device. The route authenticates the client first (client: "required"; a
// public client by its client_id). A poll still pending costs one indexed
// read (by the code's hash) and one step of the device's pace counter (in
// this process, or in Redis when several instances share the counters, as
// the rate limits are); a poll sooner than the interval raises that
// device's interval by 5 seconds in the database (section 3.5). An approved code is
// spent by one conditional UPDATE, so it is redeemed once, on any instance;
// another client's code, a spent one and an unknown one are invalid_grant.
// The tokens are the authorization_code grant's for the client and scope:
// the relying party's access token (audiences.ts), a refresh token bound to
// the client and to the browser session the person approved in, and with
// `openid` an ID token whose amr and auth_time are that sign-in's.

import type { FastifyRequest } from "fastify";
import type { CounterStore } from "../auth/rate-limits.ts";
import type { ClientInfo, Sessions } from "../auth/sessions.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS, type TokenService } from "../auth/tokens.ts";
import type { Grant, GrantContext } from "../core/grants/grant.ts";
import { proofKeyOf } from "../dpop/request-key.ts";
import { OAuthError } from "../oauth-errors.ts";
import { delegatedAudience, resourcesFor } from "../oidc/audiences.ts";
import { userClaims } from "../oidc/claims.ts";
import { type Client, DEVICE_CODE_GRANT_TYPE } from "../oidc/clients.ts";
import type { IdTokens } from "../oidc/id-tokens.ts";
import type { Audit } from "../platform/audit.ts";
import type { DeviceAuthorizationRecord, UserStore } from "../store/store.ts";
import { hashDeviceCode } from "./codes.ts";

export const DEVICE_AUDIT = "device_authorization" as const;
export const SLOW_DOWN_SECONDS = 5;
export const INVALID_DEVICE_CODE = "The device code is invalid, already used or not this client's";
export const AUTHORIZATION_PENDING = "The person has not approved the request yet; keep polling at the interval";
export const SLOW_DOWN = "Polling too fast: wait 5 seconds more between polls";
export const ACCESS_DENIED = "The person denied the request";
export const EXPIRED_TOKEN = "The device code has expired; start again";
export const NOT_FOR_DEVICE_GRANT = `This client is not registered for the ${DEVICE_CODE_GRANT_TYPE} grant`;

type GrantRequest = GrantContext["request"];

export interface DeviceGrantDeps {
  store: UserStore;
  sessions: Sessions;
  tokens: TokenService;
  idTokens: IdTokens;
  audit: Audit;
  clock: () => number;
  clientInfo: (request: FastifyRequest) => ClientInfo;
  /** The userinfo endpoint's absolute URL: the audience of every relying party's token. */
  userinfoUrl: () => string;
  /** Where each pending device's pace is kept (slow_down): the rate limits' counters. */
  counters: CounterStore;
}

export function deviceCodeGrant(deps: DeviceGrantDeps): Grant {
  const { store, sessions, tokens, idTokens, audit, clock, clientInfo, userinfoUrl, counters } = deps;

  async function refuse(
    request: FastifyRequest,
    userId: string | null,
    error: string,
    description: string,
  ): Promise<never> {
    await audit.record(DEVICE_AUDIT, userId, `refused:${error}`, request.ip);
    throw new OAuthError(400, error, description);
  }

  /** Approved: spend it (once), then the code grant's tokens. */
  async function redeem(request: GrantRequest, client: Client, found: DeviceAuthorizationRecord, now: number) {
    // Before the code is spent: a resource the client may not ask for (invalid_target) leaves it usable.
    const audience = delegatedAudience(resourcesFor(client, request.body.resource), userinfoUrl());
    const at = new Date(now).toISOString();
    const spent = await store.redeemDeviceAuthorization(found.deviceCodeHash, at);
    if (spent === undefined) return refuse(request, found.userId, "invalid_grant", INVALID_DEVICE_CODE);
    // The approval dies with the browser session it was given in, and with its user.
    const browser = spent.browserSessionId === null ? undefined : await store.findSession(spent.browserSessionId);
    const user = spent.userId === null ? undefined : await store.findById(spent.userId);
    if (!browser || browser.revokedAt !== null || browser.expiresAt <= at || !user?.isActive)
      return refuse(request, spent.userId, "invalid_grant", INVALID_DEVICE_CODE);
    // RFC 9449: a poll with a DPoP proof gets tokens bound to its key (a public client's refresh token too).
    const jkt = proofKeyOf(request);
    const issued = await sessions.startForClient(
      user.id,
      clientInfo(request),
      { clientId: client.id, scope: spent.scope, browserSessionId: browser.id },
      [{ type: DEVICE_AUDIT, outcome: "redeemed", clientAddress: request.ip }],
      browser.amr,
      client.tokenEndpointAuthMethod === "none" ? jkt : undefined,
    );
    const scopes = spent.scope.split(" ").filter((scope) => scope !== "");
    const accessToken = tokens.issueDelegatedAccessToken({
      userId: user.id,
      clientId: client.id,
      scope: spent.scope,
      sessionId: issued.session.id,
      amr: browser.amr,
      audience,
      jkt,
    });
    const { sub: _sub, ...profile } = userClaims(user, scopes);
    request.actionOutcome = "success";
    return {
      access_token: accessToken,
      token_type: jkt === undefined ? ("bearer" as const) : ("DPoP" as const),
      expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
      refresh_token: issued.refreshToken,
      ...(scopes.includes("openid")
        ? {
            id_token: idTokens.issue({
              sub: user.id,
              aud: client.id,
              authTime: Math.floor(Date.parse(browser.createdAt) / 1000),
              nonce: null,
              amr: browser.amr,
              sid: browser.id,
              accessToken,
              extra: profile,
            }),
          }
        : {}),
      scope: spent.scope,
    };
  }

  return {
    type: DEVICE_CODE_GRANT_TYPE,
    parameters: ["device_code", "resource"],
    client: "required",
    async handle({ request, client }) {
      if (client === undefined) throw new Error("the token route authenticates the client of this grant");
      if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE))
        throw new OAuthError(400, "unauthorized_client", NOT_FOR_DEVICE_GRANT);
      const deviceCode = request.body.device_code;
      if (deviceCode === undefined) throw new OAuthError(400, "invalid_request", "body.device_code: field required");
      const found = await store.findDeviceAuthorization(hashDeviceCode(deviceCode));
      // An unknown code is refused without a write (no audit row for each guess); another client's code
      // is refused before anything is changed, so it stays its owner's, and recorded: a stolen code.
      if (found === undefined) throw new OAuthError(400, "invalid_grant", INVALID_DEVICE_CODE);
      if (found.clientId !== client.id) return refuse(request, found.userId, "invalid_grant", INVALID_DEVICE_CODE);
      if (found.status === "redeemed") return refuse(request, found.userId, "invalid_grant", INVALID_DEVICE_CODE);
      const now = clock();
      if (Date.parse(found.expiresAt) <= now) {
        request.actionOutcome = "expired_token";
        throw new OAuthError(400, "expired_token", EXPIRED_TOKEN);
      }
      if (found.status === "denied") {
        request.actionOutcome = "access_denied";
        throw new OAuthError(400, "access_denied", ACCESS_DENIED);
      }
      if (found.status === "approved") return redeem(request, client, found, now);
      // Pending: was this poll sooner than the interval after the device's last one? The pace lives in
      // the rate-limit counters (this process's, or Redis shared by every instance): a poll at the
      // interval costs one read and one counter step, no write to the database. A poll too soon raises
      // the device's interval for good (one write: slow_down is rare for a well-behaved device), and
      // its window starts again from this poll with the new interval.
      const pace = `device-poll:${found.deviceCodeHash}`;
      if ((await counters.increment(pace, found.intervalSeconds * 1000)).count > 1) {
        await store.recordDevicePoll(found.deviceCodeHash, new Date(now).toISOString(), SLOW_DOWN_SECONDS);
        await counters.delete(pace);
        await counters.increment(pace, (found.intervalSeconds + SLOW_DOWN_SECONDS) * 1000);
        request.actionOutcome = "slow_down";
        throw new OAuthError(400, "slow_down", SLOW_DOWN);
      }
      request.actionOutcome = "authorization_pending";
      throw new OAuthError(400, "authorization_pending", AUTHORIZATION_PENDING);
    },
  };
}
