// An admin unlinks a user's upstream identity (issue 35, the console's user page): the same rule as
// the user's own unlink (never the account's last way to sign in: 409), audited about the user with
// the admin as actor. Installed with the upstream capability, beside GET /users/{id}/identities.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, notFound } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";
import { UserId } from "../users/schemas.ts";
import { IDENTITY_NOT_FOUND, LAST_WAY_TO_SIGN_IN } from "./routes.ts";
import type { Upstream } from "./sign-in.ts";

export interface UpstreamAdminRouteOptions {
  store: UserStore;
  guards: Guards;
  upstream: Upstream;
}

export const upstreamAdminRoutes: FastifyPluginAsyncTypebox<UpstreamAdminRouteOptions> = async (
  app,
  { store, guards, upstream },
) => {
  app.delete(
    "/users/:id/identities/:identityId",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "unlinkUserIdentity",
        tags: ["users"],
        summary: "Unlink a user's upstream identity (admins)",
        description:
          "204 with no body. As the user's own `DELETE /me/identities/{id}`: never the account's last way to " +
          "sign in (409 without a password, passkey or another identity). Audited (`upstream`, " +
          "`unlinked_by_admin:<provider>`, the admin as actor).",
        security: BEARER_SECURITY,
        params: Type.Object({ id: UserId, identityId: Type.String({ format: "uuid" }) }),
        response: {
          204: { type: "null", description: "Unlinked." },
          401: UnauthorizedResponse,
          403: errorResponse("Authenticated, but not an admin.", NOT_ENOUGH_PRIVILEGES),
          404: errorResponse("No such user, or no identity of that user with this id.", IDENTITY_NOT_FOUND),
          409: errorResponse("The account's last way to sign in.", LAST_WAY_TO_SIGN_IN),
          422: errorResponse("The path is invalid.", 'params.id: must match format "uuid"'),
        },
      },
    },
    async function unlinkUserIdentity(request, reply) {
      const user = await store.findById(request.params.id);
      if (!user) throw notFound();
      const identity = (await store.listIdentities(user.id)).find((each) => each.id === request.params.identityId);
      if (!identity) throw new HttpError(404, IDENTITY_NOT_FOUND);
      if (!(await upstream.mayUnlink(user, identity.id))) throw new HttpError(409, LAST_WAY_TO_SIGN_IN);
      if (!(await store.unlinkIdentity(user.id, identity.id))) throw new HttpError(404, IDENTITY_NOT_FOUND);
      await store.recordEvent({
        type: "upstream",
        userId: user.id,
        outcome: `unlinked_by_admin:${identity.provider}`,
        clientAddress: request.ip,
        actorId: request.user!.id,
      });
      return reply.code(204).send(null);
    },
  );
};
