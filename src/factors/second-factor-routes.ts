// Second factors of the caller (issue 14): status, authenticator-app
// enrolment, confirmation and removal, recovery codes; and the admin's reset
// of a user's factors. All behind the spec's token check. Turning a factor
// off or making new recovery codes needs the password again (and a code of
// the factor to turn off), so a stolen access token alone cannot weaken an
// account; wrong passwords and codes here count against the same per-user
// second-factor limit as the token endpoint's.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import type { Guards } from "../auth/guard.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { type RateLimits, TOO_MANY_SECOND_FACTOR_ATTEMPTS } from "../auth/rate-limits.ts";
import {
  AUTHENTICATOR_APPS_OFF,
  INVALID_OTP,
  INVALID_RECOVERY_CODE,
  NO_PENDING_TOTP,
  NO_SECOND_FACTOR,
  type SecondFactorService,
  TOTP_ALREADY_ENABLED,
  TOTP_NOT_ENABLED,
} from "../auth/second-factors.ts";
import { clientOf } from "../auth/sessions.ts";
import { HttpError, INCORRECT_CURRENT_PASSWORD, NOT_ENOUGH_PRIVILEGES, notFound, USER_NOT_FOUND } from "../errors.ts";
import type { Notices } from "../mail/notices.ts";
import type { Audit } from "../platform/audit.ts";
import { BEARER_SECURITY, errorResponse, PasswordRouteUnavailable, UnauthorizedResponse } from "../platform/openapi.ts";
import type { UserRecord, UserStore } from "../store/store.ts";
import { UserIdParams } from "../users/schemas.ts";
import {
  MfaStatus,
  PasswordConfirmation,
  RecoveryCodesOut,
  TotpConfirm,
  TotpDisable,
  TotpEnrolmentOut,
} from "./schemas.ts";

export interface SecondFactorRouteOptions {
  store: UserStore;
  guards: Guards;
  passwords: PasswordHasher;
  limits: RateLimits;
  audit: Audit;
  factors: SecondFactorService;
  notices: Notices;
}

export const ONE_OF_CODE_OR_RECOVERY_CODE = "body: send either code or recovery_code, not both";

const tooMany = errorResponse(
  "Too many wrong passwords or codes for this account; `Retry-After` says when to try again.",
  TOO_MANY_SECOND_FACTOR_ATTEMPTS,
);

const appsOff = errorResponse(
  "Authenticator apps are off on this service: its operator has not set `MFA_ENCRYPTION_KEY` (possible with " +
    "PostgreSQL only). Passkeys and recovery codes work without it.",
  AUTHENTICATOR_APPS_OFF,
);

