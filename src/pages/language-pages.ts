// The language page (issue 37): every language by its own name, a form that
// posts the choice, which is kept in the `lang` cookie of this browser (a
// year) and leads back to the page the reader came from: a path of this
// service only (starting with one "/"), else the sign-in page. No script.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isLocale, LOCALE_NAMES, LOCALES } from "../i18n/locales.ts";
import { LANGUAGE_COOKIE } from "../i18n/request-locale.ts";
import type { Translator } from "../i18n/translate.ts";
import { acceptFormBodies } from "../platform/forms.ts";
import { escapeHtml } from "../platform/html.ts";
import { pageDocument, sendPage } from "./account-pages.ts";
import { pageTranslator } from "./page-locale.ts";
import { SIGN_IN_PAGE_PATH } from "./security-pages.ts";

export const LANGUAGE_PAGE_PATH = "/language";
const ONE_YEAR_SECONDS = 365 * 24 * 60 * 60;

/** `continue` when it is a path of this service (not `//host`, not `/\host`, no control characters), else the sign-in page. */
export function safeContinue(value: unknown): string {
  if (typeof value !== "string" || value.length > 4096) return SIGN_IN_PAGE_PATH;
  if (!value.startsWith("/") || value.startsWith("//") || value.startsWith("/\\")) return SIGN_IN_PAGE_PATH;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return SIGN_IN_PAGE_PATH;
  return value;
}

function languagePage(t: Translator, back: string, problem?: string): string {
  const options = LOCALES.map(
    (locale) =>
      `<li><label class="choice" lang="${locale}"><input type="radio" name="locale" value="${locale}"${locale === t.locale ? " checked" : ""}> ${escapeHtml(LOCALE_NAMES[locale])}</label></li>`,
  ).join("\n");
  const error = problem === undefined ? "" : `<p class="error" role="alert" id="problem">${problem}</p>\n`;
  const body = `${error}<form method="post" action="${LANGUAGE_PAGE_PATH}">
<fieldset>
<legend>${t.html("pages.language.legend")}</legend>
<ul class="choices">
${options}
</ul>
</fieldset>
<input type="hidden" name="continue" value="${escapeHtml(back)}">
<button type="submit" id="choose">${t.html("pages.language.submit")}</button>
</form>
<p class="hint"><a href="${escapeHtml(back)}">${t.html("pages.language.back")}</a></p>`;
  return pageDocument(t, t.html("pages.language.title"), "", body, "");
}

function field(request: FastifyRequest, name: string): unknown {
  return (request.body as Record<string, unknown> | undefined)?.[name];
}

export async function registerLanguagePages(app: FastifyInstance): Promise<void> {
  app.get(LANGUAGE_PAGE_PATH, { schema: { hide: true } }, async function languageChoice(request, reply) {
    const back = safeContinue((request.query as Record<string, unknown>).continue);
    return sendPage(reply, languagePage(pageTranslator(request), back));
  });
  await app.register(async function languageForm(scope) {
    acceptFormBodies(scope);
    scope.post(LANGUAGE_PAGE_PATH, { schema: { hide: true } }, async function chooseLanguage(request, reply) {
      const back = safeContinue(field(request, "continue"));
      const locale = field(request, "locale");
      if (!isLocale(locale)) {
        const t = pageTranslator(request);
        reply.code(400);
        return sendPage(reply, languagePage(t, back, t.html("pages.language.unknown")));
      }
      const secure = request.protocol === "https" ? "; Secure" : "";
      return redirect(
        reply.header(
          "set-cookie",
          `${LANGUAGE_COOKIE}=${locale}; Path=/; Max-Age=${ONE_YEAR_SECONDS}; SameSite=Lax${secure}`,
        ),
        back,
      );
    });
  });
}

function redirect(reply: FastifyReply, to: string): FastifyReply {
  return reply.header("cache-control", "no-store").redirect(to, 303);
}
