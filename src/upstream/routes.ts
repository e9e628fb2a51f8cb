// Sign-in with an upstream provider (issue 25): the redirect to the provider
// and its callback (browser pages, outside the OpenAPI document), the list of
// providers the sign-in page draws its buttons from, the link of a proved
// account, and the identities of an account: the owner's (list, link another,
// unlink) and an admin's view. The flow itself is upstream/sign-in.ts.

import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import { TOO_MANY_MAIL_REQUESTS } from "../auth/rate-limits.ts";
import { isDevicePageAddress } from "../device/paths.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES } from "../errors.ts";
import { askedLocale } from "../mail/asked-locale.ts";
import { AUTHORIZE_PATH } from "../oidc/paths.ts";
import { SECURITY_PAGE_PATH, SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import { sendUpstreamErrorPage } from "../pages/upstream-pages.ts";
import type { Audit } from "../platform/audit.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import { SessionIdParams } from "../sessions/schemas.ts";
import type { UpstreamIdentityRecord, UserStore } from "../store/store.ts";
import { UserIdParams } from "../users/schemas.ts";
import type { BindingCookie } from "./binding.ts";
import { PROVIDER_REFUSED, PROVIDER_UNREACHABLE, UpstreamFailure } from "./relying-party.ts";
import {
  ACCOUNT_INACTIVE,
  DOMAIN_NOT_ALLOWED,
  LINKED_ELSEWHERE,
  NO_EMAIL,
  NO_PENDING_SIGN_IN,
  NOT_VERIFIED,
  SIGNUP_CLOSED,
  type Upstream,
} from "./sign-in.ts";

export interface UpstreamRouteOptions {
  store: UserStore;
  guards: Guards;
  audit: Audit;
  upstream: Upstream;
  binding: BindingCookie;
}

export const UNKNOWN_PROVIDER = "There is no such sign-in provider";
export const IDENTITY_NOT_FOUND = "Identity not found";
export const LAST_WAY_TO_SIGN_IN =
  "This is the account's last way to sign in: set a password (through a password reset) or link another first";
export const INVALID_LINK_TICKET = "The link has expired or was already used: sign in with the provider again";
export const IDENTITY_ELSEWHERE = "This identity is linked to another account";
export const LINK_MAILED =
  "We sent a link to the account's e-mail address. Open it in this browser within 10 minutes to link the sign-in.";
export const INVALID_MAILED_LINK =
  "This link has expired or was already used, or was opened in another browser than the one where the sign-in " +
  "started: sign in with the provider again";

/**
 * The error page's words for the flow's refusals (the flow's `detail` stays English: it is also the API's
 * and the log's); a refusal without words of its own reads as the generic one (issue 37).
 */
const PAGE_PROBLEMS = new Map<string, string>([
  [PROVIDER_UNREACHABLE, "pages.upstream.unreachable"],
  [PROVIDER_REFUSED, "pages.upstream.refused"],
  [NO_PENDING_SIGN_IN, "pages.upstream.noPending"],
  [DOMAIN_NOT_ALLOWED, "pages.upstream.domain"],
  [NO_EMAIL, "pages.upstream.noEmail"],
  [SIGNUP_CLOSED, "pages.upstream.signupClosed"],
  [NOT_VERIFIED, "pages.upstream.notVerified"],
  [LINKED_ELSEWHERE, "pages.upstream.linkedElsewhere"],
  [ACCOUNT_INACTIVE, "pages.upstream.inactive"],
  ["There is no such sign-in provider.", "pages.upstream.unknownProvider"],
  ["The sign-in was cancelled or refused at the provider.", "pages.upstream.cancelled"],
]);

function pageProblem(status: number, detail: string): { key: string } {
  // The flow's only 429: the sign-up limit (POST /users's, shared).
  if (status === 429) return { key: "pages.upstream.tooManySignups" };
  return { key: PAGE_PROBLEMS.get(detail) ?? "pages.upstream.failed" };
}

const Identity = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    provider: Type.String({ description: "The configured provider's name.", examples: ["google"] }),
    issuer: Type.String({ description: "The provider's issuer (with subject, the identity's key)." }),
    subject: Type.String({ description: "The provider's stable id of the user (never the e-mail)." }),
    email: Type.Union([Type.String(), Type.Null()], { description: "The address the provider last gave." }),
    created_at: Type.String({ format: "date-time" }),
    last_used_at: Type.String({ format: "date-time" }),
  },
  { $id: "UpstreamIdentity", description: "An identity at an upstream provider, linked to the account." },
);
const IdentityList = Type.Object({ items: Type.Array(Identity) }, { $id: "UpstreamIdentityList" });
const Provider = Type.Object(
  {
    name: Type.String({ examples: ["google"] }),
    label: Type.String({ examples: ["Google"] }),
    start: Type.String({ description: "Where the browser goes to sign in with it (add `?continue=`)." }),
  },
  { $id: "UpstreamProvider" },
);
const LinkIn = Type.Object(
  { provider: Type.String({ maxLength: 32, examples: ["github"] }) },
  { $id: "UpstreamLinkIn", additionalProperties: false },
);
const LinkOut = Type.Object(
  { location: Type.String({ description: "The provider's address: send the browser there." }) },
  { $id: "UpstreamLinkOut" },
);
const TicketIn = Type.Object(
  { ticket: Type.String({ minLength: 1, maxLength: 128 }) },
  { $id: "UpstreamTicketIn", additionalProperties: false },
);

