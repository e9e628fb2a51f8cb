// The users resource under the spec's route conventions: noun paths, the
// method carries the action, POST 201 / GET 200 / PUT 200 / PATCH 200 /
// DELETE 204. Who may do what is decided here, step by step, before the
// store is touched: 401 answers "who are you?", 403 "you may not".

import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import type { AccountRecovery } from "../auth/account-recovery.ts";
import type { Guards } from "../auth/guard.ts";
import type { PasswordPolicy } from "../auth/password-policy.ts";
import type { PasswordHasher } from "../auth/passwords.ts";
import { type RateLimits, TOO_MANY_SIGNUPS } from "../auth/rate-limits.ts";
import { type ClientInfo, clientOf } from "../auth/sessions.ts";
import {
  EMAIL_TAKEN,
  forbidden,
  LAST_ACTIVE_ADMIN,
  NOT_ENOUGH_PRIVILEGES,
  notFound,
  SIGNUP_CLOSED,
  USER_NOT_FOUND,
} from "../errors.ts";
import { askedLocale } from "../mail/asked-locale.ts";
import type { Notices } from "../mail/notices.ts";
import { afterCommit } from "../platform/after-commit.ts";
import {
  BEARER_SECURITY,
  errorResponse,
  NO_SECURITY,
  PasswordRouteUnavailable,
  UnauthorizedResponse,
} from "../platform/openapi.ts";
import type { AuditEntry, UserChanges, UserRecord, UserStore, WriteOptions } from "../store/store.ts";
import { normalizeEmailInBody } from "./email.ts";
import { toUserOut } from "./present.ts";
import {
  USERS_PAGE_DEFAULT,
  UserCreate,
  UserIdParams,
  UserListQuery,
  UserOut,
  UserPage,
  UserPatch,
  UserReplace,
} from "./schemas.ts";

export interface UserRouteOptions {
  store: UserStore;
  guards: Guards;
  passwords: PasswordHasher;
  limits: RateLimits;
  signupOpen: boolean;
  policy: PasswordPolicy;
  recovery: AccountRecovery;
  notices: Notices;
  clock: () => number;
}

const DEACTIVATION_AND_EMAIL_NOTICES =
  "A deactivation is mailed to the account, and an e-mail change to the previous address (security " +
  "notifications `account_deactivated`, `email_changed`; an admin's device and address are not shown).";

const ONLY_ADMINS_SET_ROLES = "Only admins can set is_active or is_admin";
/** Issue 35: an address is verified by its owner opening the link, or by an admin. */
export const ONLY_ADMINS_VERIFY = "Only admins can set email_verified";

const errors = {
  401: UnauthorizedResponse,
  403: errorResponse("Authenticated, but not allowed to do this.", NOT_ENOUGH_PRIVILEGES),
  404: errorResponse("No user with this id.", USER_NOT_FOUND),
  409: errorResponse("The e-mail is taken, or the change would remove the last active admin.", EMAIL_TAKEN),
  415: errorResponse("The body is not JSON.", "Unsupported Media Type"),
  422: errorResponse("The body, path or query is invalid.", 'body.email: must match format "email"'),
};

/**
 * What an update means for security, written in the same transaction as the update: role changes
 * and deactivations are recorded, and a deactivation ends every session and every access token
 * issued so far.
 */
function consequencesOf(
  before: UserRecord,
  changes: UserChanges,
  clientAddress: string,
  notices: Notices,
  actorId: string | undefined,
): WriteOptions {
  const events: AuditEntry[] = [];
  if (changes.isAdmin !== undefined && changes.isAdmin !== before.isAdmin) {
    const outcome = changes.isAdmin ? "granted_admin" : "revoked_admin";
    events.push({ type: "role_change", outcome, clientAddress, actorId });
  }
  const deactivated = before.isActive && changes.isActive === false;
  if (deactivated) {
    const notice = notices.about("account_deactivated", before, null, { byAdmin: true });
    events.push({ type: "deactivation", outcome: "success", clientAddress, notice, actorId });
  }
  return { endSessions: deactivated, events };
}

