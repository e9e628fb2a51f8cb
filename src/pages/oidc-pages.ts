// The pages of the OpenID Connect flow, rendered on the server because each
// is a form the browser posts (no script at all): the consent page (the
// client's name and the scopes it asks for), the sign-out confirmation, the
// signed-out page, and the error page for a request whose client or redirect
// URI cannot be trusted. Every value from a request or a client's metadata is
// HTML-escaped. The consent form's answer is a redirect to the client, so that
// page's policy allows the form to lead there (form-action covers redirects).

import type { FastifyReply } from "fastify";
import { translator } from "../i18n/translate.ts";
import { PAGES_CONTENT_SECURITY_POLICY, pageDocument, sendPage } from "./account-pages.ts";

const SCOPE_WORDS: Record<string, string> = {
  openid: "Know who you are (your account's id)",
  profile: "See your name",
  email: "See your e-mail address and whether it is verified",
  offline_access: "Stay signed in while you are away",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

const page = (title: string, body: string) => pageDocument(translator("en"), title, "", body, "");

export function sendErrorPage(reply: FastifyReply, detail: string): FastifyReply {
  reply.code(400);
  return sendPage(
    reply,
    page(
      "This sign-in request cannot be used",
      `<p class="error" role="alert">${escapeHtml(detail)}</p>
<p>Go back to the application and try again. If this keeps happening, tell the application's owner.</p>`,
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
  },
): FastifyReply {
  const items = options.scopes.map((scope) => `<li>${escapeHtml(SCOPE_WORDS[scope] ?? scope)}</li>`).join("\n");
  const body = `<p><strong id="client-name">${escapeHtml(options.clientName)}</strong> wants to use your account
<strong>${escapeHtml(options.email)}</strong> to:</p>
<ul id="scopes">
${items}
</ul>
<form method="post" action="${escapeHtml(options.action)}">
<input type="hidden" name="request" value="${escapeHtml(options.request)}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<div class="actions">
<button type="submit" name="decision" value="allow" id="allow">Allow</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
</div>
</form>
<p class="hint">You can take this back at any time on your account's security page.</p>`;
  const policy = PAGES_CONTENT_SECURITY_POLICY.replace(
    "form-action 'self'",
    `form-action 'self' ${options.redirectOrigin}`,
  );
  return sendPage(reply, page("Allow access?", body), policy);
}

export function sendSignOutPage(
  reply: FastifyReply,
  options: { action: string; fields: Record<string, string>; redirectOrigin: string | undefined },
): FastifyReply {
  const hidden = Object.entries(options.fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("\n");
  const body = `<p>Do you want to sign out of this service?</p>
<form method="post" action="${escapeHtml(options.action)}">
${hidden}
<button type="submit" id="sign-out">Sign out</button>
</form>`;
  const policy =
    options.redirectOrigin === undefined
      ? PAGES_CONTENT_SECURITY_POLICY
      : PAGES_CONTENT_SECURITY_POLICY.replace("form-action 'self'", `form-action 'self' ${options.redirectOrigin}`);
  return sendPage(reply, page("Sign out", body), policy);
}

export function sendSignedOutPage(reply: FastifyReply): FastifyReply {
  return sendPage(reply, page("You are signed out", '<p id="status" class="success">You are signed out.</p>'));
}
