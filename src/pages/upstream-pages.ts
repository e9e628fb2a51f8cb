// The page an upstream sign-in ends on when it cannot go on: the provider
// down, slow or refusing, a reply that does not check out, a callback with no
// pending sign-in, a domain not allowed. Rendered on the server (no script),
// with a 4xx status, the reason in plain words and a way back to the sign-in
// page; never the provider's own error text.

import type { FastifyReply } from "fastify";
import { pageDocument, sendPage } from "./account-pages.ts";
import { type PageProblem, pageTranslator } from "./page-locale.ts";
import { SIGN_IN_PAGE_PATH } from "./security-pages.ts";

export function sendUpstreamErrorPage(reply: FastifyReply, status: number, problem: PageProblem): FastifyReply {
  const t = pageTranslator(reply.request);
  reply.code(status);
  return sendPage(
    reply,
    pageDocument(
      t,
      t.html("pages.upstream.title"),
      "",
      `<p class="error" role="alert" id="upstream-error">${t.html(problem.key, problem.values)}</p>
<p><a href="${SIGN_IN_PAGE_PATH}">${t.html("pages.upstream.back")}</a></p>`,
      "",
      SIGN_IN_PAGE_PATH,
    ),
  );
}
