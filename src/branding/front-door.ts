// The front door (issue 37): what `GET /` answers a person who opens the
// service's address. FRONT_DOOR=page: a small page in the reader's language
// (requestLocale) with the product's name and logo (the brand's header),
// what this is, and where to go: sign in, the account's security page, the
// API docs, and the admin console when it is served. FRONT_DOOR=<URL>: a
// redirect there (302: the setting may change).
import type { FastifyInstance } from "fastify";
import { requestLocale } from "../i18n/request-locale.ts";
import { translator } from "../i18n/translate.ts";
import { pageDocument, sendPage } from "../pages/account-pages.ts";
import type { BrandBook } from "./brand-book.ts";
import type { BrandSettings } from "./settings.ts";

export interface FrontDoorOptions {
  brands: BrandBook;
  frontDoor: BrandSettings["frontDoor"];
  defaultLocale: Parameters<typeof requestLocale>[1];
  /** Whether the admin console is served at /admin. */
  adminConsole: boolean;
}

export async function registerFrontDoor(
  app: FastifyInstance,
  { brands, frontDoor, defaultLocale, adminConsole }: FrontDoorOptions,
): Promise<void> {
  app.get("/", { schema: { hide: true } }, async function frontDoorPage(request, reply) {
    if (frontDoor !== "page") return reply.header("cache-control", "no-store").redirect(frontDoor.redirect, 302);
    const t = translator(requestLocale(request, defaultLocale));
    const { productName } = await brands.service();
    const product = { product: productName };
    const door = (href: string, label: string, hint: string) =>
      `<li><a href="${href}">${t.html(label)}</a><p class="hint">${t.html(hint, product)}</p></li>`;
    const doors = [
      door("/sign-in", "branding.frontDoor.signIn", "branding.frontDoor.signInHint"),
      door("/account/security", "branding.frontDoor.account", "branding.frontDoor.accountHint"),
      door("/docs", "branding.frontDoor.docs", "branding.frontDoor.docsHint"),
      ...(adminConsole ? [door("/admin/", "branding.frontDoor.admin", "branding.frontDoor.adminHint")] : []),
    ];
    const body = `<p>${t.html("branding.frontDoor.intro", product)}</p>
<nav aria-label="${t.html("branding.frontDoor.linksLabel")}">
<ul class="doors">
${doors.join("\n")}
</ul>
</nav>`;
    // No script: the page only links.
    const title = t.html("branding.frontDoor.title", product);
    return sendPage(reply.header("content-language", t.locale), pageDocument(t, title, "", body, ""));
  });
}