/**
 * An admin's `email_verified` (issue 35): the verification time to set and its audit event, with the
 * admin as actor; nothing when the address is already as asked (an earlier verification keeps its time).
 */
function adminVerification(
  before: UserRecord,
  changes: UserChanges,
  verified: boolean | undefined,
  adminId: string,
  clientAddress: string,
  now: string,
): { emailVerifiedAt: string | null; event: AuditEntry } | undefined {
  if (verified === undefined) return undefined;
  // An e-mail change in the same request leaves the new address unverified (changes.emailVerifiedAt).
  const verifiedNow =
    changes.emailVerifiedAt === undefined ? before.emailVerifiedAt !== null : changes.emailVerifiedAt !== null;
  if (verified === verifiedNow) return undefined;
  const outcome = verified ? "verified_by_admin" : "unverified_by_admin";
  const event: AuditEntry = { type: "email_verification", outcome, clientAddress, actorId: adminId };
  return { emailVerifiedAt: verified ? now : null, event };
}

/** The admin acting on someone else's account, for its audit events (issue 35); undefined otherwise. */
function adminActor(request: FastifyRequest, targetId: string): string | undefined {
  const caller = request.user;
  return caller?.isAdmin && caller.id !== targetId ? caller.id : undefined;
}

/** The caller's device and address, for a notice about its own account; an admin's are not shown. */
function ownClient(request: FastifyRequest, target: UserRecord): ClientInfo | null {
  return request.user?.id === target.id ? clientOf(request) : null;
}

/** Admins may act on anyone; other users only on themselves. */
function assertSelfOrAdmin(caller: UserRecord, id: string): void {
  if (!caller.isAdmin && caller.id !== id) throw forbidden();
}

