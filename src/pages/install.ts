// Pages: what a person opens in a browser. The account pages (the links of
// the reset and verification mails) and the security pages (sign-in, the
// security page, their scripts) and the language page, served at the root beside the API.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { registerAccountPages } from "./account-pages.ts";
import { registerLanguagePages } from "./language-pages.ts";
import { setPagesDefaultLocale } from "./page-locale.ts";
import { registerSecurityPages } from "./security-pages.ts";

export async function installPages(app: FastifyInstance, { config, deviceCookie }: Services): Promise<void> {
  // Before any route: every page, in any plugin, reads its fallback language from the root instance.
  setPagesDefaultLocale(app, config.defaultLocale);
  await registerAccountPages(app);
  await registerLanguagePages(app);
  await registerSecurityPages(app, deviceCookie);
}
