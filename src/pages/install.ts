// Pages: what a person opens in a browser. The account pages (the links of
// the reset and verification mails) and the security pages (sign-in, the
// security page, their scripts), served at the root beside the API.
import type { FastifyInstance } from "fastify";
import type { Services } from "../platform/services.ts";
import { registerAccountPages } from "./account-pages.ts";
import { registerSecurityPages } from "./security-pages.ts";

export async function installPages(app: FastifyInstance, { deviceCookie }: Services): Promise<void> {
  await registerAccountPages(app);
  await registerSecurityPages(app, deviceCookie);
}
