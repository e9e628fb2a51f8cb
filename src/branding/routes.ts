// The brand's admin API (issue 37), by the spec's route conventions, admins
// only: GET /branding (the effective brand, each field's source), PUT (the
// whole brand: a field left out falls back to its setting), PATCH (the
// fields sent; null puts one back to its setting), PUT /branding/logo (the
// raw image as the body) and DELETE /branding/logo; an application's logo at
// PUT and DELETE /clients/{id}/logo. Every change is an audit event about
// the admin who made it.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { type Static, Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import { HttpError, NOT_ENOUGH_PRIVILEGES, notFound } from "../errors.ts";
import type { ClientRegistry } from "../oidc/clients.ts";
import type { Audit } from "../platform/audit.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import { type BrandValues, SERVICE_BRAND, type UserStore } from "../store/store.ts";
import { BRAND_FIELDS, type Brand, type BrandBook, type BrandField } from "./brand-book.ts";
import { primaryColourProblem } from "./colour.ts";
import { checkLogo, LOGO_TYPES, logoExtension, MAX_LOGO_BYTES } from "./logo.ts";
import { emailProblem, linkProblem, productNameProblem } from "./settings.ts";

export const CLIENT_NOT_FOUND = "Client not found";
/** What the logo routes read at most; beyond MAX_LOGO_BYTES up to this is refused with 422, further with 413. */
const LOGO_BODY_LIMIT = 4 * MAX_LOGO_BYTES;

export interface BrandingRouteOptions {
  store: UserStore;
  guards: Guards;
  brands: BrandBook;
  clients: ClientRegistry;
  audit: Audit;
  clock: () => number;
}

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

const fieldSchemas = {
  product_name: Type.String({
    description: "The product's name on the pages and in the mails.",
    examples: ["Acme ID"],
  }),
  primary_color: Type.String({
    description: "#RRGGBB; white text on it and it as link text on #f5f5f4 must reach WCAG AA (4.5:1).",
    examples: ["#0f766e"],
  }),
  support_email: Type.String({
    description: "Where the pages and mails send people for help.",
    examples: ["help@acme.example"],
  }),
  terms_url: Type.String({ description: "The terms of service (https).", examples: ["https://acme.example/terms"] }),
  privacy_url: Type.String({ description: "The privacy notice (https).", examples: ["https://acme.example/privacy"] }),
};

export const BrandingChange = Type.Object(
  {
    product_name: Type.Optional(Nullable(fieldSchemas.product_name)),
    primary_color: Type.Optional(Nullable(fieldSchemas.primary_color)),
    support_email: Type.Optional(Nullable(fieldSchemas.support_email)),
    terms_url: Type.Optional(Nullable(fieldSchemas.terms_url)),
    privacy_url: Type.Optional(Nullable(fieldSchemas.privacy_url)),
  },
  {
    $id: "BrandingChange",
    additionalProperties: false,
    description: "PUT: the whole brand (a field left out, or null, falls back to its setting). PATCH: the fields sent.",
  },
);
type BrandingChange = Static<typeof BrandingChange>;

const Source = Type.Union([Type.Literal("setting"), Type.Literal("api")]);

export const BrandingOut = Type.Object(
  {
    product_name: Type.String(),
    primary_color: Type.String(),
    support_email: Nullable(Type.String()),
    terms_url: Nullable(Type.String()),
    privacy_url: Nullable(Type.String()),
    logo_url: Nullable(
      Type.String({ description: "The logo's path, named by its hash: it changes when the logo does." }),
    ),
    stylesheet_url: Type.String({ description: "The colours as CSS custom properties, versioned by them." }),
    sources: Type.Object(
      {
        product_name: Source,
        primary_color: Source,
        support_email: Source,
        terms_url: Source,
        privacy_url: Source,
      },
      { description: "Where each field comes from: its setting (BRAND_*) or this API." },
    ),
  },
  { $id: "Branding", description: "The effective brand." },
);
type BrandingOut = Static<typeof BrandingOut>;

const ClientLogoOut = Type.Object(
  { client_id: Type.String(), logo_url: Type.String() },
  { $id: "ClientLogo", description: "The application's logo, shown on its sign-in and consent pages." },
);

const ClientIdParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

const API_FIELD: Record<BrandField, keyof BrandingChange> = {
  productName: "product_name",
  primaryColor: "primary_color",
  supportEmail: "support_email",
  termsUrl: "terms_url",
  privacyUrl: "privacy_url",
};

