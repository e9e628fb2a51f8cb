// The /device page's states, rendered on the server as forms the browser
// posts (no script at all, like the consent page): enter the code; confirm
// that the code on the device's screen is this one, with the app's name and
// the scopes, then Approve or Deny (the phishing guard of RFC 8628 section
// 5.4: a person lured into typing someone else's code sees whose app asks);
// done ("you may close this window"); and the refusals. Every value from a
// request or a client's metadata is HTML-escaped; the pages' policy (nothing
// inline, forms to this origin only) applies.

import type { FastifyReply } from "fastify";
import type { Translator } from "../i18n/translate.ts";
import { pageDocument, sendPage } from "../pages/account-pages.ts";
import { type PageProblem, pageTranslator, richHtml, scopeWords } from "../pages/page-locale.ts";
import { SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import { escapeHtml } from "../platform/html.ts";
import { DEVICE_DECISION_PATH, DEVICE_PAGE_PATH } from "./paths.ts";

/** Every device page's language link comes back to the code entry (never to a posted form's answer). */
const page = (t: Translator, title: string, body: string) => pageDocument(t, title, "", body, "", DEVICE_PAGE_PATH);

export function sendCodeEntryPage(
  reply: FastifyReply,
  options: { email: string; formToken: string; userCode: string; problem?: PageProblem },
): FastifyReply {
  const t = pageTranslator(reply.request);
  const problem =
    options.problem === undefined
      ? ""
      : `<p class="error" role="alert" id="problem">${t.html(options.problem.key, options.problem.values)}</p>\n`;
  const signedIn = richHtml(t, "pages.device.signedInAs", { email: `<strong>${escapeHtml(options.email)}</strong>` });
  const body = `${problem}<p>${signedIn} ${t.html("pages.device.enterCode")}</p>
<form method="post" action="${DEVICE_PAGE_PATH}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<label for="user-code">${t.html("pages.device.codeLabel")}</label>
<input id="user-code" name="user_code" value="${escapeHtml(options.userCode)}" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="64" aria-describedby="user-code-hint">
<p id="user-code-hint" class="hint">${t.html("pages.device.codeHint", { example: "WDJB-MJHT" })}</p>
<button type="submit" id="continue">${t.html("pages.device.continue")}</button>
</form>
<p class="hint"><a href="${SIGN_IN_PAGE_PATH}?${new URLSearchParams({ continue: DEVICE_PAGE_PATH })}">${t.html("pages.device.otherAccount")}</a></p>`;
  return sendPage(reply, page(t, t.html("pages.device.entryTitle"), body));
}

export function sendConfirmPage(
  reply: FastifyReply,
  options: {
    clientName: string;
    scopes: readonly string[];
    email: string;
    displayCode: string;
    userCode: string;
    formToken: string;
  },
): FastifyReply {
  const t = pageTranslator(reply.request);
  const items = options.scopes.map((scope) => `<li>${scopeWords(t, scope)}</li>`).join("\n");
  const asks = richHtml(t, options.scopes.length > 0 ? "pages.device.asksTo" : "pages.device.asks", {
    client: `<strong id="client-name">${escapeHtml(options.clientName)}</strong>`,
    email: `<strong>${escapeHtml(options.email)}</strong>`,
  });
  const check = richHtml(t, "pages.device.checkCode", {
    code: `<strong id="display-code" class="secret">${escapeHtml(options.displayCode)}</strong>`,
  });
  const body = `<p>${asks}</p>
${options.scopes.length > 0 ? `<ul id="scopes">\n${items}\n</ul>` : ""}
<p>${check}</p>
<p class="hint">${t.html("pages.device.phishingHint")}</p>
<form method="post" action="${DEVICE_DECISION_PATH}">
<input type="hidden" name="user_code" value="${escapeHtml(options.userCode)}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<div class="actions">
<button type="submit" name="decision" value="approve" id="approve">${t.html("pages.device.approve")}</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">${t.html("pages.device.deny")}</button>
</div>
</form>`;
  return sendPage(reply, page(t, t.html("pages.device.confirmTitle"), body));
}

export function sendDonePage(reply: FastifyReply, approved: boolean): FastifyReply {
  const t = pageTranslator(reply.request);
  return sendPage(
    reply,
    page(
      t,
      t.html(approved ? "pages.device.approvedTitle" : "pages.device.deniedTitle"),
      `<p id="status" class="success" role="status">${t.html(approved ? "pages.device.approvedText" : "pages.device.deniedText")}</p>`,
    ),
  );
}

/** A refusal of the page (an expired form, a code decided meanwhile, too many wrong codes). */
export function sendDeviceErrorPage(reply: FastifyReply, status: number, problem: PageProblem): FastifyReply {
  const t = pageTranslator(reply.request);
  reply.code(status);
  return sendPage(
    reply,
    page(
      t,
      t.html("pages.device.errorTitle"),
      `<p class="error" role="alert" id="problem">${t.html(problem.key, problem.values)}</p>
<p><a href="${DEVICE_PAGE_PATH}">${t.html("pages.device.again")}</a></p>`,
    ),
  );
}