const LinkMailIn = Type.Object(
  {
    ticket: Type.String({ minLength: 1, maxLength: 128 }),
    continue: Type.Optional(
      Type.String({
        maxLength: 4096,
        description: "The authorization request to go back to after the link (only this service's).",
      }),
    ),
  },
  { $id: "UpstreamLinkMailIn", additionalProperties: false },
);
const LinkMailOut = Type.Object({ message: Type.String() }, { $id: "UpstreamLinkMailOut" });
const LinkConfirmIn = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128 }) },
  { $id: "UpstreamLinkConfirmIn", additionalProperties: false },
);
const LinkConfirmOut = Type.Object(
  {
    upstream_ticket: Type.String({
      description: "For the token endpoint's upstream grant, from this browser, within 2 minutes.",
    }),
    continue: Type.Union([Type.String(), Type.Null()], {
      description: "The authorization request the sign-in was started from, if any.",
    }),
  },
  { $id: "UpstreamLinkConfirmOut" },
);

/** Only this service's authorization endpoint or /device page (issue 36): never another address (an open redirect). */
const continueOf = (raw: unknown) =>
  typeof raw === "string" && (raw.startsWith(`${AUTHORIZE_PATH}?`) || isDevicePageAddress(raw))
    ? raw.slice(0, 4096)
    : null;

const present = (identity: UpstreamIdentityRecord) => ({
  id: identity.id,
  provider: identity.provider,
  issuer: identity.issuer,
  subject: identity.subject,
  email: identity.email,
  created_at: identity.createdAt,
  last_used_at: identity.lastUsedAt,
});

const startPath = (provider: string) => `/auth/upstream/${provider}/start`;
export const callbackPath = (provider: string) => `/auth/upstream/${provider}/callback`;

