// The pages of the OpenID Connect flow, rendered on the server because each
// is a form the browser posts (no script at all): the consent page (the
// client's name and the scopes it asks for), the sign-out confirmation, the
// signed-out page, and the error page for a request whose client or redirect
// URI cannot be trusted. Every value from a request or a client's metadata is
// HTML-escaped. The consent form's answer is a redirect to the client, so that
// page's policy allows the form to lead there (form-action covers redirects).

import type { FastifyReply } from "fastify";
import type { Translator } from "../i18n/translate.ts";
import { escapeHtml } from "../platform/html.ts";
import { PAGES_CONTENT_SECURITY_POLICY, pageDocument, sendPage } from "./account-pages.ts";
import { type PageProblem, pageTranslator, richHtml, scopeWords } from "./page-locale.ts";

const page = (t: Translator, title: string, body: string, back: string | undefined) =>
  pageDocument(t, title, "", body, "", back);

export function sendErrorPage(reply: FastifyReply, problem: PageProblem, uiLocales?: string): FastifyReply {
  const t = pageTranslator(reply.request, uiLocales);
  reply.code(400);
  return sendPage(
    reply,
    page(
      t,
      t.html("pages.oidcError.title"),
      `<p class="error" role="alert">${t.html(problem.key, problem.values)}</p>
<p>${t.html("pages.oidcError.advice")}</p>`,
      undefined,
    ),
  );
}

export function sendConsentPage(
  reply: FastifyReply,
  options: {
    clientName: string;
    scopes: readonly string[];
    email: string;
    request: string;
    formToken: string;
    action: string;
    redirectOrigin: string;
    /** The authorization request's `ui_locales`. */
    uiLocales?: string | undefined;
    /** The request to come back to from the language page (a pushed one as sealed: its request_uri is spent). */
    back?: string | undefined;
  },
): FastifyReply {
  const t = pageTranslator(reply.request, options.uiLocales);
  const items = options.scopes.map((scope) => `<li>${scopeWords(t, scope)}</li>`).join("\n");
  const asks = richHtml(t, "pages.consent.asks", {
    client: `<strong id="client-name">${escapeHtml(options.clientName)}</strong>`,
    email: `<strong>${escapeHtml(options.email)}</strong>`,
  });
  const body = `<p>${asks}</p>
<ul id="scopes">
${items}
</ul>
<form method="post" action="${escapeHtml(options.action)}">
<input type="hidden" name="request" value="${escapeHtml(options.request)}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<div class="actions">
<button type="submit" name="decision" value="allow" id="allow">${t.html("pages.consent.allow")}</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">${t.html("pages.consent.deny")}</button>
</div>
</form>
<p class="hint">${t.html("pages.consent.takeBack")}</p>`;
  const policy = PAGES_CONTENT_SECURITY_POLICY.replace(
    "form-action 'self'",
    `form-action 'self' ${options.redirectOrigin}`,
  );
  return sendPage(reply, page(t, t.html("pages.consent.title"), body, options.back), policy);
}

export function sendSignOutPage(
  reply: FastifyReply,
  options: { action: string; fields: Record<string, string>; redirectOrigin: string | undefined },
): FastifyReply {
  const t = pageTranslator(reply.request);
  const hidden = Object.entries(options.fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("\n");
  const body = `<p>${t.html("pages.signOut.question")}</p>
<form method="post" action="${escapeHtml(options.action)}">
${hidden}
<button type="submit" id="sign-out">${t.html("pages.signOut.button")}</button>
</form>`;
  const policy =
    options.redirectOrigin === undefined
      ? PAGES_CONTENT_SECURITY_POLICY
      : PAGES_CONTENT_SECURITY_POLICY.replace("form-action 'self'", `form-action 'self' ${options.redirectOrigin}`);
  return sendPage(reply, page(t, t.html("pages.signOut.title"), body, undefined), policy);
}

export function sendSignedOutPage(reply: FastifyReply): FastifyReply {
  const t = pageTranslator(reply.request);
  return sendPage(
    reply,
    page(
      t,
      t.html("pages.signedOut.title"),
      `<p id="status" class="success">${t.html("pages.signedOut.text")}</p>`,
      undefined,
    ),
  );
}
