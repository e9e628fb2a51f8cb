// The admin console (issue 35): a client of the service's own admin API,
// served at /admin while ADMIN_CONSOLE is on (the default) and OpenID Connect
// is on (the console signs in through it). Its OpenID Connect client is
// registered when the service starts listening (console-client.ts); the
// page and its assets are served from memory (console-pages.ts).
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { ensureConsoleClient } from "./console-client.ts";
import { registerConsolePages } from "./console-pages.ts";

export async function installAdminConsole(
  app: FastifyInstance,
  { config, store, oidcKeys, addresses, log }: Services,
): Promise<void> {
  // Tests' configurations leave the setting out: no console, and no client in their lists of clients.
  const settings = config.adminConsole;
  if (settings === undefined || !settings.enabled) return;
  if (!oidcKeys) {
    log.warn("ADMIN_CONSOLE is on but OpenID Connect is off (OIDC_SIGNING_KEY_FILE unset): no console at /admin");
    return;
  }
  await registerConsolePages(app, settings);
  app.addHook("onListen", async function registerConsoleClient() {
    try {
      const outcome = await ensureConsoleClient(store, addresses.baseUrl());
      if (outcome !== "kept") log.info({ outcome }, "the admin console's OpenID Connect client");
    } catch (error) {
      log.error({ err: error }, "could not register the admin console's OpenID Connect client");
    }
  });
}
