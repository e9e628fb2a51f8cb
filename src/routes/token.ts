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
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Audit } from "../audit.ts";
import {
  AMR_PASSKEY,
  MALFORMED_WEBAUTHN_RESPONSE,
  PASSKEY_NOT_VERIFIED,
  type Passkeys,
  WEBAUTHN_GRANT,
} from "../auth/passkeys.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { type RateLimits, TOO_MANY_LOGIN_ATTEMPTS } from "../auth/rate-limits.ts";
import { type FactorName, invalidMfaToken, type SecondFactorService, WRONG_ANSWER } from "../auth/second-factors.ts";
import {
  clientOf,
  type Issued,
  invalidGrant,
  parseRefreshToken,
  SECOND_FACTOR_AMR,
  type Sessions,
} from "../auth/sessions.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS, InvalidToken, type TokenService } from "../auth/tokens.ts";
import { NO_SECURITY } from "../docs.ts";
import {
  HttpError,
  INCORRECT_EMAIL_OR_PASSWORD,
  PASSWORD_CHECKS_BUSY,
  PasswordHashQueueFull,
  SERVICE_UNAVAILABLE,
  UNSUPPORTED_GRANT_TYPE,
  unauthorized,
} from "../errors.ts";
import { acceptFormBodies } from "../forms.ts";
import { handleGrantError, handleOAuthError, type OAuthErrorCode } from "../oauth-errors.ts";
import type { OidcGrants } from "../oidc/code-grant.ts";
import {
  MFA_OTP_GRANT,
  MFA_RECOVERY_CODE_GRANT,
  MFA_WEBAUTHN_GRANT,
  MfaRequired,
  oauthErrorResponse,
  PASSWORD_CHECKS_BUSY_DESCRIPTION,
  RevokeForm,
  RevokeOut,
  TokenForm,
  TokenOut,
} from "../schemas.ts";
import type { AuditEntry, UserRecord, UserStore } from "../store/store.ts";

export interface TokenRouteOptions {
  store: UserStore;
  tokens: TokenService;
  passwords: PasswordHasher;
  limits: RateLimits;
  sessions: Sessions;
  audit: Audit;
  factors: SecondFactorService;
  /** EMAIL_VERIFICATION_REQUIRED: a correct password for an unverified address is refused with 403. */
  verificationRequired: boolean;
  /** The passkey grants' verifier. */
  passkeys: Passkeys;
  /** OAUTH_ERROR_FIELDS: errors also carry RFC 6749's `error` and `error_description`. */
  oauthErrorFields: boolean;
  /** The registered clients' grants (OpenID Connect); absent while it is off. */
  oidc?: OidcGrants | undefined;
}

export const MFA_REQUIRED = "A second factor is required";

export const EMAIL_NOT_VERIFIED =
  "Your e-mail address is not verified yet: open the link we sent you, or ask for a new one";

/** The same words as a schema failure, for the fields each grant requires. */
function required(field: string): HttpError {
  return new HttpError(422, `body.${field}: field required`);
}

