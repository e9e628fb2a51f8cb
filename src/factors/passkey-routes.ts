// Passkeys: the caller's own (/me/passkeys: begin a registration, finish it,
// list, rename, remove) and the options of an authentication ceremony
// (POST /auth/webauthn/authentication-options), which the token endpoint's
// passkey grants then answer (core/token-routes.ts). Someone else's passkey is
// answered exactly like a missing one.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Guards } from "../auth/guard.ts";
import {
  MALFORMED_WEBAUTHN_RESPONSE,
  PASSKEY_ALREADY_REGISTERED,
  PASSKEY_NOT_VERIFIED,
  type Passkeys,
} from "../auth/passkeys.ts";
import { INVALID_MFA_TOKEN, type SecondFactorService } from "../auth/second-factors.ts";
import { clientOf } from "../auth/sessions.ts";
import { HttpError } from "../errors.ts";
import type { Notices } from "../mail/notices.ts";
import { BEARER_SECURITY, errorResponse, NO_SECURITY, UnauthorizedResponse } from "../platform/openapi.ts";
import type { PasskeyRecord, UserStore } from "../store/store.ts";
import {
  AuthenticationOptionsIn,
  AuthenticationOptionsOut,
  PasskeyAddedOut,
  PasskeyCreate,
  PasskeyIdParams,
  PasskeyList,
  PasskeyOut,
  PasskeyRename,
  RegistrationOptionsOut,
} from "./schemas.ts";

export interface PasskeyRouteOptions {
  store: UserStore;
  guards: Guards;
  passkeys: Passkeys;
  /** The password grant's second-factor challenges (whose mfa_token it is); a first factor's recovery codes. */
  factors: SecondFactorService;
  notices: Notices;
}

export const PASSKEY_NOT_FOUND = "Passkey not found";
const notFoundResponse = errorResponse("No passkey of yours with this id.", PASSKEY_NOT_FOUND);

export function toPasskeyOut(passkey: PasskeyRecord) {
  return {
    id: passkey.id,
    name: passkey.name,
    created_at: passkey.createdAt,
    last_used_at: passkey.lastUsedAt,
    backed_up: passkey.backedUp,
  };
}