function toBrandingOut(brand: Brand): BrandingOut {
  const sources = {} as BrandingOut["sources"];
  for (const field of BRAND_FIELDS) sources[API_FIELD[field]] = brand.sources[field];
  return {
    product_name: brand.productName,
    primary_color: brand.primaryColor,
    support_email: brand.supportEmail,
    terms_url: brand.termsUrl,
    privacy_url: brand.privacyUrl,
    logo_url: brand.logoPath,
    stylesheet_url: brand.stylesheetPath,
    sources,
  };
}

/** The values sent, checked: 422 naming the field and the problem. */
function checkValues(values: BrandValues): BrandValues {
  const problems: [string, string | null, (raw: string) => string | undefined][] = [
    ["product_name", values.productName, productNameProblem],
    ["primary_color", values.primaryColor, (raw) => primaryColourProblem("primary_color", raw)],
    ["support_email", values.supportEmail, emailProblem],
    ["terms_url", values.termsUrl, linkProblem],
    ["privacy_url", values.privacyUrl, linkProblem],
  ];
  for (const [field, value, problem] of problems) {
    if (value === null) continue;
    const why = problem(value);
    if (why === undefined) continue;
    throw new HttpError(422, why.startsWith(field) ? why : `${field} ${why}`);
  }
  return { ...values, primaryColor: values.primaryColor?.toLowerCase() ?? null };
}

const errors = {
  401: UnauthorizedResponse,
  403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
  422: errorResponse(
    "A field is invalid, such as a colour too light for white text.",
    "primary_color #ffcc00 on white text has contrast 1.5:1; WCAG AA needs at least 4.5:1",
  ),
};
const logoErrors = {
  ...errors,
  413: errorResponse("The body is far over the logo's limit.", "Request body is too large"),
  415: errorResponse("The body is not declared an image.", "The logo must be sent as the raw image"),
  422: errorResponse(
    "The image is refused: SVG, another type, over 256 KiB, or bytes that are not of the declared type.",
    "The logo's bytes are not a PNG image",
  ),
};

