// POST /auth/mail-sign-in (issue 37): ask for a sign-in mail. Always 202 with
// the same body shape for known and unknown addresses, at once; the lookup,
// the attempt's row and the mail are written after the answer has gone
// (tracked, so shutdown waits for them). GET /auth/mail-sign-in tells the
// sign-in page which ways the mail offers (the route is absent while the
// setting is off, and the page leaves its section hidden).
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { type RateLimits, TOO_MANY_MAIL_REQUESTS } from "../auth/rate-limits.ts";
import type { Locale } from "../i18n/locales.ts";
import { requestLocale } from "../i18n/request-locale.ts";
import { errorResponse, NO_SECURITY } from "../platform/openapi.ts";
import { EmailRequest } from "../recovery/schemas.ts";
import { normalizeEmailInBody } from "../users/email.ts";
import { MAIL_SIGN_IN_SECONDS, type MailSignIn } from "./mail-sign-in.ts";

export interface MailSignInRouteOptions {
  mailSignIn: MailSignIn;
  limits: RateLimits;
  defaultLocale: Locale;
}

const Delivery = Type.Array(Type.Union([Type.Literal("link"), Type.Literal("code")]), {
  description: "What the mail carries: a one-use link, a 6-digit code, or both (PASSWORDLESS_MAIL).",
  examples: [["link", "code"]],
});

const Attempt = Type.Object(
  {
    attempt: Type.String({
      description: "The attempt's opaque id: send it with the code or the link's token to the token endpoint.",
    }),
    expires_in: Type.Integer({ description: "Seconds the link and the code work.", examples: [MAIL_SIGN_IN_SECONDS] }),
    delivery: Delivery,
  },
  { $id: "MailSignInAttempt", description: "The same answer whether or not the address belongs to an account." },
);

export const mailSignInRoutes: FastifyPluginAsyncTypebox<MailSignInRouteOptions> = async (app, options) => {
  const { mailSignIn, limits } = options;
  const pending = new Set<Promise<void>>();
  app.addHook("onClose", async function finishMailSignIns() {
    await Promise.all(pending);
  });

  app.get(
    "/auth/mail-sign-in",
    {
      schema: {
        operationId: "mailSignInOptions",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Whether sign-in by mail is on, and what the mail carries",
        description: "Absent (404) while PASSWORDLESS_MAIL is off.",
        response: {
          200: Type.Object({ delivery: Delivery }, { description: "Sign-in by mail is on; the mail carries these." }),
        },
      },
    },
    async function mailSignInOptions() {
      return { delivery: mailSignIn.delivery };
    },
  );

  app.post(
    "/auth/mail-sign-in",
    {
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "requestMailSignIn",
        security: NO_SECURITY,
        tags: ["auth"],
        summary: "Ask for a sign-in mail (a one-use link and a 6-digit code)",
        description:
          "Answers 202 at once with a new attempt, whether or not the address belongs to an account, so nothing " +
          "is revealed; sets an HttpOnly cookie binding the attempt to this browser. The mail (in the language of " +
          "the asking page) goes to an active account's address, or, while sign-up is open, to an address no " +
          `account has. The link and the code work once, for ${MAIL_SIGN_IN_SECONDS / 60} minutes: redeem them at ` +
          "`POST /auth/token` (grant types `urn:user-token-service:grant-type:mail-code` and `...:mail-link`). " +
          "Limited per client address and per e-mail, together with the reset and verification mails.",
        body: EmailRequest,
        response: {
          202: Attempt,
          415: errorResponse("The body is not JSON.", "Unsupported Media Type"),
          422: errorResponse("The body is invalid.", 'body.email: must match format "email"'),
          429: errorResponse(
            "Too many requests from this address or for this e-mail; `Retry-After` says when to try again.",
            TOO_MANY_MAIL_REQUESTS,
          ),
        },
      },
    },
    async function requestMailSignIn(request, reply) {
      await limits.countMailRequest(request.ip, request.body.email);
      const locale = requestLocale(request, options.defaultLocale);
      const answer = mailSignIn.start(
        reply,
        { email: request.body.email, locale, ip: request.ip, cookies: request.headers.cookie },
        (work) => {
          const task = new Promise<void>((resolve) => setImmediate(resolve))
            .then(work)
            .catch((error) => request.log.warn({ err: error }, "mail sign-in request failed after the response"))
            .finally(() => pending.delete(task));
          pending.add(task);
        },
      );
      reply.code(202);
      return answer;
    },
  );
};
