// The verbs of brands (branding.ts): one row per owner, written by an upsert
// (INSERT ... ON CONFLICT, the same in both databases), so that the first
// change of a brand creates its row and two instances writing at once leave
// one row.
import type { BrandLogo, BrandRecord, BrandVerbs } from "../branding.ts";
import type { Row, Shared } from "./shared.ts";

const EMPTY = [null, null, null, null, null] as const;

function readBrand(row: Row): BrandRecord {
  const logo: BrandLogo | null =
    row.logo === null || row.logo === undefined
      ? null
      : { data: row.logo as string, type: row.logo_type as string, hash: row.logo_hash as string };
  return {
    owner: row.owner as string,
    productName: (row.product_name as string | null) ?? null,
    primaryColor: (row.primary_color as string | null) ?? null,
    supportEmail: (row.support_email as string | null) ?? null,
    termsUrl: (row.terms_url as string | null) ?? null,
    privacyUrl: (row.privacy_url as string | null) ?? null,
    logo,
    updatedAt: new Date(row.updated_at as string).toISOString(),
  };
}

export function brandVerbs({ db }: Shared): BrandVerbs {
  return {
    async findBrand(owner) {
      const row = await db.one<Row>("SELECT * FROM brands WHERE owner = $1", [owner]);
      return row === undefined ? undefined : readBrand(row);
    },
    async saveBrandValues(owner, values, at) {
      const row = await db.one<Row>(
        `INSERT INTO brands (owner, product_name, primary_color, support_email, terms_url, privacy_url, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (owner) DO UPDATE SET product_name = $2, primary_color = $3, support_email = $4,
           terms_url = $5, privacy_url = $6, updated_at = $7
         RETURNING *`,
        [owner, values.productName, values.primaryColor, values.supportEmail, values.termsUrl, values.privacyUrl, at],
      );
      return readBrand(row as Row);
    },
    async saveBrandLogo(owner, logo, at) {
      const row = await db.one<Row>(
        `INSERT INTO brands (owner, product_name, primary_color, support_email, terms_url, privacy_url, logo, logo_type, logo_hash, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (owner) DO UPDATE SET logo = $7, logo_type = $8, logo_hash = $9, updated_at = $10
         RETURNING *`,
        [owner, ...EMPTY, logo?.data ?? null, logo?.type ?? null, logo?.hash ?? null, at],
      );
      return readBrand(row as Row);
    },
    async findBrandLogo(hash) {
      if (!/^[0-9a-f]{20}$/.test(hash)) return undefined;
      const row = await db.one<{ logo: string; logo_type: string }>(
        "SELECT logo, logo_type FROM brands WHERE logo_hash = $1",
        [hash],
      );
      return row === undefined ? undefined : { data: row.logo, type: row.logo_type };
    },
  };
}
