// POST /oauth/device_authorization (RFC 8628 section 3.1): a device asks to
// sign a person in. The client authenticates as at the token endpoint
// (oidc/client-auth.ts: HTTP Basic, the form's secret, or a public client by
// its client_id alone); only a client registered for the device grant may
// ask, for scopes within its registered scope and this provider's (the
// authorization endpoint's rule; left out, its registered scope). The
// answer: a device code (256 random bits, stored as its SHA-256 only), a
// user code (codes.ts), where to enter it, how long both live and how often
// to poll. Every error is RFC 6749 section 5.2's, 4xx.

import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { RateLimits } from "../auth/rate-limits.ts";
import { OAuthError, oauthErrorCode, renderOAuthError } from "../oauth-errors.ts";
import { SUPPORTED_SCOPES } from "../oidc/authorization.ts";
import { authenticateClient, CLIENT_AUTHENTICATION_FAILED } from "../oidc/client-auth.ts";
import { type ClientRegistry, DEVICE_CODE_GRANT_TYPE } from "../oidc/clients.ts";
import type { Audit } from "../platform/audit.ts";
import { describeError } from "../platform/error-handler.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import { NO_SECURITY, oauthErrorResponse } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";
import { displayUserCode, hashDeviceCode, hashUserCode, newDeviceCode, newUserCode } from "./codes.ts";
import { DEVICE_AUDIT, NOT_FOR_DEVICE_GRANT } from "./grant.ts";
import { DEVICE_AUTHORIZATION_PATH, DEVICE_PAGE_PATH } from "./paths.ts";
import type { DeviceSettings } from "./settings.ts";

export interface DeviceAuthorizationRouteOptions {
  store: UserStore;
  clients: ClientRegistry;
  audit: Audit;
  settings: DeviceSettings;
  clock: () => number;
  /** Counts public clients' requests and refused ones per address (CLIENT_REQUEST_LIMIT_PER_ADDRESS). */
  limits: RateLimits;
  /** The service's public base URL, for the verification URI. */
  baseUrl: () => string;
}

const DeviceAuthorizationForm = Type.Object(
  {
    client_id: Type.Optional(
      Type.String({ maxLength: 200, description: "The client (alone for a public client, `none`)." }),
    ),
    client_secret: Type.Optional(Type.String({ maxLength: 200, description: "`client_secret_post`." })),
    scope: Type.Optional(
      Type.String({
        maxLength: 1000,
        description:
          "Space-separated, within the client's registered scope and `openid profile email offline_access`; " +
          "left out, the client's registered scope. `openid` adds an ID token to the tokens.",
        examples: ["openid profile offline_access"],
      }),
    ),
  },
  { $id: "DeviceAuthorizationForm" },
);

const DeviceAuthorizationOut = Type.Object(
  {
    device_code: Type.String({ description: "The device's secret: poll the token endpoint with it. One use." }),
    user_code: Type.String({ description: "What the person types at the verification URI.", examples: ["WDJB-MJHT"] }),
    verification_uri: Type.String({ description: "Where the person enters the code." }),
    verification_uri_complete: Type.String({ description: "The same with the code filled in (for a QR code)." }),
    expires_in: Type.Integer({ description: "Seconds both codes live.", examples: [600] }),
    interval: Type.Integer({ description: "Seconds to wait between polls.", examples: [5] }),
  },
  { $id: "DeviceAuthorization", description: "RFC 8628 section 3.2." },
);

const INVALID_SCOPE = "A requested scope is not available to this client";

