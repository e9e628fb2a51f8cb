// Users: the users resource (sign-up, and what admins read and change) and
// each user's audit trail (GET /users/{id}/events), and what admins do to an account from the
// console (issue 35: its sessions, passkeys, apps, a password-reset mail).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { adminAccountRoutes } from "./admin-account-routes.ts";
import { eventRoutes } from "./event-routes.ts";
import { userRoutes } from "./routes.ts";

export async function installUsers(
  api: FastifyInstance,
  { config, store, clock, guards, passwords, limits, policy, recovery, notices, sessions, clients }: Services,
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
    clock,
  });
  await api.register(eventRoutes, { store, guards });
  await api.register(adminAccountRoutes, { store, guards, sessions, clients, recovery, notices, clock });
}
