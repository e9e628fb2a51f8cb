// Branding (issue 37): the operator's brand on every hosted page and mail,
// an application's own on the pages of its authorization requests, and the
// front door at `/`. installBranding (at the root, before the pages): the
// hook that fills each page's brand marks as it is sent (page-parts.ts), the
// logo and the colours' stylesheet, and the front door; installBrandingApi
// (with the API): the admin routes (routes.ts). The brand itself is a shared
// service (services.brands, brand-book.ts), which the mails use too.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { AUTHORIZE_PATH } from "../oidc/paths.ts";
import { isPerLocalePage } from "../pages/page-locale.ts";
import { SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import type { Services } from "../platform/services.ts";
import { type Brand, brandStylesheet, stylesheetVersion } from "./brand-book.ts";
import { registerFrontDoor } from "./front-door.ts";
import { logoExtension } from "./logo.ts";
import { brandedBytes, fillBrand, PAGE_BRAND, type PageBrandFiller } from "./page-parts.ts";
import { brandingRoutes } from "./routes.ts";
import { DEFAULT_BRAND_SETTINGS } from "./settings.ts";

/** The logo's own policy: an image needs nothing, and may not be framed or run anything. */
const LOGO_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox";
const IMMUTABLE = "public, max-age=31536000, immutable";

const clientIdOf = (params: URLSearchParams) => params.get("client_id") ?? undefined;

/**
 * The application whose brand a page wears: the one of the authorization request the page belongs to.
 * The authorization endpoint's own pages (consent, errors) name it in their query (GET) or form (POST);
 * the sign-in page, in the request it continues (`continue=/oauth/authorize?...`). Only the look of the
 * page follows it: nothing is granted by it, and a client_id that names no client shows the service's.
 */
export function brandClientOf(request: FastifyRequest): string | undefined {
  const [path = "", query = ""] = request.url.split("?", 2);
  if (path === AUTHORIZE_PATH) {
    const body = typeof request.body === "string" ? request.body : "";
    return clientIdOf(new URLSearchParams(request.method === "POST" ? body : query));
  }
  if (path === SIGN_IN_PAGE_PATH) {
    const next = new URLSearchParams(query).get("continue");
    if (next === null || !next.startsWith(`${AUTHORIZE_PATH}?`)) return undefined;
    return clientIdOf(new URLSearchParams(next.slice(AUTHORIZE_PATH.length + 1)));
  }
  return undefined;
}

export async function installBranding(app: FastifyInstance, { config, brands, store, oidcKeys }: Services) {
  const settings = config.branding ?? DEFAULT_BRAND_SETTINGS;

  // Every page built by pageDocument carries the marks; sendPage (pages/account-pages.ts) has them
  // filled through this decoration, so that no other answer (GET /me above all) pays a hook for it.
  const keptBytes = brandedBytes();
  const fillPage: PageBrandFiller = (request, page) => {
    const clientId = brandClientOf(request);
    const brand: Promise<Brand> = clientId === undefined ? brands.service() : brands.forClient(clientId);
    // A page still shows while the database cannot be read, in the brand of the settings.
    return brand.then(
      (found) => (isPerLocalePage(page) ? keptBytes(page, found) : fillBrand(page, found)),
      (error: Error) => {
        request.log.warn({ err: error }, "the brand could not be read; the page shows the settings' brand");
        return fillBrand(page, brands.fromSettings());
      },
    );
  };
  app.decorate(PAGE_BRAND, fillPage);

  app.get<{ Params: { name: string } }>(
    "/branding/logo/:name",
    { schema: { hide: true } },
    async function brandLogo(request, reply) {
      const match = /^([0-9a-f]{20})\.(png|jpg|webp|gif)$/.exec(request.params.name);
      const logo = match?.[1] === undefined ? undefined : await store.findBrandLogo(match[1]);
      // The name is the whole URL the brand gives: its hash and its type's extension.
      if (logo === undefined || logoExtension(logo.type) !== match?.[2])
        return reply.code(404).send({ detail: "Not Found" });
      return reply
        .type(logo.type)
        .header("cache-control", IMMUTABLE)
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", LOGO_CONTENT_SECURITY_POLICY)
        .header("cross-origin-resource-policy", "same-origin")
        .send(Buffer.from(logo.data, "base64"));
    },
  );

  app.get<{ Querystring: { v?: string; client?: string } }>(
    "/branding/brand.css",
    { schema: { hide: true } },
    async function brandStylesheetRoute(request, reply) {
      const { v, client } = request.query;
      const brand = typeof client === "string" ? await brands.forClient(client) : await brands.service();
      const colour = brand.primaryColor;
      // Cached for good only under the version of the colour it holds: a stale version is answered fresh.
      const current = v === stylesheetVersion(colour);
      return reply
        .type("text/css; charset=utf-8")
        .header("cache-control", current ? IMMUTABLE : "no-cache")
        .send(brandStylesheet(colour));
    },
  );

  await registerFrontDoor(app, {
    brands,
    frontDoor: settings.frontDoor,
    defaultLocale: config.defaultLocale ?? "en",
    adminConsole: config.adminConsole?.enabled === true && oidcKeys !== undefined,
  });
}

export async function installBrandingApi(api: FastifyInstance, services: Services): Promise<void> {
  const { store, guards, brands, clients, audit, clock } = services;
  await api.register(brandingRoutes, { store, guards, brands, clients, audit, clock });
}