export const tokenRoutes: FastifyPluginAsyncTypebox<TokenRouteOptions> = async (
  app,
  {
    store,
    tokens,
    passwords,
    limits,
    sessions,
    audit,
    factors,
    verificationRequired,
    passkeys,
    oauthErrorFields,
    oidc,
  },
) => {
  app.removeAllContentTypeParsers();
  acceptFormBodies(app);
  app.setErrorHandler(oauthErrorFields ? handleOAuthError : handleGrantError);
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

  /** Checks e-mail and password, with the brute-force limits and the equal-cost rule for unknown e-mails. */
  async function checkPassword(request: FastifyRequest, username: string, password: string): Promise<UserRecord> {
    await limits.checkLogin(username, request.ip);
    const user = await store.findByEmail(username);
    // An account at its second-factor limit gets the second step's 429 here too, instead of a fresh
    // mfa_token; checked before the password, so the answer tells nothing about the password.
    if (user) await limits.checkSecondFactor(user.id);
    // An unknown e-mail still pays for one hash verify, so timing does not reveal which accounts exist.
    const verified = user
      ? await passwords.verify(user.hashedPassword, password)
      : await passwords.verifyDummy(password);
    // An inactive account answers exactly like a wrong password: nothing tells "disabled" from "unknown".
    if (!user || !verified || !user.isActive) {
      await limits.recordLoginFailure(username, request.ip);
      await audit.record("login", user?.id ?? null, user && verified ? "refused_inactive" : "failure", request.ip);
      throw unauthorized(INCORRECT_EMAIL_OR_PASSWORD);
    }
    await limits.recordLoginSuccess(username, request.ip);
    // Only after the password proved correct, so this distinct answer enumerates nothing.
    if (verificationRequired && user.emailVerifiedAt === null) {
      await audit.record("login", user.id, "refused_unverified", request.ip);
      throw new HttpError(403, EMAIL_NOT_VERIFIED);
    }
    // Hashes made with older parameters or imported from another system are upgraded now, the
    // only moment the plain password is at hand; before the session is written, so that nothing
    // can fail after that commit. With the hash queue full the upgrade waits for a later login:
    // this one has proved its password and is not refused for an optional second hash.
    if (passwords.needsRehash(user.hashedPassword)) {
      const upgraded = await passwords.hash(password).catch((error: unknown) => {
        if (error instanceof PasswordHashQueueFull) return undefined;
        throw error;
      });
      if (upgraded !== undefined) await store.update(user.id, { hashedPassword: upgraded });
    }
    return user;
  }

  /** The assertion in the form field, parsed; its shape is the passkey verifier's to check. */
  function webauthnResponse(text: string | undefined): unknown {
    if (text === undefined) throw required("webauthn_response");
    try {
      return JSON.parse(text);
    } catch {
      throw new HttpError(400, MALFORMED_WEBAUTHN_RESPONSE);
    }
  }

  /** Same rule as the password grant: an unverified address may not log in while verification is required. */
  async function refuseUnverified(request: FastifyRequest, user: UserRecord): Promise<void> {
    if (verificationRequired && user.emailVerifiedAt === null) {
      await audit.record("login", user.id, "refused_unverified", request.ip);
      throw new HttpError(403, EMAIL_NOT_VERIFIED);
    }
  }

  /**
   * The second step of a login: a live mfa_token, the user's second-factor limit, then `verify`,
   * which checks the answer for this factor and, when it is right, spends it (a code works once)
   * together with the `used` events. A wrong answer counts against the mfa_token (a few spend it)
   * and the user (429 past the limit). The session records how the user authenticated. The
   * passkeys branch calls this with factor "webauthn" and a verify that checks the assertion.
   */
  async function secondFactorLogin(
    request: FastifyRequest,
    mfaToken: string,
    factor: FactorName,
    verify: (userId: string, used: readonly AuditEntry[]) => Promise<boolean>,
  ): Promise<{ user: UserRecord; issued: Issued }> {
    request.loginStep = "second_factor";
    const userId = await factors.challengedUser(mfaToken);
    await limits.checkSecondFactor(userId);
    const user = await store.findById(userId);
    if (!user?.isActive) throw invalidMfaToken();
    if (!(await verify(userId, [{ type: "second_factor", outcome: `${factor}_used`, clientAddress: request.ip }]))) {
      await factors.recordFailure(mfaToken, userId);
      await audit.record("second_factor", userId, `${factor}_failed`, request.ip);
      throw unauthorized(WRONG_ANSWER[factor]);
    }
    await factors.spendChallenge(mfaToken);
    await limits.recordSecondFactorSuccess(userId);
    const issued = await sessions.start(
      user.id,
      clientOf(request),
      [{ type: "login", outcome: "success", clientAddress: request.ip }],
      SECOND_FACTOR_AMR[factor],
    );
    return { user, issued };
  }

  /** The session of a login by passkey alone and its login event, in one transaction. */
  function startLogin(request: FastifyRequest, userId: string, amr: readonly string[]): Promise<Issued> {
    const events: AuditEntry[] = [{ type: "login", outcome: "success", clientAddress: request.ip }];
    return sessions.start(userId, clientOf(request), events, amr);
  }

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
          '`["hwk","user"]`.',
        consumes: ["application/x-www-form-urlencoded"],
        body: TokenForm,
        response: {
          200: TokenOut,
          400: errorAnswer(
            "A grant type this endpoint does not know (`unsupported_grant_type`), a repeated form field, or a " +
              "`webauthn_response` that is not JSON (`invalid_request`).",
            UNSUPPORTED_GRANT_TYPE,
            "unsupported_grant_type",
          ),
          401: errorAnswer(
            "Unknown e-mail or wrong password; or an invalid, expired or spent refresh token; or, in a " +
              "second-factor grant, an unknown, expired or spent `mfa_token`, or a wrong or already used code; or, " +
              `in the passkey grants, an assertion that does not verify ("${PASSKEY_NOT_VERIFIED}": unknown ` +
              "passkey, wrong origin or relying party, no user verification for a passkey alone, a sign counter " +
              "that did not move forward) or a spent or expired challenge. The status is the spec's (RFC 6749 " +
              "would say 400); with OAUTH_ERROR_FIELDS=on, `error` is `invalid_grant`.",
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
      const {
        grant_type = "password",
        username,
        password,
        refresh_token,
        mfa_token,
        otp,
        recovery_code,
      } = request.body;
      let user: UserRecord;
      let issued: Issued;
      if (oidc && grant_type === "authorization_code") {
        // RFC 6749 section 5.1: responses that carry tokens must not be cached.
        reply.header("cache-control", "no-store").header("pragma", "no-cache");
        return oidc.authorizationCode(request, request.body);
      }
      if (oidc && grant_type === "refresh_token" && refresh_token !== undefined) {
        // A session a client's code started is that client's: its refresh answers the client's tokens.
        const binding = await oidc.bindingOf(refresh_token);
        if (binding) {
          reply.header("cache-control", "no-store").header("pragma", "no-cache");
          return oidc.refresh(request, request.body, binding);
        }
      }
      if (grant_type === "password") {
        if (username === undefined) throw required("username");
        if (password === undefined) throw required("password");
        user = await checkPassword(request, username, password);
        const offer = await factors.factorsOnOffer(user.id);
        if (offer.length > 0) {
          // The password alone opens nothing here: a single-use challenge for the second step.
          const challenge = await factors.challenge(user.id);
          await audit.record("login", user.id, "mfa_required", request.ip);
          request.loginStep = "mfa_required";
          // RFC 6749 section 5.1: the mfa_token is a credential too; never cached.
          return reply
            .code(403)
            .header("cache-control", "no-store")
            .header("pragma", "no-cache")
            .send({
              error: "mfa_required" as const,
              detail: MFA_REQUIRED,
              error_description: MFA_REQUIRED,
              mfa_token: challenge.token,
              mfa_factors: offer,
              expires_in: challenge.expiresIn,
            });
        }
        // The session, its refresh token and the login event commit together; the answer is built
        // from what was written, with no read after the commit.
        issued = await sessions.start(user.id, clientOf(request), [
          { type: "login", outcome: "success", clientAddress: request.ip },
        ]);
      } else if (grant_type === "refresh_token") {
        if (refresh_token === undefined) throw required("refresh_token");
        const rotated = await sessions.refresh(refresh_token, clientOf(request));
        // Deactivation ends the sessions in the same transaction; this is a second guard.
        if (!rotated.user.isActive) throw invalidGrant();
        user = rotated.user;
        issued = rotated;
      } else if (grant_type === MFA_OTP_GRANT) {
        if (mfa_token === undefined) throw required("mfa_token");
        if (otp === undefined) throw required("otp");
        ({ user, issued } = await secondFactorLogin(request, mfa_token, "otp", (userId, used) =>
          factors.checkTotp(userId, otp, used),
        ));
      } else if (grant_type === MFA_RECOVERY_CODE_GRANT) {
        if (mfa_token === undefined) throw required("mfa_token");
        if (recovery_code === undefined) throw required("recovery_code");
        ({ user, issued } = await secondFactorLogin(request, mfa_token, "recovery_code", (userId, used) =>
          factors.useRecoveryCode(userId, recovery_code, used),
        ));
      } else if (grant_type === MFA_WEBAUTHN_GRANT) {
        if (mfa_token === undefined) throw required("mfa_token");
        const response = webauthnResponse(request.body.webauthn_response);
        const { challenge_id } = request.body;
        ({ user, issued } = await secondFactorLogin(request, mfa_token, "webauthn", (userId, used) =>
          passkeys.accepts("second_factor", response, request.ip, { challengeId: challenge_id, userId, events: used }),
        ));
      } else if (grant_type === WEBAUTHN_GRANT) {
        // A passkey alone (discoverable credential, user verification required) is the whole login.
        const response = webauthnResponse(request.body.webauthn_response);
        if (request.body.challenge_id === undefined) throw required("challenge_id");
        user = await passkeys.verify("login", response, request.ip, { challengeId: request.body.challenge_id });
        await refuseUnverified(request, user);
        issued = await startLogin(request, user.id, AMR_PASSKEY);
      } else {
        throw new HttpError(400, UNSUPPORTED_GRANT_TYPE);
      }

      // RFC 6749 section 5.1: responses that carry tokens must not be cached.
      reply.header("cache-control", "no-store").header("pragma", "no-cache");
      return {
        access_token: tokens.issueAccessToken(user, issued.session.id, issued.session.amr),
        token_type: "bearer" as const,
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        refresh_token: issued.refreshToken,
      };
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
          "Answers 200 with an empty JSON object whether or not the token was known (RFC 7009 section 2.2).",
        consumes: ["application/x-www-form-urlencoded"],
        body: RevokeForm,
        response: {
          200: RevokeOut,
          400: errorAnswer("A repeated form field.", "Form field 'token' is repeated", "invalid_request"),
          413: tooLarge,
          415: notForm,
          422: errorAnswer("`token` is missing.", "body.token: field required", "invalid_request"),
          503: unavailable,
        },
      },
    },
    async function revokeToken(request) {
      const { token } = request.body;
      if (parseRefreshToken(token) !== undefined) {
        await sessions.revokeByToken(token, clientOf(request));
      } else {
        try {
          const { sid, sub } = tokens.verifyAccessToken(token);
          const owner = await store.findByEmail(sub);
          const session = sid ? await store.findSession(sid) : undefined;
          if (owner && session && session.userId === owner.id) {
            await sessions.revoke(session.id, [
              { type: "session_revocation", outcome: "revoked", clientAddress: request.ip },
            ]);
          }
        } catch (error) {
          if (!(error instanceof InvalidToken)) throw error;
        }
      }
      // RFC 7009 defines no body for the 200; several client libraries parse one as JSON all the same.
      return {};
    },
  );
};
