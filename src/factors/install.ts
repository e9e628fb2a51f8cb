// Second factors and passkeys: the caller's passkeys and the options of a
// passkey ceremony, the authenticator app and recovery codes, and the
// admin's reset of a user's factors. The token endpoint's second-factor and
// passkey grants are the core's (they complete its password grant).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { passkeyRoutes } from "./passkey-routes.ts";
import { secondFactorRoutes } from "./second-factor-routes.ts";

export async function installFactors(
  api: FastifyInstance,
  { store, guards, passkeys, factors, notices, passwords, limits, audit }: Services,
): Promise<void> {
  await api.register(passkeyRoutes, { store, guards, passkeys, factors, notices });
  await api.register(secondFactorRoutes, { store, guards, passwords, limits, audit, factors, notices });
}
