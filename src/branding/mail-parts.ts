// The brand in every mail (issue 37), applied to a mail as it goes out (the
// mail sender calls brandMail on each rendered message), whatever its words
// and language: the sender's display name is the product's name when
// MAIL_FROM is left to its default, and both parts end with the product's
// name as a sign-off (both only once the product is named: a service that
// keeps the default name sends the mails it always sent); the HTML part's
// links take the primary colour (readable on white: the contrast check holds
// for it); the logo heads the HTML part as an absolute URL under PUBLIC_URL
// (the mail is read elsewhere; ACCOUNT_LINK_BASE_URL may be another app's,
// and without PUBLIC_URL the service's public address is not known: then no
// logo).
import type { RenderedMail } from "../mail/transport.ts";
import { escapeHtml } from "../platform/html.ts";
import type { Brand } from "./brand-book.ts";
import { DEFAULT_PRODUCT_NAME } from "./settings.ts";

/** RFC 5322's quoted display name. */
const quotedName = (name: string) => `"${name.replace(/["\\]/g, "\\$&")}"`;

export interface MailBrandOptions {
  /** MAIL_FROM as the sender uses it; its default display name (DEFAULT_PRODUCT_NAME) becomes the product's. */
  defaultFrom: boolean;
  /** PUBLIC_URL: the base of the logo's absolute URL; undefined: no logo in mails. */
  publicUrl: string | undefined;
}

export function brandMail(mail: RenderedMail, brand: Brand, options: MailBrandOptions): RenderedMail {
  const name = brand.productName;
  // The service's name before branding stays unsaid, as the mails always were; a product's name is said.
  const named = name !== DEFAULT_PRODUCT_NAME;
  const from =
    named && options.defaultFrom && mail.from.startsWith(`${DEFAULT_PRODUCT_NAME} <`)
      ? `${quotedName(name)} ${mail.from.slice(DEFAULT_PRODUCT_NAME.length + 1)}`
      : mail.from;
  const logo =
    brand.logoPath !== null && options.publicUrl !== undefined
      ? `<p><img src="${escapeHtml(`${options.publicUrl}${brand.logoPath}`)}" alt="${escapeHtml(name)}" height="40"></p>`
      : "";
  const signOff = named ? `<p>— ${escapeHtml(name)}</p>` : "";
  // The link's text in the colour (a span inside the link: mail clients keep inline styles, and the
  // link's own markup stays as the mail wrote it).
  const html = mail.html
    .replace(
      /(<a href="[^"]*">)([^<]*)(<\/a>)/g,
      (_, open: string, label: string, close: string) =>
        `${open}<span style="color:${brand.primaryColor}">${label}</span>${close}`,
    )
    .replace(/(<body[^>]*>)/, (body) => `${body}${logo}`)
    .replace(/<\/body>/, () => `${signOff}</body>`);
  return { ...mail, from, html, text: named ? `${mail.text}\n— ${name}\n` : mail.text };
}
