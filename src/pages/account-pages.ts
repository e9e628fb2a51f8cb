// The two pages the links in mails open: choose a new password, and address
// verified. Server-rendered, tiny, and self-contained: one script and one
// stylesheet served from here, no external asset, and a stricter policy than
// the docs page (nothing inline at all). The token stays in the fragment,
// which browsers never send to a server; the script reads it, removes it
// from the address bar, and posts it in a JSON body to the API.
import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyReply } from "fastify";
import {
  brandFooter,
  brandHead,
  brandHeader,
  HEAD_MARK,
  PAGE_BRAND,
  type PageBrandFiller,
} from "../branding/page-parts.ts";
import { LOCALE_NAMES } from "../i18n/locales.ts";
import type { Translator } from "../i18n/translate.ts";
import { RESET_PAGE_PATH, VERIFY_PAGE_PATH } from "../mail/messages.ts";
import { escapeHtml } from "../platform/html.ts";
import { sendKeptBytes } from "./one-write.ts";
import { messagesBlock, pageTranslator, perLocale } from "./page-locale.ts";

export const PAGES_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "base-uri 'none'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
].join("; ");

const script = readFileSync(new URL("./account.js", import.meta.url), "utf8");
const stylesheet = readFileSync(new URL("./account.css", import.meta.url), "utf8");

/**
 * A page of the service in the reader's language (`t`, issue 37: its `lang` and `dir`): its title (also
 * the heading), the pages' stylesheet, one script tag (the pages' scripts are files served from here),
 * the body, and what to say without JavaScript. Title, body and noscript come already escaped. Its footer
 * links to the language page (/language), which comes back to `back` (a path of this service; the pages'
 * shared script, session.js, points it at the very address the reader is on). The brand's stylesheet,
 * header and footer are marked here and filled as the page is sent (branding/page-parts.ts).
 */
export function pageDocument(
  t: Translator,
  title: string,
  scriptTag: string,
  body: string,
  noscript: string,
  back?: string,
): string {
  const language = back === undefined ? "/language" : `/language?${new URLSearchParams({ continue: back })}`;
  return `<!doctype html>
<html lang="${t.locale}" dir="${t.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="stylesheet" href="/pages/account.css">
${brandHead()}
${scriptTag}
</head>
<body>
${brandHeader()}
<main>
<h1>${title}</h1>
${body}
<noscript><p class="error">${noscript}</p></noscript>
</main>
<footer class="brand">
${brandFooter()}<p><a id="language-link" href="${escapeHtml(language)}">${t.html("pages.footer.language", { name: LOCALE_NAMES[t.locale] })}</a></p>
</footer>
</body>
</html>
`;
}

const page = (t: Translator, title: string, body: string, back: string) =>
  pageDocument(
    t,
    title,
    `${messagesBlock(t, ["pages.accountJs.", "pages.sharedJs."])}\n<script type="module" src="/pages/account.js"></script>`,
    body,
    t.html("pages.account.noscript"),
    back,
  );

const RESET_PAGE = perLocale((t) =>
  page(
    t,
    t.html("pages.reset.title"),
    `<form id="reset-form" hidden>
<label for="new-password">${t.html("pages.reset.newPassword")}</label>
<input id="new-password" name="new_password" type="password" autocomplete="new-password" required minlength="8" maxlength="256" aria-describedby="password-hint">
<p id="password-hint" class="hint">${t.html("pages.reset.hint")}</p>
<label for="repeat-password">${t.html("pages.reset.repeat")}</label>
<input id="repeat-password" name="repeat_password" type="password" autocomplete="new-password" required minlength="8" maxlength="256">
<button type="submit">${t.html("pages.reset.submit")}</button>
</form>
<p id="status" role="status" aria-live="polite"></p>`,
    RESET_PAGE_PATH,
  ),
);

const VERIFY_PAGE = perLocale((t) =>
  page(
    t,
    t.html("pages.verify.title"),
    `<p id="status" role="status" aria-live="polite">${t.html("pages.verify.checking")}</p>
<div id="verify-page"></div>`,
    VERIFY_PAGE_PATH,
  ),
);

/** A page, with its policy: no caching, no referrer; its brand marks filled (branding/page-parts.ts). */
export function sendPage(
  reply: FastifyReply,
  body: string,
  policy: string = PAGES_CONTENT_SECURITY_POLICY,
): FastifyReply {
  reply
    .header("content-security-policy", policy)
    .header("referrer-policy", "no-referrer")
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8");
  const fill = (reply.server as unknown as Record<string, PageBrandFiller | undefined>)[PAGE_BRAND];
  if (fill === undefined || !body.includes(HEAD_MARK)) return reply.send(body);
  // The brand is the database's (cached): the page goes out once it is filled; the handler returns the reply.
  fill(reply.request, body).then(
    (page) => {
      if (typeof page === "string") return reply.send(page);
      const encoding = acceptedEncoding(reply.request.headers["accept-encoding"]);
      reply.header("vary", "accept-encoding");
      if (encoding === "identity") return sendKeptBytes(reply, page.identity);
      return sendKeptBytes(reply.header("content-encoding", encoding), page[encoding]);
    },
    (error: Error) => reply.send(error),
  ); // never a hanging request: the error handler answers
  return reply;
}

/** The best of Brotli, gzip or none that an Accept-Encoding header allows (RFC 9110 section 12.5.3). */
export function acceptedEncoding(header: string | string[] | undefined): "br" | "gzip" | "identity" {
  if (typeof header !== "string" || header.length > 512) return "identity";
  let gzip = false;
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.split(";");
    const coding = name.trim().toLowerCase();
    if (coding !== "br" && coding !== "gzip") continue;
    const q = params.map((param) => param.trim().toLowerCase()).find((param) => param.startsWith("q="));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (coding === "br") return "br";
    gzip = true;
  }
  return gzip ? "gzip" : "identity";
}

export async function registerAccountPages(app: FastifyInstance): Promise<void> {
  app.get(RESET_PAGE_PATH, { schema: { hide: true } }, async function resetPasswordPage(request, reply) {
    return sendPage(reply, RESET_PAGE(pageTranslator(request)));
  });
  app.get(VERIFY_PAGE_PATH, { schema: { hide: true } }, async function verifyEmailPage(request, reply) {
    return sendPage(reply, VERIFY_PAGE(pageTranslator(request)));
  });
  app.get("/pages/account.js", { schema: { hide: true } }, async function accountScript(_request, reply) {
    return reply.type("text/javascript; charset=utf-8").header("cache-control", "no-cache").send(script);
  });
  app.get("/pages/account.css", { schema: { hide: true } }, async function accountStylesheet(_request, reply) {
    return reply.type("text/css; charset=utf-8").header("cache-control", "no-cache").send(stylesheet);
  });
}