export const deviceAuthorizationRoutes: FastifyPluginAsyncTypebox<DeviceAuthorizationRouteOptions> = async (
  app,
  { store, clients, audit, settings, clock, limits, baseUrl },
) => {
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);
  // RFC 8628 section 3.1 answers as RFC 6749 section 5.2: every error carries `error`, 400 not 422.
  // A refusal is counted against its address (one over the limit is not): guessing client ids costs a
  // limited number of tries.
  app.setErrorHandler(async function deviceAuthorizationErrors(error: FastifyError, request: FastifyRequest, reply) {
    let refusal: OAuthError;
    if (error instanceof OAuthError) refusal = error;
    else {
      const { status, detail, headers } = describeError(error, request);
      const answered = status === 422 ? 400 : status;
      refusal = new OAuthError(answered, oauthErrorCode(answered, detail), detail, headers);
    }
    request.actionOutcome ??= refusal.error;
    if (refusal.status < 500 && refusal.status !== 429) await limits.countClientRequest(request.ip).catch(() => {});
    renderOAuthError(refusal, reply as FastifyReply);
    return reply;
  });

  /** The authorization endpoint's rule: known scopes within the client's (openid always allowed). */
  function scopesOf(requested: string | undefined, registered: string): string[] {
    const allowed = new Set(registered.split(" "));
    const known = (scope: string) => (SUPPORTED_SCOPES as readonly string[]).includes(scope);
    if (requested === undefined) return registered.split(" ").filter((scope) => scope !== "" && known(scope));
    const scopes = [...new Set(requested.split(" ").filter((scope) => scope !== ""))];
    if (scopes.some((scope) => !known(scope) || !(allowed.has(scope) || scope === "openid")))
      throw new OAuthError(400, "invalid_scope", INVALID_SCOPE);
    return scopes;
  }

  app.post(
    DEVICE_AUTHORIZATION_PATH,
    {
      config: { observed: "device_authorization" },
      schema: {
        operationId: "deviceAuthorization",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Start signing a device in (RFC 8628 device authorization)",
        description:
          "For a command-line tool, a TV or another device without a browser. The client authenticates as at " +
          "the token endpoint (HTTP Basic, `client_id` and `client_secret` in the form, or `client_id` alone for " +
          `a public client) and must be registered for \`${DEVICE_CODE_GRANT_TYPE}\`. Show the person ` +
          "`user_code` and `verification_uri` (or `verification_uri_complete`, e.g. as a QR code); then poll the " +
          `token endpoint with \`grant_type=${DEVICE_CODE_GRANT_TYPE}\` and \`device_code\` every \`interval\` ` +
          "seconds: `authorization_pending` until the person approves (then the tokens), `slow_down` when " +
          "polled too fast (wait 5 seconds more from then on), `access_denied`, `expired_token`.",
        consumes: ["application/x-www-form-urlencoded"],
        body: DeviceAuthorizationForm,
        response: {
          200: DeviceAuthorizationOut,
          400: oauthErrorResponse(
            "A client not registered for the device grant (`unauthorized_client`), a scope outside its registered " +
              "scope (`invalid_scope`), a repeated or malformed field, or two client authentication methods " +
              "(`invalid_request`).",
            NOT_FOR_DEVICE_GRANT,
            "unauthorized_client",
            true,
          ),
          401: oauthErrorResponse(
            "Client authentication failed (unknown client, wrong secret, or not the method it registered).",
            CLIENT_AUTHENTICATION_FAILED,
            "invalid_client",
            true,
          ),
        },
      },
    },
    async function startDeviceAuthorization(request, reply) {
      await limits.checkClientRequests(request.ip);
      const client = await authenticateClient(clients, request.headers.authorization, request.body);
      if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE))
        throw new OAuthError(400, "unauthorized_client", NOT_FOR_DEVICE_GRANT);
      const scope = scopesOf(request.body.scope, client.scope).join(" ");
      // A public client's request needs no secret: counted, so one address cannot fill the store.
      if (client.tokenEndpointAuthMethod === "none") await limits.countClientRequest(request.ip);
      const deviceCode = newDeviceCode();
      const now = clock();
      const expiresIn = settings.codeLifetimeSeconds;
      let userCode = newUserCode();
      // A user code already taken (about one in 25 billion per live code) is drawn again.
      for (let attempt = 0; ; attempt++) {
        const created = await store.createDeviceAuthorization({
          deviceCodeHash: hashDeviceCode(deviceCode),
          userCodeHash: hashUserCode(userCode),
          clientId: client.id,
          scope,
          intervalSeconds: settings.pollIntervalSeconds,
          createdAt: new Date(now).toISOString(),
          expiresAt: new Date(now + expiresIn * 1000).toISOString(),
        });
        if (created) break;
        if (attempt >= 4) throw new Error("no free user code after 5 draws");
        userCode = newUserCode();
      }
      await audit.record(DEVICE_AUDIT, null, "requested", request.ip);
      request.actionOutcome = "success";
      reply.header("cache-control", "no-store").header("pragma", "no-cache");
      const verificationUri = `${baseUrl()}${DEVICE_PAGE_PATH}`;
      const display = displayUserCode(userCode);
      return {
        device_code: deviceCode,
        user_code: display,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?${new URLSearchParams({ user_code: display })}`,
        expires_in: expiresIn,
        interval: settings.pollIntervalSeconds,
      };
    },
  );
};