export const upstreamRoutes: FastifyPluginAsyncTypebox<UpstreamRouteOptions> = async (
  app,
  { store, guards, audit, upstream, binding },
) => {
  const { authenticate } = guards;
  const Params = Type.Object({ provider: Type.String({ maxLength: 32 }) });

  app.get(
    "/auth/upstream/providers",
    {
      schema: {
        operationId: "listUpstreamProviders",
        tags: ["auth"],
        summary: "The upstream sign-in providers",
        description: "The providers configured in UPSTREAM_PROVIDERS, in that order, for the sign-in page's buttons.",
        response: { 200: Type.Array(Provider) },
      },
    },
    async function listProviders() {
      return [...upstream.parties.values()].map(({ provider }) => ({
        name: provider.name,
        label: provider.label,
        start: startPath(provider.name),
      }));
    },
  );

  app.get(
    "/auth/upstream/:provider/start",
    { schema: { hide: true, params: Params } },
    async function start(request, reply) {
      const continueTo = continueOf((request.query as Record<string, unknown>).continue);
      try {
        const started = await upstream.start(request.params.provider, { continueTo, linkUserId: null });
        binding.set(reply, started.binding);
        return reply.redirect(started.location, 303);
      } catch (error) {
        if (!(error instanceof UpstreamFailure)) throw error;
        const status = upstream.parties.has(request.params.provider) ? 400 : 404;
        return sendUpstreamErrorPage(reply, status, pageProblem(status, error.detail));
      }
    },
  );

  app.get(
    "/auth/upstream/:provider/callback",
    { schema: { hide: true, params: Params } },
    async function callback(request, reply) {
      const url = new URL(request.url, "http://callback.invalid");
      const outcome = await upstream.callback(request.params.provider, url, binding.read(request), request.ip);
      if (outcome.kind === "refused") {
        if (outcome.headers) reply.headers(outcome.headers);
        return sendUpstreamErrorPage(reply, outcome.status, pageProblem(outcome.status, outcome.detail));
      }
      if (outcome.kind === "linked") return reply.redirect(`${SECURITY_PAGE_PATH}#linked`, 303);
      const query = outcome.continueTo === null ? "" : `?${new URLSearchParams({ continue: outcome.continueTo })}`;
      // The ticket in the fragment, which the browser never sends to a server (nor in a Referer).
      const fragment = `${outcome.kind === "signed_in" ? "upstream" : "link"}=${outcome.ticket}`;
      return reply.redirect(`${SIGN_IN_PAGE_PATH}${query}#${fragment}`, 303);
    },
  );

  app.post(
    "/auth/upstream/link",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "completeUpstreamLink",
        tags: ["me"],
        summary: "Link the identity of an upstream sign-in to the account just signed in to",
        description:
          "When an upstream sign-in found an account with its e-mail, the account's owner proves it (signs in) " +
          "and the sign-in page posts the ticket of the callback here, from the same browser.",
        security: BEARER_SECURITY,
        body: TicketIn,
        response: {
          204: { type: "null", description: "Linked." },
          400: errorResponse("Unknown, spent or expired ticket, or another browser.", INVALID_LINK_TICKET),
          401: UnauthorizedResponse,
          409: errorResponse("The identity belongs to another account.", IDENTITY_ELSEWHERE),
        },
      },
    },
    async function completeLink(request, reply) {
      const result = await upstream.completeLink(request.body.ticket, binding.read(request), request.user!, request.ip);
      if (result === "invalid") throw new HttpError(400, INVALID_LINK_TICKET);
      if (result === "elsewhere") throw new HttpError(409, IDENTITY_ELSEWHERE);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/auth/upstream/link/mail",
    {
      schema: {
        operationId: "requestUpstreamLinkMail",
        tags: ["auth"],
        summary: "Prove the account by a link mailed to it, instead of signing in to it",
        description:
          "When an upstream sign-in found an account with its e-mail, the sign-in page may post the ticket of " +
          "the callback here (from the same browser) instead of asking the account's password: a link goes to " +
          "the account's address, working once, for 10 minutes, in this browser only. The answer renews the " +
          "cookie that binds the sign-in to the browser for as long. Counts against the limit of reset and " +
          "verification mails.",
        body: LinkMailIn,
        response: {
          202: LinkMailOut,
          400: errorResponse("Unknown, spent or expired ticket, or another browser.", INVALID_LINK_TICKET),
          429: errorResponse("Too many mails asked for.", TOO_MANY_MAIL_REQUESTS),
        },
      },
    },
    async function requestLinkMail(request, reply) {
      const raw = binding.read(request);
      const result = await upstream.mailLink(
        request.body.ticket,
        raw,
        continueOf(request.body.continue),
        request.ip,
        askedLocale(request),
      );
      if (result === "invalid") throw new HttpError(400, INVALID_LINK_TICKET);
      if (raw !== undefined) binding.set(reply, raw);
      return reply.code(202).send({ message: LINK_MAILED });
    },
  );

  app.post(
    "/auth/upstream/link/mail/confirm",
    {
      schema: {
        operationId: "confirmUpstreamLinkMail",
        tags: ["auth"],
        summary: "Link the identity with the token of the mailed link",
        description:
          "The page the mailed link opens posts its token here, from the browser that started the sign-in: " +
          "the identity is linked, and the answer's ticket signs in through the token endpoint's upstream grant " +
          "(a second factor still applies). On an account whose address was never verified the link is the " +
          "first proof of it: the address becomes verified and every other way in ends first (password, " +
          "passkeys, second factors, other identities, apps' consents, pending address changes, every session " +
          "and access token). A token presented from another browser is refused and stays usable in its own.",
        body: LinkConfirmIn,
        response: {
          200: LinkConfirmOut,
          400: errorResponse("Unknown, spent or expired link, or another browser.", INVALID_MAILED_LINK),
          409: errorResponse("The identity belongs to another account.", IDENTITY_ELSEWHERE),
        },
      },
    },
    async function confirmLinkMail(request) {
      const result = await upstream.confirmMailedLink(request.body.token, binding.read(request), request.ip);
      if (result === "invalid") throw new HttpError(400, INVALID_MAILED_LINK);
      if (result === "elsewhere") throw new HttpError(409, IDENTITY_ELSEWHERE);
      return { upstream_ticket: result.ticket, continue: result.continueTo };
    },
  );

  app.get(
    "/me/identities",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "listOwnIdentities",
        tags: ["me"],
        summary: "Your linked upstream identities",
        security: BEARER_SECURITY,
        response: { 200: IdentityList, 401: UnauthorizedResponse },
      },
    },
    async function listOwn(request) {
      return { items: (await store.listIdentities(request.user!.id)).map(present) };
    },
  );

  app.post(
    "/me/identities",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "linkIdentity",
        tags: ["me"],
        summary: "Link another upstream identity",
        description:
          "Starts a sign-in at the provider for linking: the answer's `location` is where the browser goes " +
          "(the answer also sets the cookie that binds the sign-in to this browser); back from the provider, " +
          "the identity is linked and the browser lands on the security page.",
        security: BEARER_SECURITY,
        body: LinkIn,
        response: {
          200: LinkOut,
          401: UnauthorizedResponse,
          404: errorResponse("No such provider.", UNKNOWN_PROVIDER),
          502: errorResponse("The provider cannot be reached.", "The sign-in provider could not be reached."),
        },
      },
    },
    async function startLink(request, reply) {
      if (!upstream.parties.has(request.body.provider)) throw new HttpError(404, UNKNOWN_PROVIDER);
      try {
        const started = await upstream.start(request.body.provider, { continueTo: null, linkUserId: request.user!.id });
        binding.set(reply, started.binding);
        return { location: started.location };
      } catch (error) {
        if (error instanceof UpstreamFailure) throw new HttpError(502, error.detail);
        throw error;
      }
    },
  );

  app.delete(
    "/me/identities/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "unlinkIdentity",
        tags: ["me"],
        summary: "Unlink an upstream identity",
        description: "Never the last way to sign in: without a password, passkey or another identity it is refused.",
        security: BEARER_SECURITY,
        params: SessionIdParams,
        response: {
          204: { type: "null", description: "Unlinked." },
          401: UnauthorizedResponse,
          404: errorResponse("No such identity of yours.", IDENTITY_NOT_FOUND),
          409: errorResponse("The account's last way to sign in.", LAST_WAY_TO_SIGN_IN),
        },
      },
    },
    async function unlink(request, reply) {
      const user = request.user!;
      const identity = (await store.listIdentities(user.id)).find((each) => each.id === request.params.id);
      if (!identity) throw new HttpError(404, IDENTITY_NOT_FOUND);
      if (!(await upstream.mayUnlink(user, identity.id))) throw new HttpError(409, LAST_WAY_TO_SIGN_IN);
      await store.unlinkIdentity(user.id, identity.id);
      await audit.record("upstream", user.id, `unlinked:${identity.provider}`, request.ip);
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/users/:id/identities",
    {
      preHandler: [authenticate, guards.requireAdmin],
      schema: {
        operationId: "listUserIdentities",
        tags: ["users"],
        summary: "A user's linked upstream identities (admins)",
        security: BEARER_SECURITY,
        params: UserIdParams,
        response: {
          200: IdentityList,
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
        },
      },
    },
    async function listUserIdentities(request) {
      return { items: (await store.listIdentities(request.params.id)).map(present) };
    },
  );
};
