// The /device page's states, rendered on the server as forms the browser
// posts (no script at all, like the consent page): enter the code; confirm
// that the code on the device's screen is this one, with the app's name and
// the scopes, then Approve or Deny (the phishing guard of RFC 8628 section
// 5.4: a person lured into typing someone else's code sees whose app asks);
// done ("you may close this window"); and the refusals. Every value from a
// request or a client's metadata is HTML-escaped; the pages' policy (nothing
// inline, forms to this origin only) applies.

import type { FastifyReply } from "fastify";
import { translator } from "../i18n/translate.ts";
import { pageDocument, sendPage } from "../pages/account-pages.ts";
import { escapeHtml } from "../pages/oidc-pages.ts";
import { SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import { DEVICE_DECISION_PATH, DEVICE_PAGE_PATH } from "./paths.ts";

const SCOPE_WORDS: Record<string, string> = {
  openid: "Know who you are (your account's id)",
  profile: "See your name",
  email: "See your e-mail address and whether it is verified",
  offline_access: "Stay signed in while you are away",
};

const page = (title: string, body: string) => pageDocument(translator("en"), title, "", body, "");

export function sendCodeEntryPage(
  reply: FastifyReply,
  options: { email: string; formToken: string; userCode: string; problem?: string },
): FastifyReply {
  const problem =
    options.problem === undefined
      ? ""
      : `<p class="error" role="alert" id="problem">${escapeHtml(options.problem)}</p>\n`;
  const body = `${problem}<p>Signed in as <strong>${escapeHtml(options.email)}</strong>. Enter the code your device shows.</p>
<form method="post" action="${DEVICE_PAGE_PATH}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<label for="user-code">Code</label>
<input id="user-code" name="user_code" value="${escapeHtml(options.userCode)}" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="64" aria-describedby="user-code-hint">
<p id="user-code-hint" class="hint">Eight letters, for example WDJB-MJHT. Upper or lower case, with or without the dash.</p>
<button type="submit" id="continue">Continue</button>
</form>
<p class="hint"><a href="${SIGN_IN_PAGE_PATH}?${new URLSearchParams({ continue: DEVICE_PAGE_PATH })}">Use another account</a></p>`;
  return sendPage(reply, page("Connect a device", body));
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
  const items = options.scopes.map((scope) => `<li>${escapeHtml(SCOPE_WORDS[scope] ?? scope)}</li>`).join("\n");
  const body = `<p><strong id="client-name">${escapeHtml(options.clientName)}</strong> on a device wants to use your account
<strong>${escapeHtml(options.email)}</strong>${options.scopes.length > 0 ? " to:" : "."}</p>
${options.scopes.length > 0 ? `<ul id="scopes">\n${items}\n</ul>` : ""}
<p>Check that your device shows this code: <strong id="display-code" class="secret">${escapeHtml(options.displayCode)}</strong></p>
<p class="hint">If it does not, or you did not start this on a device of your own, choose Deny: someone may be trying to get into your account.</p>
<form method="post" action="${DEVICE_DECISION_PATH}">
<input type="hidden" name="user_code" value="${escapeHtml(options.userCode)}">
<input type="hidden" name="form_token" value="${escapeHtml(options.formToken)}">
<div class="actions">
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
</div>
</form>`;
  return sendPage(reply, page("Connect this device?", body));
}

export function sendDonePage(reply: FastifyReply, approved: boolean): FastifyReply {
  const said = approved ? "Your device is connected." : "You denied the request; the device gets no access.";
  return sendPage(
    reply,
    page(
      approved ? "Device connected" : "Request denied",
      `<p id="status" class="success" role="status">${said} You may close this window.</p>`,
    ),
  );
}

/** A refusal of the page (an expired form, a code decided meanwhile, too many wrong codes). */
export function sendDeviceErrorPage(reply: FastifyReply, status: number, detail: string): FastifyReply {
  reply.code(status);
  return sendPage(
    reply,
    page(
      "This code cannot be used",
      `<p class="error" role="alert" id="problem">${escapeHtml(detail)}</p>
<p><a href="${DEVICE_PAGE_PATH}">Enter a code again</a></p>`,
    ),
  );
}
