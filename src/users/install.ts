// Users: the users resource (sign-up, and what admins read and change) and
// each user's audit trail (GET /users/{id}/events).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { eventRoutes } from "./event-routes.ts";
import { userRoutes } from "./routes.ts";

export async function installUsers(
  api: FastifyInstance,
  { config, store, guards, passwords, limits, policy, recovery, notices }: Services,
): Promise<void> {
  await api.register(userRoutes, {
    store,
    guards,
    passwords,
    limits,
    signupOpen: config.signupOpen,
    policy,
    recovery,
    notices,
  });
  await api.register(eventRoutes, { store, guards });
}
