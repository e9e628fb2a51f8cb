// POST /auth/token: the OAuth 2.0 password grant exactly as the spec lays it
// out, plus the refresh grant (RFC 6749 section 6); POST /auth/revoke (RFC
// 7009). Form-encoded only; JSON here is a 415. The Basic header and empty
// scope that Swagger UI's Authorize dialog sends are ignored. Errors are the
// spec's {"detail": ...}; with OAUTH_ERROR_FIELDS=on they also carry RFC 6749
// section 5.2's `error` and `error_description` (oauth-errors.ts).
// For an account with a second factor (issue 14), a right password answers
// 403 `mfa_required` with a single-use `mfa_token` instead of tokens; an
// extension grant (RFC 6749 section 4.5) with that token and a code of the
// authenticator app or a recovery code then answers the usual token response.
// Accounts without a factor get exactly the spec's answers.
// Registered clients (issue 24) use client_credentials here: the client
// authenticates (oidc/client-auth.ts) and every error carries `error`.
// The route parses the form and dispatches on grant_type to one module per
// grant, from the grant table (core/grants/grant.ts says what a grant is,
// core/grants/registry.ts how one is added).
// A request with a DPoP header (RFC 9449, issue 36) has its proof checked
// before its grant runs, whatever the grant; the grants bind what they issue
// to the proof's key (dpop/request-key.ts). Without the header, nothing
// changes. A client registered with dpop_bound_access_tokens must send one.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { PASSKEY_NOT_VERIFIED, WEBAUTHN_GRANT } from "../auth/passkeys.ts";
import { TOO_MANY_LOGIN_ATTEMPTS } from "../auth/rate-limits.ts";
import { clientOf, parseRefreshToken, type Sessions } from "../auth/sessions.ts";
import { InvalidToken, type TokenService, tokenKind } from "../auth/tokens.ts";
import type { Dpop } from "../dpop/dpop.ts";
import {
  HttpError,
  INCORRECT_EMAIL_OR_PASSWORD,
  PASSWORD_CHECKS_BUSY,
  SERVICE_UNAVAILABLE,
  UNSUPPORTED_GRANT_TYPE,
} from "../errors.ts";
import {
  handleOAuthError,
  OAuthError,
  type OAuthErrorCode,
  oauthErrorCode,
  renderOAuthError,
} from "../oauth-errors.ts";
import { authenticatePresented, CLIENT_AUTHENTICATION_FAILED, presentedClient } from "../oidc/client-auth.ts";
import type { ClientRegistry } from "../oidc/clients.ts";
import type { ClientCors } from "../oidc/cors.ts";
import { INVALID_SCOPE } from "../oidc/grants/client-credentials.ts";
import { describeError, handleError } from "../platform/error-handler.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import { NO_SECURITY, oauthErrorResponse, PASSWORD_CHECKS_BUSY_DESCRIPTION } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";
import { EMAIL_NOT_VERIFIED, type Grant } from "./grants/grant.ts";
import type { GrantRegistry } from "./grants/registry.ts";
import {
  ClientTokenOut,
  MAIL_CODE_GRANT,
  MAIL_LINK_GRANT,
  MailLinkUnconfirmed,
  MFA_OTP_GRANT,
  MFA_RECOVERY_CODE_GRANT,
  MFA_WEBAUTHN_GRANT,
  MfaRequired,
  RevokeForm,
  RevokeOut,
  TokenForm,
  TokenOut,
} from "./schemas.ts";

export { EMAIL_NOT_VERIFIED } from "./grants/grant.ts";
export const DPOP_PROOF_REQUIRED = "This client must send a DPoP proof with every token request";
export { MFA_REQUIRED } from "./grants/password.ts";

