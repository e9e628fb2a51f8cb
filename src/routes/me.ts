// GET /me: the caller's own record, behind the spec's token check.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Authenticate } from "../auth/guard.ts";
import { BEARER_SECURITY } from "../docs.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS } from "../errors.ts";
import { errorResponse, UserOut } from "../schemas.ts";
import { toUserOut } from "../users/present.ts";

export interface MeRouteOptions {
  authenticate: Authenticate;
}

export const meRoutes: FastifyPluginAsyncTypebox<MeRouteOptions> = async (app, { authenticate }) => {
  app.get(
    "/me",
    {
      preHandler: [authenticate],
      schema: {
        tags: ["me"],
        summary: "The current user",
        description: "Returns the user that the bearer token was issued to.",
        security: BEARER_SECURITY,
        response: {
          200: UserOut,
          401: errorResponse("No token, or the token check failed.", COULD_NOT_VALIDATE_CREDENTIALS),
        },
      },
    },
    async function readCurrentUser(request, reply) {
      reply.header("cache-control", "no-store");
      return toUserOut(request.user!);
    },
  );
};