export const userRoutes: FastifyPluginAsyncTypebox<UserRouteOptions> = async (
  app,
  { store, guards, passwords, limits, signupOpen, policy, recovery, notices, clock },
) => {
  const { authenticate, authenticateIfPresent, requireAdmin } = guards;

  app.post(
    "/users",
    {
      preHandler: [authenticateIfPresent],
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "createUser",
        security: NO_SECURITY,
        tags: ["users"],
        summary: "Create a user (sign up)",
        description:
          "Open sign-up while `SIGNUP_OPEN` is true: anyone creates a plain user. Admins (with a bearer token) " +
          "may always create users and may set `is_active` and `is_admin`: send the token as " +
          "`Authorization: Bearer` (the docs page sends none here, so this route shows no padlock). A link to " +
          "verify the address is mailed to it. 422 also when the password is on the list of common or breached " +
          "passwords, or contains the e-mail.",
        body: UserCreate,
        response: {
          201: UserOut,
          401: errors[401],
          403: errors[403],
          409: errors[409],
          415: errors[415],
          422: errors[422],
          429: errorResponse(
            "Too many sign-ups from this address; `Retry-After` says when to try again.",
            TOO_MANY_SIGNUPS,
          ),
          503: PasswordRouteUnavailable,
        },
      },
    },
    async function createUser(request, reply) {
      const { email, password, full_name, locale, is_active, is_admin } = request.body;
      const callerIsAdmin = request.user?.isAdmin === true;
      if (!callerIsAdmin && !signupOpen) throw forbidden(SIGNUP_CLOSED);
      if (!callerIsAdmin && (is_active !== undefined || is_admin !== undefined)) throw forbidden(ONLY_ADMINS_SET_ROLES);
      if (!callerIsAdmin) await limits.countSignup(request.ip);
      policy.check(password, email);
      const user = await store.create(
        {
          email,
          hashedPassword: await passwords.hash(password),
          fullName: full_name ?? null,
          locale: locale ?? null,
          isActive: is_active ?? true,
          isAdmin: is_admin ?? false,
        },
        {
          events: [
            { type: "signup", outcome: callerIsAdmin ? "created_by_admin" : "success", clientAddress: request.ip },
          ],
        },
      );
      // The account is committed: a failure to queue its verification mail must not turn the 201 into
      // an error (the user can ask for the link again).
      // A sign-up's own request language; an admin's is not the new user's.
      const asked = callerIsAdmin ? undefined : askedLocale(request);
      await afterCommit(request, () => recovery.sendVerification(user, asked));
      reply.code(201);
      return toUserOut(user);
    },
  );

  app.get(
    "/users",
    {
      preHandler: [authenticate, requireAdmin],
      schema: {
        operationId: "listUsers",
        tags: ["users"],
        summary: "List users (admins)",
        description:
          "Oldest first, in pages. Filters are query parameters and combine with AND. Follow `next` " +
          "(or pass `next_cursor` as `cursor`) for the next page until it is null.",
        security: BEARER_SECURITY,
        querystring: UserListQuery,
        response: { 200: UserPage, 401: errors[401], 403: errors[403], 422: errors[422] },
      },
    },
    async function listUsers(request) {
      const { limit = USERS_PAGE_DEFAULT, cursor, email, is_active, is_admin } = request.query;
      const { email_prefix, name, is_verified, has_second_factor, upstream_provider } = request.query;
      // One extra row tells whether a next page exists without a count query.
      const rows = await store.list({
        limit: limit + 1,
        after: cursor,
        email,
        isActive: is_active,
        isAdmin: is_admin,
        emailPrefix: email_prefix,
        name,
        isVerified: is_verified,
        hasSecondFactor: has_second_factor,
        upstreamProvider: upstream_provider,
      });
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      const nextCursor = rows.length > limit && last ? last.id : null;
      let next: string | null = null;
      if (nextCursor) {
        const query = new URLSearchParams({ limit: String(limit), cursor: nextCursor });
        if (email !== undefined) query.set("email", email);
        if (is_active !== undefined) query.set("is_active", String(is_active));
        if (is_admin !== undefined) query.set("is_admin", String(is_admin));
        // Issue 35's search filters, after the original ones so that their links are unchanged.
        if (email_prefix !== undefined) query.set("email_prefix", email_prefix);
        if (name !== undefined) query.set("name", name);
        if (is_verified !== undefined) query.set("is_verified", String(is_verified));
        if (has_second_factor !== undefined) query.set("has_second_factor", String(has_second_factor));
        if (upstream_provider !== undefined) query.set("upstream_provider", upstream_provider);
        next = `/users?${query}`;
      }
      return { items: items.map(toUserOut), next_cursor: nextCursor, next };
    },
  );

  app.get(
    "/users/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "readUser",
        tags: ["users"],
        summary: "Read a user (admins, or the user itself)",
        description: "A non-admin asking for another user's id gets 403, whether or not that id exists.",
        security: BEARER_SECURITY,
        params: UserIdParams,
        response: { 200: UserOut, 401: errors[401], 403: errors[403], 404: errors[404], 422: errors[422] },
      },
    },
    async function readUser(request) {
      assertSelfOrAdmin(request.user!, request.params.id);
      const user = await store.findById(request.params.id);
      if (!user) throw notFound();
      return toUserOut(user);
    },
  );

  app.put(
    "/users/:id",
    {
      preHandler: [authenticate, requireAdmin],
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "replaceUser",
        tags: ["users"],
        summary: "Replace a user (admins)",
        description:
          "Replaces the whole record: a field left out takes its default (`full_name` and `locale` null, `is_active` true, " +
          "`is_admin` false). The password is not part of the record; see `PUT /me/password`. " +
          `409 when the e-mail is taken or when the change would leave no active admin (${LAST_ACTIVE_ADMIN}). ` +
          DEACTIVATION_AND_EMAIL_NOTICES,
        security: BEARER_SECURITY,
        params: UserIdParams,
        body: UserReplace,
        response: {
          200: UserOut,
          401: errors[401],
          403: errors[403],
          404: errors[404],
          409: errors[409],
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function replaceUser(request) {
      const { email, full_name, locale, is_active, is_admin } = request.body;
      const before = await store.findById(request.params.id);
      if (!before) throw notFound();
      const changes: UserChanges = {
        ...(await recovery.emailChanges(before, email, false)),
        fullName: full_name ?? null,
        locale: locale ?? null,
        isActive: is_active ?? true,
        isAdmin: is_admin ?? false,
      };
      const consequences = consequencesOf(before, changes, request.ip, notices, adminActor(request, before.id));
      const user = await store.update(request.params.id, changes, consequences);
      if (!user) throw notFound();
      if (before.isActive && !user.isActive) notices.wake();
      await afterCommit(request, () => recovery.afterUpdate(before, user, ownClient(request, before)));
      return toUserOut(user);
    },
  );

  app.patch(
    "/users/:id",
    {
      preHandler: [authenticate],
      preValidation: [normalizeEmailInBody],
      schema: {
        operationId: "updateUser",
        tags: ["users"],
        summary: "Update some fields of a user (admins, or the user itself)",
        description:
          "Only the fields sent change. A user may change its own `email`, `full_name` and `locale`; `is_active`, " +
          "`is_admin` and `email_verified` are for admins (403 otherwise). Changing the e-mail ends the tokens " +
          "issued for the old one. An admin's `email_verified` marks the address verified (or not), audited. " +
          DEACTIVATION_AND_EMAIL_NOTICES,
        security: BEARER_SECURITY,
        params: UserIdParams,
        body: UserPatch,
        response: {
          200: UserOut,
          401: errors[401],
          403: errors[403],
          404: errors[404],
          409: errors[409],
          415: errors[415],
          422: errors[422],
        },
      },
    },
    async function updateUser(request) {
      const caller = request.user!;
      const { email, full_name, locale, is_active, is_admin, email_verified } = request.body;
      assertSelfOrAdmin(caller, request.params.id);
      if (!caller.isAdmin && (is_active !== undefined || is_admin !== undefined))
        throw forbidden(ONLY_ADMINS_SET_ROLES);
      if (!caller.isAdmin && email_verified !== undefined) throw forbidden(ONLY_ADMINS_VERIFY);
      const before = await store.findById(request.params.id);
      if (!before) throw notFound();
      const changes: UserChanges = {
        ...(await recovery.emailChanges(
          locale === undefined ? before : { ...before, locale },
          email,
          caller.id === before.id,
          caller.id === before.id ? askedLocale(request) : undefined,
        )),
        fullName: full_name,
        locale,
        isActive: is_active,
        isAdmin: is_admin,
      };
      const consequences = consequencesOf(before, changes, request.ip, notices, adminActor(request, before.id));
      const verifiedAt = new Date(clock()).toISOString();
      const verification = adminVerification(before, changes, email_verified, caller.id, request.ip, verifiedAt);
      if (verification) {
        changes.emailVerifiedAt = verification.emailVerifiedAt;
        consequences.events = [...(consequences.events ?? []), verification.event];
      }
      const user = await store.update(request.params.id, changes, consequences);
      if (!user) throw notFound();
      if (before.isActive && !user.isActive) notices.wake();
      await afterCommit(request, () => recovery.afterUpdate(before, user, ownClient(request, before)));
      return toUserOut(user);
    },
  );

  app.delete(
    "/users/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "deleteUser",
        tags: ["users"],
        summary: "Delete a user (admins, or the user itself)",
        description: "204 with no body. The last active admin cannot be deleted (409).",
        security: BEARER_SECURITY,
        params: UserIdParams,
        response: {
          204: { type: "null", description: "Deleted." },
          401: errors[401],
          403: errors[403],
          404: errors[404],
          409: errors[409],
          422: errors[422],
        },
      },
    },
    async function deleteUser(request, reply) {
      assertSelfOrAdmin(request.user!, request.params.id);
      const by = request.user!.id === request.params.id ? "by_self" : "by_admin";
      const actorId = adminActor(request, request.params.id);
      const events: AuditEntry[] = [{ type: "deletion", outcome: by, clientAddress: request.ip, actorId }];
      if (!(await store.remove(request.params.id, { events }))) throw notFound();
      reply.code(204).send(null);
    },
  );
};