export interface TokenRouteOptions {
  /** The grants by grant_type: the core's, and those the capabilities added as they installed. */
  grants: GrantRegistry;
  /** The registered clients, for client authentication (client grants, revocation). */
  clients: ClientRegistry;
  /** CORS for browser apps of registered public clients (and CORS_ORIGINS). */
  cors: ClientCors;
  store: UserStore;
  tokens: TokenService;
  sessions: Sessions;
  /** OAUTH_ERROR_FIELDS: errors also carry RFC 6749's `error` and `error_description`. */
  oauthErrorFields: boolean;
  /** DPoP proofs (RFC 9449); absent, a DPoP header is not looked at (tests that build the route alone). */
  dpop?: Dpop;
}

/**
 * The session an access token was issued in, when `clientId` may revoke it: a first-party token without
 * a client, a relying party's token by its own client only (a client's own token has no session).
 */
async function sessionOf(
  { tokens, store }: Pick<TokenRouteOptions, "tokens" | "store">,
  token: string,
  clientId: string | undefined,
): Promise<string | undefined> {
  try {
    const kind = tokenKind(token);
    if (kind === "user" && clientId === undefined) {
      const { sid, sub } = tokens.verifyAccessToken(token);
      const owner = await store.findByEmail(sub);
      const session = sid ? await store.findSession(sid) : undefined;
      return owner && session?.userId === owner.id ? session.id : undefined;
    }
    if (kind === "delegated" && clientId !== undefined) {
      const { sid, sub, clientId: issuedTo } = tokens.verifyDelegatedAccessToken(token);
      const session = await store.findSession(sid);
      return issuedTo === clientId && session?.userId === sub ? session.id : undefined;
    }
  } catch (error) {
    if (!(error instanceof InvalidToken)) throw error;
  }
  return undefined;
}