export const secondFactorRoutes: FastifyPluginAsyncTypebox<SecondFactorRouteOptions> = async (
  app,
  { store, guards, passwords, limits, audit, factors, notices },
) => {
  const { authenticate, requireAdmin } = guards;

  /** The caller's password again, under the second-factor limit. */
  async function provePassword(request: FastifyRequest, user: UserRecord, password: string): Promise<void> {
    await limits.checkSecondFactor(user.id);
    if (!(await passwords.verify(user.hashedPassword, password))) {
      await limits.recordSecondFactorFailure(user.id);
      await audit.record("second_factor", user.id, "password_failed", request.ip);
      throw new HttpError(400, INCORRECT_CURRENT_PASSWORD);
    }
  }

  app.get(
    "/me/mfa",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "readSecondFactors",
        tags: ["second factors"],
        summary: "Your second factors",
        description: "Whether an authenticator app is set up, and how many recovery codes are left.",
        security: BEARER_SECURITY,
        response: { 200: MfaStatus, 401: UnauthorizedResponse },
      },
    },
    async function readSecondFactors(request) {
      const status = await factors.status(request.user!.id);
      return {
        totp_enabled: status.totp,
        recovery_codes_remaining: status.recoveryCodesRemaining,
        passkeys: status.passkeys,
      };
    },
  );

  app.post(
    "/me/totp",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "startTotpEnrolment",
        tags: ["second factors"],
        summary: "Set up an authenticator app: get its secret and QR code",
        description:
          "No body (or `{}`). Starts, or starts over, the set-up of an authenticator app (TOTP, RFC 6238: SHA1, " +
          "6 digits, 30 seconds). Scan `qr_code` or type `secret` into the app, then send a code to " +
          "POST /me/totp/confirm: until then nothing changes at login. The secret is shown only now and kept " +
          "encrypted. 409 when an app is already set up (turn it off first); 403 when the service has authenticator " +
          "apps off (`MFA_ENCRYPTION_KEY` unset).",
        security: BEARER_SECURITY,
        response: {
          201: TotpEnrolmentOut,
          401: UnauthorizedResponse,
          403: appsOff,
          409: errorResponse("An authenticator app is already set up.", TOTP_ALREADY_ENABLED),
          422: errorResponse("The body is not empty.", "body: must NOT have additional properties"),
        },
      },
    },
    async function startTotpEnrolment(request, reply) {
      const body = request.body as unknown;
      if (body !== undefined && body !== null && (typeof body !== "object" || Object.keys(body).length > 0)) {
        throw new HttpError(422, "body: must NOT have additional properties");
      }
      const enrolment = await factors.enrolTotp(request.user!);
      reply.code(201);
      return { secret: enrolment.secret, otpauth_uri: enrolment.otpauthUri, qr_code: enrolment.qrCode };
    },
  );

  app.post(
    "/me/totp/confirm",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "confirmTotp",
        tags: ["second factors"],
        summary: "Confirm the authenticator app with a code",
        description:
          "Turns the app on: from now on a password alone no longer logs in (see POST /auth/token). When you " +
          "have no recovery codes yet (your first factor), the answer carries ten: shown this once, store " +
          "them safely. Otherwise `recovery_codes` is empty and the ones you have stay valid. The account's " +
          "address is told (security notification `second_factor_added`).",
        security: BEARER_SECURITY,
        body: TotpConfirm,
        response: {
          200: RecoveryCodesOut,
          400: errorResponse("The code is wrong (or was already used).", INVALID_OTP),
          401: UnauthorizedResponse,
          403: appsOff,
          409: errorResponse("Nothing is being set up, or an app is already on.", NO_PENDING_TOTP),
          422: errorResponse("The code is not six digits.", 'body.code: must match pattern "^[0-9]{6}$"'),
          429: tooMany,
        },
      },
    },
    async function confirmTotp(request) {
      const user = request.user!;
      const notice = notices.about("second_factor_added", user, clientOf(request));
      const codes = await factors.confirmTotp(user, request.body.code, request.ip, notice);
      notices.wake();
      return { recovery_codes: codes };
    },
  );

  app.post(
    "/me/totp/disable",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "disableTotp",
        tags: ["second factors"],
        summary: "Turn the authenticator app off",
        description:
          "Needs your password and either a current code of the app (`code`) or a recovery code " +
          "(`recovery_code`). 204 with no body. Without another factor left, your recovery codes go too. The " +
          "account's address is told (`second_factor_removed`).",
        security: BEARER_SECURITY,
        body: TotpDisable,
        response: {
          204: { type: "null", description: "Turned off." },
          400: errorResponse("The password, the code or the recovery code is wrong.", INCORRECT_CURRENT_PASSWORD),
          401: UnauthorizedResponse,
          403: errorResponse(
            "`code` was sent while authenticator apps are off (`MFA_ENCRYPTION_KEY` unset): use `recovery_code`.",
            AUTHENTICATOR_APPS_OFF,
          ),
          409: errorResponse("No authenticator app is set up.", TOTP_NOT_ENABLED),
          422: errorResponse(
            "Neither or both of `code` and `recovery_code`, or a malformed field.",
            ONE_OF_CODE_OR_RECOVERY_CODE,
          ),
          429: tooMany,
          503: PasswordRouteUnavailable,
        },
      },
    },
    async function disableTotp(request, reply) {
      const user = request.user!;
      const { password, code, recovery_code } = request.body;
      if ((code === undefined) === (recovery_code === undefined))
        throw new HttpError(422, ONE_OF_CODE_OR_RECOVERY_CODE);
      const before = await factors.status(user.id);
      if (!before.totp) throw new HttpError(409, TOTP_NOT_ENABLED);
      await provePassword(request, user, password);
      const proved =
        code !== undefined
          ? await factors.checkTotp(user.id, code, [])
          : await factors.useRecoveryCode(user.id, recovery_code as string, []);
      if (!proved) {
        await limits.recordSecondFactorFailure(user.id);
        await audit.record(
          "second_factor",
          user.id,
          code !== undefined ? "otp_failed" : "recovery_code_failed",
          request.ip,
        );
        throw new HttpError(400, code !== undefined ? INVALID_OTP : INVALID_RECOVERY_CODE);
      }
      await limits.recordSecondFactorSuccess(user.id);
      await store.removeTotp(user.id, {
        // Recovery codes stand in for a factor; with none left they would only be a way around the password.
        dropRecoveryCodes: before.passkeys === 0,
        events: [
          {
            type: "second_factor",
            outcome: "totp_removed",
            clientAddress: request.ip,
            notice: notices.about("second_factor_removed", user, clientOf(request)),
          },
        ],
      });
      notices.wake();
      reply.code(204).send(null);
    },
  );

  app.post(
    "/me/recovery-codes",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "regenerateRecoveryCodes",
        tags: ["second factors"],
        summary: "Make ten new recovery codes",
        description:
          "Needs your password. Replaces all your recovery codes, used or not, with ten new ones, shown this once. " +
          "409 without a second factor (recovery codes stand in for one). The account's address is told " +
          "(`recovery_codes_regenerated`).",
        security: BEARER_SECURITY,
        body: PasswordConfirmation,
        response: {
          200: RecoveryCodesOut,
          400: errorResponse("The password is wrong.", INCORRECT_CURRENT_PASSWORD),
          401: UnauthorizedResponse,
          409: errorResponse("No second factor is set up.", NO_SECOND_FACTOR),
          422: errorResponse("The body is invalid.", "body.password: field required"),
          429: tooMany,
          503: PasswordRouteUnavailable,
        },
      },
    },
    async function regenerateRecoveryCodes(request) {
      const user = request.user!;
      const status = await factors.status(user.id);
      if (!status.totp && status.passkeys === 0) throw new HttpError(409, NO_SECOND_FACTOR);
      await provePassword(request, user, request.body.password);
      await limits.recordSecondFactorSuccess(user.id);
      const { codes, hashes } = factors.newRecoveryCodes();
      await store.replaceRecoveryCodes(user.id, hashes, [
        {
          type: "second_factor",
          outcome: "recovery_codes_generated",
          clientAddress: request.ip,
          notice: notices.about("recovery_codes_regenerated", user, clientOf(request)),
        },
      ]);
      notices.wake();
      return { recovery_codes: codes };
    },
  );

  app.delete(
    "/users/:id/mfa",
    {
      preHandler: [authenticate, requireAdmin],
      schema: {
        operationId: "resetSecondFactors",
        tags: ["users"],
        summary: "Reset a user's second factors (admins only)",
        description:
          "Removes every second factor of the user (authenticator app, recovery codes, passkeys) and pending " +
          "login challenges, for a user who lost them: the password alone logs in again until they set up a " +
          "new one, at once (the account's count of failed second-factor checks is cleared too). Audited; the " +
          "user's address is told (security notification `second_factor_removed`, without the admin's device or " +
          "address). 204 with no body.",
        security: BEARER_SECURITY,
        params: UserIdParams,
        response: {
          204: { type: "null", description: "Reset." },
          401: UnauthorizedResponse,
          403: errorResponse("Only admins may reset second factors.", NOT_ENOUGH_PRIVILEGES),
          404: errorResponse("No user with this id.", USER_NOT_FOUND),
          422: errorResponse("The id is not a UUID.", 'params.id: must match format "uuid"'),
        },
      },
    },
    async function resetSecondFactors(request, reply) {
      const { id } = request.params;
      const target = await store.findById(id);
      if (!target) throw notFound();
      await store.resetSecondFactors(id, [
        {
          type: "second_factor",
          outcome: "reset_by_admin",
          clientAddress: request.ip,
          actorId: request.user!.id,
          notice: notices.about("second_factor_removed", target, null, { byAdmin: true }),
        },
      ]);
      notices.wake();
      // The password step answers 429 while the account is at its second-factor limit; the user the
      // admin is helping back in signs in with the password at once.
      await limits.recordSecondFactorSuccess(id);
      reply.code(204).send(null);
    },
  );
};
