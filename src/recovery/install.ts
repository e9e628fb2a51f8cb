// Account recovery by mail: the password-reset and address-verification
// links, asked for and spent (the pages they open are the pages
// capability's). The links are written by the shared recovery verbs
// (auth/account-recovery.ts) and sent by the mail outbox.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { accountRoutes } from "./routes.ts";

export async function installRecovery(api: FastifyInstance, { recovery, limits }: Services): Promise<void> {
  await api.register(accountRoutes, { recovery, limits });
}