export const tokenRoutes: FastifyPluginAsyncTypebox<TokenRouteOptions> = async (app, options) => {
  const { grants, store, sessions, oauthErrorFields } = options;
  const sessionOfAccessToken = (token: string, clientId: string | undefined) => sessionOf(options, token, clientId);
  // Before the routes, so it applies to them: browser apps of public clients call both cross-origin.
  options.cors.apply(app, { "/auth/token": ["POST"], "/auth/revoke": ["POST"] });
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);

  // Requests of a client grant that name a registered client (or authenticate with a secret): their
  // errors always carry RFC 6749's `error`.
  const clientRequests = new WeakSet<FastifyRequest>();
  const forAClientGrant = (request: FastifyRequest) => clientRequests.has(request);
  const onlyForClients = (request: FastifyRequest) => {
    const grantType = (request.body as { grant_type?: unknown } | undefined)?.grant_type;
    return typeof grantType === "string" && grants.get(grantType)?.client === "required";
  };

  /**
   * The registered client a request presents, authenticated (401 invalid_client otherwise); from then
   * on the request's errors carry `error`. Undefined when it names no registered client: the spec's
   * first-party apps send any client_id, or none, and keep the answers they had, to the byte.
   * `lenient`: credentials (HTTP Basic, or the form's) for an id that is not registered are not a
   * client at all, as the spec's grants never look at them (simple-oauth2 sends `Basic app-id:`);
   * otherwise they are a client that failed to authenticate (the client grants' answer).
   */
  async function registeredClient(
    request: FastifyRequest & { body: { client_id?: string; client_secret?: string } },
    lenient = false,
  ) {
    const { client_id, client_secret } = request.body;
    let presented: ReturnType<typeof presentedClient>;
    try {
      presented = presentedClient(request.headers.authorization, { client_id, client_secret });
    } catch (error) {
      // A malformed or mixed presentation: a client's mistake only if it names a registered client.
      if (lenient && !(client_id !== undefined && (await options.clients.find(client_id)))) return undefined;
      clientRequests.add(request);
      throw error;
    }
    if (presented === undefined) return undefined;
    if ((presented.method === "none" || lenient) && !(await options.clients.find(presented.clientId))) return undefined;
    clientRequests.add(request);
    return authenticatePresented(options.clients, presented);
  }

  /** The client of a grant that takes one; such a grant type was unknown here before the registry. */
  async function clientFor(grant: Grant, request: FastifyRequest & { body: TokenForm }) {
    if (grant.client === "ignored") return undefined;
    if (grant.client === "optional") return registeredClient(request, true);
    const client = await registeredClient(request);
    if (client === undefined) throw new HttpError(400, UNSUPPORTED_GRANT_TYPE);
    return client;
  }

  app.setErrorHandler(function tokenErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    if (error instanceof OAuthError) {
      request.actionOutcome ??= error.error;
      return renderOAuthError(error, reply);
    }
    // Issue 36: a form refused by the schema before the client is known (a field too long) for a grant only
    // registered clients use (`client: "required"`: the device grant, authorization_code, client_credentials)
    // is answered as that grant answers: 400 invalid_request with `error`, not the spec's 422.
    if (forAClientGrant(request) || (error.validation !== undefined && onlyForClients(request))) {
      // RFC 6749 section 5.2: a malformed request is 400 invalid_request (the service says 422 elsewhere).
      const { status, detail, headers } = describeError(error, request);
      const answered = status === 422 ? 400 : status;
      const code = oauthErrorCode(answered, detail);
      request.actionOutcome ??= code;
      return renderOAuthError(new OAuthError(answered, code, detail, headers), reply);
    }
    return oauthErrorFields ? handleOAuthError(error, request, reply) : handleError(error, request, reply);
  });
  const errorAnswer = (description: string, example: string, code: OAuthErrorCode) =>
    oauthErrorResponse(description, example, code, oauthErrorFields);
  const notForm = errorAnswer("The body is not form-encoded.", "Unsupported Media Type", "invalid_request");
  const tooLarge = errorAnswer(
    "The body is over the size limit (16 KiB).",
    "Request body is too large",
    "invalid_request",
  );
  const unavailable = errorAnswer(
    "The database or the shared counters cannot be reached; `Retry-After` says when to try again.",
    SERVICE_UNAVAILABLE,
    "temporarily_unavailable",
  );
  const tokenUnavailable = errorAnswer(
    "The database or the shared counters cannot be reached; or, for a grant that checks a password, " +
      `${PASSWORD_CHECKS_BUSY_DESCRIPTION} (refresh grants never wait for one). \`Retry-After\` says when to ` +
      "try again.",
    PASSWORD_CHECKS_BUSY,
    "temporarily_unavailable",
  );

  app.post(
    "/auth/token",
    {
      schema: {
        operationId: "issueToken",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Exchange e-mail and password (or a refresh token) for tokens",
        description:
          "OAuth 2.0 password grant, form-encoded. `username` carries the e-mail. Meant for first-party clients only: " +
          "RFC 9700 advises against the password grant for third-party clients. The same 401 answers an unknown " +
          "e-mail and a wrong password, so a caller cannot tell them apart. Repeated failures for one account or " +
          "from one address are refused with 429 for a while. When too many password checks already wait for a core, " +
          "a grant that checks a password answers 503 at once with `Retry-After` (refresh grants never wait).\n\n" +
          "With `grant_type=refresh_token` and `refresh_token`, spends the refresh token and returns a new access " +
          "token and a new refresh token (rotation). A refresh token presented a second time ends its whole session.\n\n" +
          "**Second factor.** For an account with an authenticator app (or a passkey), a right password answers 403 " +
          "`mfa_required` with an `mfa_token` (single use, 5 minutes) and the factors on offer, instead of tokens. " +
          `Send it back with \`grant_type=${MFA_OTP_GRANT}\` and \`otp\` (the app's six-digit code), or ` +
          `\`grant_type=${MFA_RECOVERY_CODE_GRANT}\` and \`recovery_code\`, or \`grant_type=${MFA_WEBAUTHN_GRANT}\` ` +
          "and `webauthn_response` (a passkey's assertion, after `POST /auth/webauthn/authentication-options` with " +
          '`{"mfa_token": ...}`), for the usual token response. A code ' +
          "works once; wrong codes answer 401, five of them spend the `mfa_token`, and too many for one account " +
          'answer 429. The access token\'s `amr` says how the user authenticated: `["pwd"]`, ' +
          '`["pwd","otp","mfa"]`, `["pwd","mfa"]` (recovery code) or `["pwd","hwk","mfa"]` (passkey); refreshing ' +
          "keeps it.\n\n" +
          `**Passkey alone.** \`grant_type=${WEBAUTHN_GRANT}\` with \`challenge_id\` and \`webauthn_response\` ` +
          "(the assertion of a discoverable passkey with user verification, after " +
          "`POST /auth/webauthn/authentication-options` with `{}`) signs in without a password; `amr` " +
          '`["hwk","user"]`.\n\n' +
          "**New devices.** A sign-in (any grant that starts a session) from a device the account has not used " +
          "before is mailed to the account (security notification `new_device`); the answer is the same whether " +
          "or not the device was new. A device is the hosted sign-in page's device cookie when the request " +
          "carries one, else the User-Agent's browser family and system." +
          "\n\n" +
          "**Registered clients.** `grant_type=client_credentials` gives a confidential client a token for itself " +
          "(no user, no refresh token): the client authenticates with HTTP Basic (`client_secret_basic`, id and " +
          "secret form-encoded first) or `client_id` and `client_secret` in the form (`client_secret_post`), " +
          "whichever it registered, never both; `scope` asks for part of its registered scope. Every error of this " +
          "grant carries RFC 6749's `error` (`invalid_client` 401, with `WWW-Authenticate: Basic` after a Basic " +
          "attempt; `unauthorized_client`, `invalid_scope`, `invalid_request` 400), whatever OAUTH_ERROR_FIELDS says." +
          "\n\n" +
          "**DPoP** (RFC 9449). With a `DPoP` header, any grant that issues tokens checks the proof first and binds " +
          "the access token to its key (`cnf.jkt`, `token_type` `DPoP`); a public client's refresh token (and a " +
          "first-party app's) is bound too and then needs a proof by that key. Server nonces are on by default: " +
          "a proof without the current one answers 400 `use_dpop_nonce` with the nonce in `DPoP-Nonce`. A refused " +
          "proof is 400 `invalid_dpop_proof`, as is a request without a proof from a client registered with " +
          "`dpop_bound_access_tokens`. These errors always carry `error`. Without the header, nothing changes." +
          "\n\n" +
          `**Sign-in by mail** (first-party apps only, when PASSWORDLESS_MAIL is on). After \`POST /auth/mail-sign-in\`, ` +
          `\`grant_type=${MAIL_CODE_GRANT}\` with \`attempt\` and \`code\` (the mail's 6 digits), or ` +
          `\`grant_type=${MAIL_LINK_GRANT}\` with \`attempt\`, \`token\` (the link's fragment) and, from another ` +
          'browser than the one that asked, `confirm=true`. The usual token response (`amr` `["email","otp"]` ' +
          'or `["email"]`), or 403 `mfa_required` for an account with a second factor. Every refusal is 400 ' +
          "`invalid_grant` (with `confirmation_required` and `requested_at` when the link needs the confirmation), " +
          "whatever OAUTH_ERROR_FIELDS says; a registered client is refused (`unauthorized_client`).",
        consumes: ["application/x-www-form-urlencoded"],
        body: TokenForm,
        response: {
          200: Type.Union([TokenOut, ClientTokenOut], {
            description: "A user's tokens (the spec's grants), or a client's token (`client_credentials`).",
          }),
          400: Type.Union(
            [
              MailLinkUnconfirmed,
              errorAnswer(
                "A grant type this endpoint does not know (`unsupported_grant_type`), a repeated form field, or a " +
                  "`webauthn_response` that is not JSON (`invalid_request`). For `client_credentials`: a client not " +
                  `registered for it (\`unauthorized_client\`), a scope outside its registered scope (\`invalid_scope\`: ` +
                  `"${INVALID_SCOPE}"), two client authentication methods at once or a malformed field (\`invalid_request\`). ` +
                  "DPoP: a refused proof, or none from a client that requires one, or a bound refresh token without its " +
                  "key's proof (`invalid_dpop_proof`); the nonce asked for (`use_dpop_nonce`, with `DPoP-Nonce`); a bound " +
                  "refresh token with another key's proof (`invalid_grant`).",
                UNSUPPORTED_GRANT_TYPE,
                "unsupported_grant_type",
              ),
            ],
            {
              description:
                "A grant type this endpoint does not know (`unsupported_grant_type`), a repeated form field, or a " +
                "`webauthn_response` that is not JSON (`invalid_request`). For `client_credentials`: a client not " +
                `registered for it (\`unauthorized_client\`), a scope outside its registered scope (\`invalid_scope\`: ` +
                `"${INVALID_SCOPE}"), two client authentication methods at once or a malformed field (\`invalid_request\`). ` +
                "DPoP: a refused proof, or none from a client that requires one, or a bound refresh token without its " +
                "key's proof (`invalid_dpop_proof`); the nonce asked for (`use_dpop_nonce`, with `DPoP-Nonce`); a bound " +
                "refresh token with another key's proof (`invalid_grant`)." +
                " Sign-in by mail: a wrong, expired or spent code or link (`invalid_grant`), a link opened in " +
                "another browser without `confirm=true` (`invalid_grant` with `confirmation_required` and " +
                "`requested_at`), a registered client (`unauthorized_client`).",
            },
          ),
          401: errorAnswer(
            "Unknown e-mail or wrong password; or an invalid, expired or spent refresh token; or, in a " +
              "second-factor grant, an unknown, expired or spent `mfa_token`, or a wrong or already used code; or, " +
              `in the passkey grants, an assertion that does not verify ("${PASSKEY_NOT_VERIFIED}": unknown ` +
              "passkey, wrong origin or relying party, no user verification for a passkey alone, a sign counter " +
              "that did not move forward) or a spent or expired challenge. The status is the spec's (RFC 6749 " +
              "would say 400); with OAUTH_ERROR_FIELDS=on, `error` is `invalid_grant`. For `client_credentials`: " +
              `client authentication failed (\`invalid_client\`, "${CLIENT_AUTHENTICATION_FAILED}": unknown client, ` +
              "wrong secret, or not the method it registered), with `WWW-Authenticate: Basic` when HTTP Basic was tried.",
            INCORRECT_EMAIL_OR_PASSWORD,
            "invalid_grant",
          ),
          403: Type.Union(
            [
              MfaRequired,
              errorAnswer(
                "The password is right but the e-mail address is not verified yet (EMAIL_VERIFICATION_REQUIRED); " +
                  "or an `otp` grant while authenticator apps are off (`MFA_ENCRYPTION_KEY` unset).",
                EMAIL_NOT_VERIFIED,
                "invalid_grant",
              ),
            ],
            {
              description:
                "A second factor is required (`mfa_required`, with an `mfa_token`); or the e-mail address is not " +
                "verified yet; or an `otp` grant while authenticator apps are off.",
            },
          ),
          413: tooLarge,
          415: notForm,
          422: errorAnswer(
            "A required form field is missing or empty, or too long; or `webauthn_response` is JSON but not a " +
              "WebAuthn assertion.",
            "body.username: field required",
            "invalid_request",
          ),
          429: errorAnswer(
            "Too many failed attempts for this account or from this address, or too many wrong second-factor " +
              "codes for this account (then the password step answers this too, right or wrong password, instead " +
              "of a new `mfa_token`); `Retry-After` says when to try again.",
            TOO_MANY_LOGIN_ATTEMPTS,
            "temporarily_unavailable",
          ),
          503: tokenUnavailable,
        },
      },
    },
    async function issueToken(request, reply) {
      const grant = grants.get(request.body.grant_type ?? "password");
      if (grant === undefined) throw new HttpError(400, UNSUPPORTED_GRANT_TYPE);
      let client: Awaited<ReturnType<typeof clientFor>>;
      try {
        client = await clientFor(grant, request);
      } catch (error) {
        // A client that fails to authenticate (invalid_client, the client grants' hot refusal) is answered
        // here as tokenErrors answers it, without Fastify's error path, which costs more than the refusal.
        if (!(error instanceof OAuthError)) throw error;
        request.actionOutcome ??= error.error;
        renderOAuthError(error, reply);
        return reply;
      }
      const proofKey = await options.dpop?.tokenRequestKey(request, reply);
      // RFC 9449 section 5.2: a client registered with dpop_bound_access_tokens gets DPoP-bound tokens only.
      if (proofKey === undefined && client?.dpopBoundAccessTokens === true)
        throw new OAuthError(400, "invalid_dpop_proof", DPOP_PROOF_REQUIRED);
      const answer = await grant.handle({ request, reply, client });
      // RFC 6749 section 5.1: responses that carry tokens (or an mfa_token) must not be cached.
      reply.header("cache-control", "no-store").header("pragma", "no-cache");
      return answer;
    },
  );

  app.post(
    "/auth/revoke",
    {
      schema: {
        operationId: "revokeToken",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Revoke a token: log out (RFC 7009)",
        description:
          "Form-encoded `token`: a refresh token, or an access token. Ends the session it belongs to: its refresh " +
          "tokens stop working at once; access tokens already issued in it run out within their 30 minutes. " +
          "Answers 200 with an empty JSON object whether or not the token was known (RFC 7009 section 2.2).\n\n" +
          "**Registered clients** (OpenID Connect) authenticate as they registered (HTTP Basic, `client_id` and " +
          "`client_secret` in the form, or `client_id` alone for a public client) and revoke only the tokens " +
          "issued to them: a token of another client, or of the user's own sign-in, is answered 200 and not " +
          "revoked. A client's refresh token is revoked only by its client. A client_credentials token cannot be " +
          "revoked (it is not kept; it runs out within 30 minutes). Without a registered client, as before.",
        consumes: ["application/x-www-form-urlencoded"],
        body: RevokeForm,
        response: {
          200: RevokeOut,
          400: errorAnswer(
            "A repeated form field; or two client authentication methods at once (`invalid_request`).",
            "Form field 'token' is repeated",
            "invalid_request",
          ),
          401: oauthErrorResponse(
            `A registered client's authentication failed (\`invalid_client\`, "${CLIENT_AUTHENTICATION_FAILED}"), ` +
              "with `WWW-Authenticate: Basic` when HTTP Basic was tried. Never without a registered client.",
            CLIENT_AUTHENTICATION_FAILED,
            "invalid_client",
            true,
          ),
          413: tooLarge,
          415: notForm,
          422: errorAnswer("`token` is missing.", "body.token: field required", "invalid_request"),
          503: unavailable,
        },
      },
    },
    async function revokeToken(request) {
      const { token } = request.body;
      // RFC 7009 section 2.1: a registered client that presents itself authenticates (401 invalid_client
      // otherwise) and may revoke only tokens issued to it. No client, or credentials of an id that is not
      // registered (the spec's first-party apps, as the token endpoint takes them): the answers of before.
      const client = await registeredClient(request, true);
      const refresh = parseRefreshToken(token);
      if (refresh !== undefined) {
        const bound = await store.findClientSession(refresh.sessionId);
        // A client's refresh token is revoked by that client only; the user's own, only without a client.
        if ((bound?.clientId ?? null) === (client?.id ?? null)) await sessions.revokeByToken(token, clientOf(request));
        return {};
      }
      const session = await sessionOfAccessToken(token, client?.id);
      if (session !== undefined)
        await sessions.revoke(session, [{ type: "session_revocation", outcome: "revoked", clientAddress: request.ip }]);
      // RFC 7009 defines no body for the 200; several client libraries parse one as JSON all the same.
      return {};
    },
  );
};