export const passkeyRoutes: FastifyPluginAsyncTypebox<PasskeyRouteOptions> = async (
  app,
  { store, guards, passkeys, factors, notices },
) => {
  const { authenticate } = guards;

  app.post(
    "/me/passkeys/registration-options",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "beginPasskeyRegistration",
        tags: ["passkeys"],
        summary: "Begin adding a passkey",
        description:
          "Answers the options for `navigator.credentials.create()` (relying party: `PUBLIC_URL`'s host) and a " +
          "`challenge_id`; finish within 5 minutes with `POST /me/passkeys`. The passkeys you have are excluded, " +
          "so an authenticator cannot register twice. No body.",
        security: BEARER_SECURITY,
        response: { 200: RegistrationOptionsOut, 401: UnauthorizedResponse },
      },
    },
    async function beginPasskeyRegistration(request) {
      return passkeys.registrationOptions(request.user!);
    },
  );

  app.post(
    "/me/passkeys",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "addPasskey",
        tags: ["passkeys"],
        summary: "Add a passkey",
        description:
          "Verifies the authenticator's answer to the registration options (origin and relying party must be this " +
          "service's, the challenge live and unspent) and stores the passkey under the name you give it. From now " +
          "on the account has a second factor: the password grant asks for it. When you have no recovery codes " +
          "left (your first second factor), the answer carries ten in `recovery_codes`: shown this once, store " +
          "them safely; they sign you in if you lose the device. Otherwise `recovery_codes` is empty and the ones " +
          "you have stay valid. The account's address is told (security notification `passkey_added`).",
        security: BEARER_SECURITY,
        body: PasskeyCreate,
        response: {
          201: PasskeyAddedOut,
          400: errorResponse(
            "The challenge is unknown, expired or spent, or the answer does not verify (wrong origin, wrong relying " +
              "party, wrong challenge, bad attestation).",
            PASSKEY_NOT_VERIFIED,
          ),
          401: UnauthorizedResponse,
          409: errorResponse("This authenticator's credential is registered already.", PASSKEY_ALREADY_REGISTERED),
          422: errorResponse("The body is invalid, or `response` is not a credential.", MALFORMED_WEBAUTHN_RESPONSE),
        },
      },
    },
    async function addPasskey(request, reply) {
      const { challenge_id, name, response } = request.body;
      const user = request.user!;
      // A first factor of any kind comes with recovery codes: losing the device must not lock the user out.
      const fresh = await factors.codesForNewFactor(user.id, request.ip);
      // Not its name: text chosen by whoever added it has no place in a mail that may warn of them.
      const notice = notices.about("passkey_added", user, clientOf(request));
      const passkey = await passkeys.register(user, challenge_id, name, response, request.ip, fresh, notice);
      notices.wake();
      reply.code(201);
      return { ...toPasskeyOut(passkey), recovery_codes: fresh?.codes ?? [] };
    },
  );

  app.get(
    "/me/passkeys",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "listPasskeys",
        tags: ["passkeys"],
        summary: "Your passkeys",
        description: "Oldest first; names, when added and last used. Never key material.",
        security: BEARER_SECURITY,
        response: { 200: PasskeyList, 401: UnauthorizedResponse },
      },
    },
    async function listPasskeys(request) {
      return (await store.listPasskeys(request.user!.id)).map(toPasskeyOut);
    },
  );

  app.patch(
    "/me/passkeys/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "renamePasskey",
        tags: ["passkeys"],
        summary: "Rename one of your passkeys",
        security: BEARER_SECURITY,
        params: PasskeyIdParams,
        body: PasskeyRename,
        response: {
          200: PasskeyOut,
          401: UnauthorizedResponse,
          404: notFoundResponse,
          422: errorResponse(
            "The name is empty, too long or has control characters.",
            "body.name: must NOT have fewer than 1 characters",
          ),
        },
      },
    },
    async function renamePasskey(request) {
      const renamed = await store.renamePasskey(request.user!.id, request.params.id, request.body.name, [
        { type: "passkey", outcome: "renamed", clientAddress: request.ip },
      ]);
      if (!renamed) throw new HttpError(404, PASSKEY_NOT_FOUND);
      return toPasskeyOut(renamed);
    },
  );

  app.delete(
    "/me/passkeys/:id",
    {
      preHandler: [authenticate],
      schema: {
        operationId: "removePasskey",
        tags: ["passkeys"],
        summary: "Remove one of your passkeys",
        description:
          "204 with no body. It no longer signs in; sessions it started go on until they end (end them at " +
          "`/me/sessions`). The account's address is told (security notification `passkey_removed`).",
        security: BEARER_SECURITY,
        params: PasskeyIdParams,
        response: {
          204: { type: "null", description: "Removed." },
          401: UnauthorizedResponse,
          404: notFoundResponse,
          422: errorResponse("The id is not a UUID.", 'params.id: must match format "uuid"'),
        },
      },
    },
    async function removePasskey(request, reply) {
      const notice = notices.about("passkey_removed", request.user!, clientOf(request));
      const removed = await store.removePasskey(request.user!.id, request.params.id, [
        { type: "passkey", outcome: "removed", clientAddress: request.ip, notice },
      ]);
      if (!removed) throw new HttpError(404, PASSKEY_NOT_FOUND);
      notices.wake();
      reply.code(204).send(null);
    },
  );

  app.post(
    "/auth/webauthn/authentication-options",
    {
      schema: {
        operationId: "beginPasskeyAuthentication",
        tags: ["auth"],
        summary: "Begin signing in with a passkey",
        description:
          "`{}`: a sign-in with a passkey alone; the options name no account (discoverable credentials) and " +
          "require user verification. Answer with `grant_type=urn:user-token-service:grant-type:webauthn`, " +
          "`challenge_id` and `webauthn_response` at `POST /auth/token`.\n\n" +
          '`{"mfa_token": ...}`: a passkey as the second factor after the password grant\'s 403 `mfa_required`; ' +
          "the options list that account's passkeys. Answer with " +
          "`grant_type=urn:user-token-service:grant-type:mfa-webauthn`, `mfa_token` and `webauthn_response`. " +
          "Either way the challenge is single use and lives 5 minutes.",
        security: NO_SECURITY,
        body: AuthenticationOptionsIn,
        response: {
          200: AuthenticationOptionsOut,
          401: errorResponse("The `mfa_token` is unknown, expired or spent.", INVALID_MFA_TOKEN),
          422: errorResponse("The body is invalid.", "body: must NOT have additional properties"),
        },
      },
    },
    async function beginPasskeyAuthentication(request) {
      const { mfa_token } = request.body ?? {};
      if (mfa_token === undefined) return passkeys.authenticationOptions("login", null);
      // 401 when the mfa_token is unknown, expired or spent; it stays unspent until the grant.
      const userId = await factors.challengedUser(mfa_token);
      return passkeys.authenticationOptions("second_factor", userId);
    },
  );
};
