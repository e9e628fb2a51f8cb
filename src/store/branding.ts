// Brands (issue 37): the service's brand (owner `service`) and each OAuth
// client's (owner: the client's id), one row each in `brands`. A field left
// null falls back: the service's to its setting (BRAND_*), a client's to the
// service's brand. The logo is kept in the row (base64 text, so that one
// column type serves both databases), with its media type and the prefix of
// its SHA-256 that names it in its URL; a new logo is a new name, and the old
// name finds nothing. A client's row goes with the client (removeClient).

/** The owner of the service's own brand. */
export const SERVICE_BRAND = "service";

/** A logo as stored. */
export interface BrandLogo {
  /** The image's bytes, base64. */
  data: string;
  /** image/png, image/jpeg, image/webp or image/gif. */
  type: string;
  /** The first 20 hex digits of the image's SHA-256: its name in its URL. */
  hash: string;
}

/** What an admin set; null: not set (the fallback holds). */
export interface BrandValues {
  productName: string | null;
  primaryColor: string | null;
  supportEmail: string | null;
  termsUrl: string | null;
  privacyUrl: string | null;
}

export interface BrandRecord extends BrandValues {
  owner: string;
  logo: BrandLogo | null;
  updatedAt: string;
}

export interface BrandVerbs {
  /** The brand of `owner` (SERVICE_BRAND or a client's id), if anything was ever set. */
  findBrand(owner: string): Promise<BrandRecord | undefined>;
  /** Replaces the values of `owner`'s brand (its logo stays); answers the brand as stored. */
  saveBrandValues(owner: string, values: BrandValues, at: string): Promise<BrandRecord>;
  /** Sets (or, with null, removes) `owner`'s logo (its values stay); answers the brand as stored. */
  saveBrandLogo(owner: string, logo: BrandLogo | null, at: string): Promise<BrandRecord>;
  /** The logo whose name is `hash`, whoever's it is; undefined for an old or unknown name. */
  findBrandLogo(hash: string): Promise<Pick<BrandLogo, "data" | "type"> | undefined>;
}
