// The brand on every hosted page (issue 37). pageDocument (pages/account-pages.ts)
// marks three places, the same for every page whatever its language: the
// head (the brand's stylesheet), the header (logo and name) and the footer
// (support address, terms, privacy). The pages are built once and kept, but
// the brand is the database's and may change while the process runs, and a
// page shown for an application's request wears that application's brand: so
// the branding capability fills the marks as each page is sent (sendPage calls
// the app's PAGE_BRAND decoration, set by install.ts),
// with the brand the request calls for, in the page's own language (its
// `<html lang>`). A page sent without the branding capability keeps the
// marks, which are HTML comments and show nothing.
import { brotliCompressSync, gzipSync } from "node:zlib";
import type { FastifyRequest } from "fastify";
import { matchLocale } from "../i18n/locales.ts";
import { type Translator, translator } from "../i18n/translate.ts";
import { escapeHtml } from "../platform/html.ts";
import type { Brand } from "./brand-book.ts";

export const HEAD_MARK = "<!--brand:head-->";
/** The app's decoration (set by install.ts) that fills a page's marks with the brand its request calls for. */
export const PAGE_BRAND = "fillPageBrand";
export type PageBrandFiller = (request: FastifyRequest, page: string) => Promise<string | PageBytes>;
export const HEADER_MARK = "<!--brand:header-->";
export const FOOTER_MARK = "<!--brand:footer-->";

/** The place of the brand's stylesheet, in the page's head. */
export const brandHead = () => HEAD_MARK;
/** The place of the brand's header (logo and name), first in the body. */
export const brandHeader = () => HEADER_MARK;
/** The place of the brand's footer (support, terms, privacy), after main. */
export const brandFooter = () => FOOTER_MARK;

/** The stylesheet link of a brand. */
export const headOf = (brand: Brand) => `<link rel="stylesheet" href="${escapeHtml(brand.stylesheetPath)}">`;

/** The header: the logo (beside the name, so it says nothing more: empty alt) and the name. */
export function headerOf(brand: Brand): string {
  const name = brand.client?.name ?? brand.productName;
  const logo =
    brand.logoPath === null ? "" : `<img class="brand-logo" src="${escapeHtml(brand.logoPath)}" alt="" height="40">`;
  return `<header class="brand">${logo}<span class="brand-name">${escapeHtml(name)}</span></header>`;
}

/**
 * The brand's part of the page's one footer (pageDocument's, beside the language link: one contentinfo
 * landmark): who provides the sign-in (on an application's page), and the support, terms and privacy links.
 */
export function footerOf(brand: Brand, t: Translator): string {
  const links: string[] = [];
  if (brand.supportEmail !== null)
    links.push(`<li><a href="mailto:${escapeHtml(brand.supportEmail)}">${t.html("branding.footer.support")}</a></li>`);
  if (brand.termsUrl !== null)
    links.push(`<li><a href="${escapeHtml(brand.termsUrl)}">${t.html("branding.footer.terms")}</a></li>`);
  if (brand.privacyUrl !== null)
    links.push(`<li><a href="${escapeHtml(brand.privacyUrl)}">${t.html("branding.footer.privacy")}</a></li>`);
  const provided =
    brand.client === undefined
      ? ""
      : `<p>${t.html("branding.footer.providedBy", { product: brand.productName })}</p>\n`;
  if (links.length === 0 && provided === "") return "";
  const nav =
    links.length === 0
      ? ""
      : `<nav aria-label="${t.html("branding.footer.label")}"><ul class="brand-links">${links.join("")}</ul></nav>\n`;
  return `${provided}${nav}`;
}

const LANG = /^<!doctype html>\s*<html lang="([^"]+)"/i;

/** What fills a page's three marks with `brand`, in the page's language. */
function partsFor(page: string, brand: Brand): [head: string, header: string, footer: string] {
  const locale = matchLocale(LANG.exec(page)?.[1] ?? "en") ?? "en";
  return [headOf(brand), headerOf(brand), footerOf(brand, translator(locale))];
}

function filled(page: string, [head, header, footer]: readonly [string, string, string]): string {
  return page
    .replace(HEAD_MARK, () => head)
    .replace(HEADER_MARK, () => header)
    .replace(FOOTER_MARK, () => footer);
}

/** The page with its marks filled with `brand`, in the page's language. */
export function fillBrand(page: string, brand: Brand): string {
  return filled(page, partsFor(page, brand));
}

/** A kept page's bytes as sent: as they are, and compressed once for the browsers that accept it. */
export interface PageBytes {
  readonly identity: Buffer;
  readonly br: Buffer;
  readonly gzip: Buffer;
}

/**
 * The bytes of a page that is the same for every reader of a language (perLocale's), filled with `brand`:
 * made once per brand and kept, with their Brotli and gzip forms, so that serving the sign-in page costs
 * a lookup, not three replacements, the UTF-8 encoding and the socket writes of its ten-odd kilobytes
 * (issue 37's benchmark: the page at no less than half GET /me's rate). At most a few brands per page are
 * kept (a client's own, the service's): past that the page's are forgotten and made again.
 */
export function brandedBytes(): (page: string, brand: Brand) => PageBytes {
  const byPage = new Map<string, Map<string, PageBytes>>();
  // The same Brand object (brand-book.ts keeps one per stored record) finds its bytes without the parts.
  const byBrand = new WeakMap<Brand, Map<string, PageBytes>>();
  return (page, brand) => {
    const known = byBrand.get(brand)?.get(page);
    if (known !== undefined) return known;
    const bytes = bytesFor(page, brand);
    let pages = byBrand.get(brand);
    if (pages === undefined) {
      pages = new Map();
      byBrand.set(brand, pages);
    }
    pages.set(page, bytes);
    return bytes;
  };

  function bytesFor(page: string, brand: Brand): PageBytes {
    const parts = partsFor(page, brand);
    const key = parts.join("\u0000");
    let byKey = byPage.get(page);
    if (byKey === undefined) {
      byKey = new Map();
      byPage.set(page, byKey);
    }
    let bytes = byKey.get(key);
    if (bytes === undefined) {
      if (byKey.size >= 16) byKey.clear();
      const identity = Buffer.from(filled(page, parts));
      bytes = { identity, br: brotliCompressSync(identity), gzip: gzipSync(identity, { level: 9 }) };
      byKey.set(key, bytes);
    }
    return bytes;
  }
}