export const brandingRoutes: FastifyPluginAsyncTypebox<BrandingRouteOptions> = async (
  app,
  { store, guards, brands, clients, audit, clock },
) => {
  const admins = [guards.authenticate, guards.requireAdmin];
  const tags = ["branding"];
  const now = () => new Date(clock()).toISOString();
  const record = (request: FastifyRequest, outcome: string) =>
    audit.record("branding", request.user?.id ?? null, outcome, request.ip);

  async function saveValues(values: BrandValues, request: FastifyRequest): Promise<BrandingOut> {
    await store.saveBrandValues(SERVICE_BRAND, checkValues(values), now());
    brands.forget(SERVICE_BRAND);
    await record(request, "updated");
    return toBrandingOut(await brands.service());
  }

  app.get(
    "/branding",
    {
      preHandler: admins,
      schema: {
        operationId: "getBranding",
        tags,
        summary: "The effective brand (admins)",
        description:
          "Each field as the pages and mails show it, and whether it comes from its setting (BRAND_*) or from this API.",
        security: BEARER_SECURITY,
        response: { 200: BrandingOut, 401: errors[401], 403: errors[403] },
      },
    },
    async function getBranding() {
      return toBrandingOut(await brands.service());
    },
  );

  app.put(
    "/branding",
    {
      preHandler: admins,
      schema: {
        operationId: "replaceBranding",
        tags,
        summary: "Replace the brand (admins)",
        description:
          "The whole brand: a field left out (or null) falls back to its setting. The logo is kept (PUT /branding/logo).",
        security: BEARER_SECURITY,
        body: BrandingChange,
        response: { 200: BrandingOut, ...errors },
      },
    },
    async function replaceBranding(request) {
      const body = request.body;
      return saveValues(
        {
          productName: body.product_name ?? null,
          primaryColor: body.primary_color ?? null,
          supportEmail: body.support_email ?? null,
          termsUrl: body.terms_url ?? null,
          privacyUrl: body.privacy_url ?? null,
        },
        request,
      );
    },
  );

  app.patch(
    "/branding",
    {
      preHandler: admins,
      schema: {
        operationId: "updateBranding",
        tags,
        summary: "Change some fields of the brand (admins)",
        description: "Only the fields sent change; null puts a field back to its setting.",
        security: BEARER_SECURITY,
        body: BrandingChange,
        response: { 200: BrandingOut, ...errors },
      },
    },
    async function updateBranding(request) {
      brands.forget(SERVICE_BRAND);
      const stored = await store.findBrand(SERVICE_BRAND);
      const body = request.body;
      const pick = (sent: string | null | undefined, kept: string | null | undefined) =>
        sent === undefined ? (kept ?? null) : sent;
      return saveValues(
        {
          productName: pick(body.product_name, stored?.productName),
          primaryColor: pick(body.primary_color, stored?.primaryColor),
          supportEmail: pick(body.support_email, stored?.supportEmail),
          termsUrl: pick(body.terms_url, stored?.termsUrl),
          privacyUrl: pick(body.privacy_url, stored?.privacyUrl),
        },
        request,
      );
    },
  );

  await app.register(async function logoRoutes(scope) {
    // The body is the image itself, whatever it is declared: the route judges the type (415, 422).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: LOGO_BODY_LIMIT }, (_request, body, done) =>
      done(null, body),
    );

    function logoOf(request: FastifyRequest) {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const checked = checkLogo(request.headers["content-type"], body);
      if ("ok" in checked) return checked.ok;
      throw new HttpError(checked.status, checked.detail);
    }

    // The body is not described by a schema (a schema would be checked against the bytes): the
    // descriptions say what it is.
    const logoBody = `The body is the image itself, at most ${MAX_LOGO_BYTES / 1024} KiB: ${LOGO_TYPES.join(", ")} (not SVG).`;

    scope.put(
      "/branding/logo",
      {
        preHandler: admins,
        bodyLimit: LOGO_BODY_LIMIT,
        schema: {
          operationId: "putBrandingLogo",
          tags,
          summary: "Upload the logo (admins)",
          description:
            "The raw image as the body, with its Content-Type; its first bytes must be that type's. Served at " +
            `\`logo_url\`, a path named by the image's hash: a new logo is a new URL, and the old one answers 404. ${logoBody}`,
          security: BEARER_SECURITY,
          response: { 200: BrandingOut, ...logoErrors },
        },
      },
      async function putBrandingLogo(request) {
        const logo = logoOf(request);
        await store.saveBrandLogo(SERVICE_BRAND, logo, now());
        brands.forget(SERVICE_BRAND);
        await record(request, "logo_set");
        return toBrandingOut(await brands.service());
      },
    );

    scope.put(
      "/clients/:id/logo",
      {
        preHandler: admins,
        bodyLimit: LOGO_BODY_LIMIT,
        schema: {
          operationId: "putClientLogo",
          tags: ["clients"],
          summary: "Upload an application's logo (admins)",
          description:
            "Shown with the application's name and `brand_color` on the sign-in and consent pages of its " +
            `authorization requests. RFC 7591's \`logo_uri\` is never fetched. ${logoBody}`,
          security: BEARER_SECURITY,
          params: ClientIdParams,
          response: {
            200: ClientLogoOut,
            ...logoErrors,
            404: errorResponse("No client with this id.", CLIENT_NOT_FOUND),
          },
        },
      },
      async function putClientLogo(request) {
        const client = await clients.find((request.params as { id: string }).id);
        if (client === undefined) throw notFound(CLIENT_NOT_FOUND);
        const logo = logoOf(request);
        const stored = await store.saveBrandLogo(client.id, logo, now());
        brands.forget(client.id);
        await record(request, "client_logo_set");
        return { client_id: client.id, logo_url: `/branding/logo/${stored.logo?.hash}.${logoExtension(logo.type)}` };
      },
    );
  });

  app.delete(
    "/branding/logo",
    {
      preHandler: admins,
      schema: {
        operationId: "deleteBrandingLogo",
        tags,
        summary: "Remove the logo (admins)",
        description: "204 with no body; the pages show the product's name alone, and the logo's URL answers 404.",
        security: BEARER_SECURITY,
        response: { 204: { type: "null", description: "Removed." }, 401: errors[401], 403: errors[403] },
      },
    },
    async function deleteBrandingLogo(request, reply) {
      await store.saveBrandLogo(SERVICE_BRAND, null, now());
      brands.forget(SERVICE_BRAND);
      await record(request, "logo_deleted");
      return reply.code(204).send(null);
    },
  );

  app.delete(
    "/clients/:id/logo",
    {
      preHandler: admins,
      schema: {
        operationId: "deleteClientLogo",
        tags: ["clients"],
        summary: "Remove an application's logo (admins)",
        description: "204 with no body; its pages show the service's logo again.",
        security: BEARER_SECURITY,
        params: ClientIdParams,
        response: {
          204: { type: "null", description: "Removed." },
          401: errors[401],
          403: errors[403],
          404: errorResponse("No client with this id.", CLIENT_NOT_FOUND),
        },
      },
    },
    async function deleteClientLogo(request, reply) {
      const client = await clients.find(request.params.id);
      if (client === undefined) throw notFound(CLIENT_NOT_FOUND);
      await store.saveBrandLogo(client.id, null, now());
      brands.forget(client.id);
      await record(request, "client_logo_deleted");
      return reply.code(204).send(null);
    },
  );
};
