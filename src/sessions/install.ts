// Sessions: the caller's signed-in sessions, listed and ended one by one
// (/me/sessions). Sessions begin at the token endpoint (core), and expired
// ones are purged by the housekeeping (operations).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { sessionRoutes } from "./routes.ts";

export async function installSessions(api: FastifyInstance, { store, guards, sessions }: Services): Promise<void> {
  await api.register(sessionRoutes, { store, guards, sessions });
}
