// The page an upstream sign-in ends on when it cannot go on: the provider
// down, slow or refusing, a reply that does not check out, a callback with no
// pending sign-in, a domain not allowed. Rendered on the server (no script),
// with a 4xx status, the reason in plain words and a way back to the sign-in
// page; never the provider's own error text.

import type { FastifyReply } from "fastify";
import { translator } from "../i18n/translate.ts";
import { pageDocument, sendPage } from "./account-pages.ts";
import { escapeHtml } from "./oidc-pages.ts";
import { SIGN_IN_PAGE_PATH } from "./security-pages.ts";

export function sendUpstreamErrorPage(reply: FastifyReply, status: number, detail: string): FastifyReply {
  reply.code(status);
  return sendPage(
    reply,
    pageDocument(
      translator("en"),
      "Sign-in did not work",
      "",
      `<p class="error" role="alert" id="upstream-error">${escapeHtml(detail)}</p>
<p><a href="${SIGN_IN_PAGE_PATH}">Back to the sign-in page</a></p>`,
      "",
    ),
  );
}
