// The brand's settings (issue 37): what every page and mail shows when the
// admin API (/branding) has not set a field: the product's name, its primary
// colour (checked for WCAG AA contrast, colour.ts), a support address, links
// to the terms and the privacy notice; and what `GET /` answers (the front
// door page, or a redirect). Declared here; config.ts composes them.
import { ConfigError } from "../errors.ts";
import { type Env, section, setting } from "../settings/declare.ts";
import { primaryColourProblem } from "./colour.ts";

/** The name the pages and mails gave the service before branding (the mails' From: display). */
export const DEFAULT_PRODUCT_NAME = "User service";
/** The buttons' colour of src/pages/account.css before branding. */
export const DEFAULT_PRIMARY_COLOR = "#1d4ed8";

/** The brand's fields, each one set or not (null: no terms page, no support address). */
export interface BrandFields {
  productName: string;
  primaryColor: string;
  supportEmail: string | null;
  termsUrl: string | null;
  privacyUrl: string | null;
}

export interface BrandSettings {
  /** The brand when the admin API has set nothing. */
  defaults: BrandFields;
  /** FRONT_DOOR: `page`, or the absolute URL GET / redirects to. */
  frontDoor: "page" | { redirect: string };
}

export const DEFAULT_BRAND_SETTINGS: BrandSettings = {
  defaults: {
    productName: DEFAULT_PRODUCT_NAME,
    primaryColor: DEFAULT_PRIMARY_COLOR,
    supportEmail: null,
    termsUrl: null,
    privacyUrl: null,
  },
  frontDoor: "page",
};

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Why `raw` cannot be a link a page shows (https; http on a loopback host only); undefined when it can. */
export function linkProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `must be an absolute https URL, got "${raw}"`;
  }
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && LOOPBACK.test(url.hostname)) return undefined;
  return `must be an https URL (http only on a loopback host), got "${raw}"`;
}

/** Why `raw` cannot be a support address; undefined when it can (one plain address, no display name). */
export function emailProblem(raw: string): string | undefined {
  return /^[^\s@<>"(),;:\\]{1,64}@[^\s@<>"(),;:\\]+\.[^\s@<>"(),;:\\]+$/.test(raw) && raw.length <= 254
    ? undefined
    : `must be one e-mail address such as support@example.com, got "${raw}"`;
}

/** Why `raw` cannot be the product's name; undefined when it can. */
export function productNameProblem(raw: string): string | undefined {
  if (raw.length > 80) return "must be at most 80 characters";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f]/.test(raw)) return "must not contain control characters (line breaks included)";
  return undefined;
}

const checked = (problem: (raw: string) => string | undefined) => (raw: string, name: string) => {
  const why = problem(raw);
  if (why !== undefined) throw new ConfigError(name, why);
  return raw;
};

const BRAND_PRODUCT_NAME = setting<string>({
  name: "BRAND_PRODUCT_NAME",
  default: `\`${DEFAULT_PRODUCT_NAME}\``,
  fallback: DEFAULT_PRODUCT_NAME,
  meaning:
    "The product's name on every hosted page (header, title), on the front door and in the mails (their " +
    "sign-off, and the sender's display name when `MAIL_FROM` is unset). At most 80 characters. `PUT /branding` " +
    "overrides it. See [Languages and branding](../operating/languages-and-branding.md).",
  parse: checked(productNameProblem),
});

const BRAND_PRIMARY_COLOR = setting<string>({
  name: "BRAND_PRIMARY_COLOR",
  default: `\`${DEFAULT_PRIMARY_COLOR}\``,
  fallback: DEFAULT_PRIMARY_COLOR,
  meaning:
    "The pages' buttons and links, and the mails' button, as `#RRGGBB`. Refused unless white text on it and it " +
    "as link text on the page background (`#f5f5f4`) both reach WCAG AA contrast (4.5:1).",
  parse(raw, name) {
    const why = primaryColourProblem("the colour", raw);
    if (why !== undefined) throw new ConfigError(name, why.replace(/^the colour /, ""));
    return raw.toLowerCase();
  },
});

const BRAND_SUPPORT_EMAIL = setting<string>({
  name: "BRAND_SUPPORT_EMAIL",
  default: "none",
  meaning: "The address the pages' footer and the mails give for help. Unset: none shown.",
  parse: checked(emailProblem),
});

const BRAND_TERMS_URL = setting<string>({
  name: "BRAND_TERMS_URL",
  default: "none",
  meaning: "The terms of service the pages' footer links to: https (http only on a loopback host). Unset: no link.",
  parse: checked(linkProblem),
});

const BRAND_PRIVACY_URL = setting<string>({
  name: "BRAND_PRIVACY_URL",
  default: "none",
  meaning: "The privacy notice the pages' footer links to: https (http only on a loopback host). Unset: no link.",
  parse: checked(linkProblem),
});

const FRONT_DOOR = setting<BrandSettings["frontDoor"]>({
  name: "FRONT_DOOR",
  default: "`page`",
  fallback: "page",
  meaning:
    "What `GET /` answers: `page`, a small page in the reader's language with the product's name and logo and " +
    "links to sign in, the account's security page, the API docs and (when it is on) the admin console; or an " +
    "absolute https URL (http only on a loopback host) that `GET /` redirects to (302), such as the product's site.",
  parse(raw, name) {
    if (raw === "page") return "page";
    const why = linkProblem(raw);
    if (why !== undefined) throw new ConfigError(name, `must be page or ${why.replace(/^must be /, "")}`);
    return { redirect: raw };
  },
});

export const BRANDING_SETTINGS = section(
  "Branding",
  "src/branding/settings.ts",
  [BRAND_PRODUCT_NAME, BRAND_PRIMARY_COLOR, BRAND_SUPPORT_EMAIL, BRAND_TERMS_URL, BRAND_PRIVACY_URL, FRONT_DOOR],
  "The brand's defaults: each field holds until an admin sets it through the admin API (`PUT`/`PATCH " +
    "/branding`), which every instance reads from the database.",
);

export function readBrandSettings(env: Env): BrandSettings {
  return {
    defaults: {
      productName: BRAND_PRODUCT_NAME.read(env),
      primaryColor: BRAND_PRIMARY_COLOR.read(env),
      supportEmail: BRAND_SUPPORT_EMAIL.optional(env) ?? null,
      termsUrl: BRAND_TERMS_URL.optional(env) ?? null,
      privacyUrl: BRAND_PRIVACY_URL.optional(env) ?? null,
    },
    frontDoor: FRONT_DOOR.read(env),
  };
}
