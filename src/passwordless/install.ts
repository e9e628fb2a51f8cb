// Sign-in by mail without a password (issue 37), while PASSWORDLESS_MAIL is
// not off: the route that asks for the mail, and the token endpoint's two
// grants (or the one the setting offers). The sign-in page's section
// (page-section.ts) and script are always there; the script asks
// GET /auth/mail-sign-in whether to show the section.
import type { FastifyInstance } from "fastify";
import { registerMailSignInScript } from "../pages/mail-sign-in-script.ts";
import type { Services } from "../platform/services.ts";
import { mailCodeGrant, mailLinkGrant } from "./grants.ts";
import { createMailSignIn } from "./mail-sign-in.ts";
import { mailSignInRoutes } from "./routes.ts";

export async function installPasswordless(api: FastifyInstance, services: Services): Promise<void> {
  const { config, store, mails, mailSender, limits, audit, clock, addresses, grants, grantDeps } = services;
  registerMailSignInScript(api);
  const mode = config.passwordlessMail ?? "off";
  if (mode === "off") return;
  const mailSignIn = createMailSignIn({
    mode,
    store,
    mails,
    wakeMail: mailSender.wake,
    limits,
    audit,
    signupOpen: config.signupOpen,
    signingMaterial: services.signingMaterial,
    secureCookie: addresses.baseUrl().startsWith("https:"),
    clock,
  });
  if (mode !== "link") grants.add(mailCodeGrant(grantDeps, mailSignIn));
  if (mode !== "code") grants.add(mailLinkGrant(grantDeps, mailSignIn));
  await api.register(mailSignInRoutes, { mailSignIn, limits, defaultLocale: config.defaultLocale ?? "en" });
}
