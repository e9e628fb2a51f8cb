// The effective brand (issue 37): each field as an admin set it through the
// API, else as its setting says; and a client's brand (its name, colour and
// logo, each falling back to the service's). Every instance reads the brands
// from the database and keeps them at most REREAD_MS, so a change made
// through one instance shows on every other within that bound; the instance
// that made it forgets its copy at once.
import { createHash } from "node:crypto";
import type { ClientRegistry } from "../oidc/clients.ts";
import { type BrandRecord, SERVICE_BRAND, type UserStore } from "../store/store.ts";
import { onPrimary } from "./colour.ts";
import { logoExtension } from "./logo.ts";
import { type BrandFields, type BrandSettings, DEFAULT_BRAND_SETTINGS } from "./settings.ts";

/** How long an instance shows a brand it read before reading it again. */
export const REREAD_MS = 5000;
/** Clients' brands kept at once; beyond it the oldest half is forgotten. */
const MAX_CLIENTS = 1000;

export const BRAND_FIELDS = ["productName", "primaryColor", "supportEmail", "termsUrl", "privacyUrl"] as const;
export type BrandField = (typeof BRAND_FIELDS)[number];

/** The brand a page or mail shows. */
export interface Brand extends BrandFields {
  /** Where each field comes from. */
  sources: Record<BrandField, "setting" | "api">;
  /** The logo's path (/branding/logo/<hash>.<ext>), or null. */
  logoPath: string | null;
  /** The stylesheet of the colours, versioned by them. */
  stylesheetPath: string;
  /** The client whose brand this is, when an application's brand shows (its name, colour, logo). */
  client?: { id: string; name: string };
}

export const logoPath = (record: BrandRecord | undefined) =>
  record?.logo ? `/branding/logo/${record.logo.hash}.${logoExtension(record.logo.type)}` : null;

/** The version of the stylesheet for a colour: changes with it. */
export const stylesheetVersion = (colour: string) => createHash("sha256").update(colour).digest("hex").slice(0, 12);

/** The stylesheet of a primary colour: custom properties that account.css uses. */
export function brandStylesheet(colour: string): string {
  return `:root {\n  --primary: ${colour};\n  --on-primary: ${onPrimary(colour)};\n}\n`;
}

export interface BrandBook {
  /** The service's brand. */
  service(): Promise<Brand>;
  /** The brand of a page shown for `clientId`'s request: its name, colour and logo over the service's. */
  forClient(clientId: string): Promise<Brand>;
  /** The service's record as stored (undefined: nothing set). */
  serviceRecord(): Promise<BrandRecord | undefined>;
  /** After this instance changed `owner`'s brand: read it again now. */
  forget(owner: string): void;
  /** The brand of the settings alone: what a page shows while the database cannot be read. */
  fromSettings(): Brand;
}

export function createBrandBook({
  store,
  clients,
  settings = DEFAULT_BRAND_SETTINGS,
  clock,
}: {
  store: UserStore;
  clients: ClientRegistry | undefined;
  settings: BrandSettings | undefined;
  clock: () => number;
}): BrandBook {
  const kept = new Map<string, { at: number; record: Promise<BrandRecord | undefined> }>();

  function record(owner: string): Promise<BrandRecord | undefined> {
    const now = clock();
    const entry = kept.get(owner);
    if (entry !== undefined && now - entry.at < REREAD_MS) return entry.record;
    if (kept.size >= MAX_CLIENTS) for (const key of [...kept.keys()].slice(0, MAX_CLIENTS / 2)) kept.delete(key);
    const read = store.findBrand(owner);
    const fresh = { at: now, record: read };
    // A failed read is not kept: the next page tries again.
    read.catch(() => {
      if (kept.get(owner) === fresh) kept.delete(owner);
    });
    kept.set(owner, fresh);
    return read;
  }

  // One Brand per stored record (the same object while it is kept): kept pages find their bytes by it.
  const effectiveOf = new WeakMap<BrandRecord, Brand>();
  let fromSettingsOnly: Brand | undefined;
  function effective(stored: BrandRecord | undefined): Brand {
    if (stored === undefined) {
      fromSettingsOnly ??= effectiveFrom(undefined);
      return fromSettingsOnly;
    }
    let brand = effectiveOf.get(stored);
    if (brand === undefined) {
      brand = effectiveFrom(stored);
      effectiveOf.set(stored, brand);
    }
    return brand;
  }

  function effectiveFrom(stored: BrandRecord | undefined): Brand {
    const fields = { ...settings.defaults };
    const sources = {} as Brand["sources"];
    for (const field of BRAND_FIELDS) {
      const value = stored?.[field] ?? null;
      sources[field] = value === null ? "setting" : "api";
      if (value !== null) fields[field] = value;
    }
    return {
      ...fields,
      sources,
      logoPath: logoPath(stored),
      stylesheetPath: `/branding/brand.css?v=${stylesheetVersion(fields.primaryColor)}`,
    };
  }

  return {
    async service() {
      return effective(await record(SERVICE_BRAND));
    },
    async serviceRecord() {
      return record(SERVICE_BRAND);
    },
    async forClient(clientId) {
      const service = effective(await record(SERVICE_BRAND));
      const client = await clients?.find(clientId);
      if (client === undefined) return service;
      const own = await record(client.id);
      const colour = client.brandColor ?? service.primaryColor;
      return {
        ...service,
        primaryColor: colour,
        logoPath: logoPath(own) ?? service.logoPath,
        stylesheetPath:
          client.brandColor === null
            ? service.stylesheetPath
            : `/branding/brand.css?v=${stylesheetVersion(colour)}&client=${encodeURIComponent(client.id)}`,
        client: { id: client.id, name: client.name },
      };
    },
    forget(owner) {
      kept.delete(owner);
    },
    fromSettings() {
      return effective(undefined);
    },
  };
}
