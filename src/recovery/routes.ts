// Account recovery by e-mail: ask for a password-reset link and use it; ask
// (again) for a verification link and use it. The two "ask" routes answer
// 202 with the same words at once, whether or not the account exists, and
// do the lookup and the writing after the response has gone (tracked, so
// shutdown waits for them): status, body and timing are the same either way.
// Tokens travel in JSON bodies only, never in a URL.

import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger } from "fastify";
import { type AccountRecovery, EXPIRED_LINK, INVALID_LINK } from "../auth/account-recovery.ts";
import { COMMON_PASSWORD } from "../auth/password-policy.ts";
import { type RateLimits, TOO_MANY_MAIL_REQUESTS } from "../auth/rate-limits.ts";
import { clientOf } from "../auth/sessions.ts";
import { askedLocale } from "../mail/asked-locale.ts";
import { errorResponse, NO_SECURITY, PasswordRouteUnavailable } from "../platform/openapi.ts";
import { normalizeEmailInBody } from "../users/email.ts";
import { Accepted, EmailRequest, EmailVerificationConfirm, EmailVerified, PasswordResetConfirm } from "./schemas.ts";

export interface AccountRouteOptions {
  recovery: AccountRecovery;
  limits: RateLimits;
}

export const RESET_REQUESTED =
  "If an account with this e-mail exists, we have sent it a link to reset the password. The link works for a short time.";
export const VERIFICATION_REQUESTED =
  "If an account with this e-mail exists and its address is not verified yet, we have sent it a new verification link.";

const notJson = errorResponse("The body is not JSON.", "Unsupported Media Type");
const tooMany = errorResponse(
  "Too many requests from this address or for this e-mail; `Retry-After` says when to try again.",
  TOO_MANY_MAIL_REQUESTS,
);
/** The two "ask" routes answer alike: accepted, or the request itself is wrong or over a limit. */
const askResponses = {
  202: Accepted,
  415: notJson,
  422: errorResponse("The body is invalid.", 'body.email: must match format "email"'),
  429: tooMany,
};
const badLink = errorResponse(
  "The link's token is unknown, expired, or already used (or replaced by a newer one).",
  EXPIRED_LINK,
);

export const accountRoutes: FastifyPluginAsyncTypebox<AccountRouteOptions> = async (app, { recovery, limits }) => {
  const pending = new Set<Promise<void>>();
  /** Work that must not shape the response: run after it, logged if it fails, awaited on close. */
  function afterResponse(log: FastifyBaseLogger, what: string, work: () => Promise<void>): void {
    const task = new Promise<void>((resolve) => setImmediate(resolve))
      .then(work)
      .catch((error) => log.warn({ err: error }, `${what} failed after the response`))
      .finally(() => pending.delete(task));
    pending.add(task);
  }
  app.addHook("onClose", async function finishAccountMail() {
    await Promise.all(pending);
  });

  app.post(
    "/auth/password-reset-requests",
    {
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "requestPasswordReset",
        security: NO_SECURITY,
        tags: ["account"],
        summary: "Ask for a password-reset link by e-mail",
        description:
          "Answers 202 with the same body, at once, whether or not the e-mail belongs to an account, so nothing " +
          "is revealed; when it belongs to an active account, a link to choose a new password is mailed to it. " +
          "The link works once and for `PASSWORD_RESET_TTL_SECONDS` (30 minutes by default); asking again " +
          "replaces the earlier link. Limited per client address and per e-mail.",
        body: EmailRequest,
        response: askResponses,
      },
    },
    async function requestPasswordReset(request, reply) {
      await limits.countMailRequest(request.ip, request.body.email);
      const { email } = request.body;
      const asked = askedLocale(request);
      afterResponse(request.log, "password reset request", () =>
        recovery.requestPasswordReset(email, request.ip, asked),
      );
      reply.code(202);
      return { message: RESET_REQUESTED };
    },
  );

  app.post(
    "/auth/password-resets",
    {
      schema: {
        operationId: "resetPassword",
        security: NO_SECURITY,
        tags: ["account"],
        summary: "Set a new password with the token from a reset link",
        description:
          "The token is the `token` value in the link's fragment (`#token=...`). On success (204) the password " +
          "is set, the link and any older ones are spent, and every session and every access token issued " +
          "before it end: log in with the new password. The link proves the address, so the passkeys, linked " +
          "sign-ins and apps' consents added before the address was proven end too (all of them, and the " +
          "second factors, when it was never verified), as do address changes waiting for their link. " +
          "400 says whether the link is unknown, expired or used; " +
          "422 when the new password is refused (too short or long, common or breached, or containing the e-mail). " +
          "The account's address is told (security notification `password_reset_completed`).",
        body: PasswordResetConfirm,
        response: {
          204: { type: "null", description: "The password is set." },
          400: badLink,
          415: notJson,
          422: errorResponse("The body is invalid, or the new password is refused.", COMMON_PASSWORD),
          503: PasswordRouteUnavailable,
        },
      },
    },
    async function resetPassword(request, reply) {
      await recovery.confirmPasswordReset(request.body.token, request.body.new_password, clientOf(request));
      reply.code(204).send(null);
    },
  );

  app.post(
    "/auth/email-verification-requests",
    {
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "requestEmailVerification",
        security: NO_SECURITY,
        tags: ["account"],
        summary: "Ask again for a verification link",
        description:
          "Answers 202 with the same body whether or not the e-mail belongs to an account. When it belongs to " +
          "an active account whose address is not verified yet, a new link is mailed (the older one stops " +
          "working). Limited per client address and per e-mail, together with reset requests.",
        body: EmailRequest,
        response: askResponses,
      },
    },
    async function requestEmailVerification(request, reply) {
      await limits.countMailRequest(request.ip, request.body.email);
      const { email } = request.body;
      const asked = askedLocale(request);
      afterResponse(request.log, "verification request", () => recovery.requestVerification(email, asked));
      reply.code(202);
      return { message: VERIFICATION_REQUESTED };
    },
  );

  app.post(
    "/auth/email-verifications",
    {
      schema: {
        operationId: "verifyEmail",
        security: NO_SECURITY,
        tags: ["account"],
        summary: "Verify an address with the token from a verification link",
        description:
          "Marks the address verified. When the link confirms a change of e-mail, the new address becomes the " +
          "account's e-mail now (tokens issued for the old one stop working) and the old address is told.",
        body: EmailVerificationConfirm,
        response: {
          200: EmailVerified,
          400: errorResponse("The link's token is unknown, expired, or already used.", INVALID_LINK),
          409: errorResponse(
            "The new address was taken by another account meanwhile.",
            "A user with this email already exists",
          ),
          415: notJson,
          422: errorResponse("The body is invalid.", "body.token: field required"),
        },
      },
    },
    async function verifyEmail(request) {
      const user = await recovery.confirmVerification(request.body.token, clientOf(request));
      return { email: user.email, email_verified_at: user.emailVerifiedAt as string };
    },
  );
};
