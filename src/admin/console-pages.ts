// The admin console's page and assets, served from memory: one HTML shell at
// /admin/ (also the OpenID Connect callback and the return address after
// sign-out) and the console's script modules and stylesheet at
// /admin/assets/. Plain ES modules read from src/admin/console/ (copied beside
// the bundle by scripts/build.ts), no build step, nothing inline and nothing
// from another host: the hosted pages' Content Security Policy applies as is.
import { readdirSync, readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { PAGES_CONTENT_SECURITY_POLICY, sendPage } from "../pages/account-pages.ts";
import { SECURITY_PAGE_PATH, SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import { escapeHtml } from "../platform/html.ts";
import { AUDIT_EVENT_TYPES } from "../store/store.ts";
import { WEBHOOK_EVENT_TYPES } from "../webhooks/events.ts";
import { CONSOLE_CLIENT_ID, CONSOLE_PATH } from "./console-client.ts";
import type { AdminConsoleSettings } from "./settings.ts";

const ASSETS_DIRECTORY = new URL("./console/", import.meta.url);
export const CONSOLE_ASSETS_PATH = "/admin/assets/";

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8" };

/** Every script and stylesheet of the console, by file name, read once. */
export function readConsoleAssets(): Map<string, { type: string; body: string }> {
  const assets = new Map<string, { type: string; body: string }>();
  for (const name of readdirSync(ASSETS_DIRECTORY)) {
    const type = TYPES[name.split(".").pop() ?? ""];
    if (type !== undefined) assets.set(name, { type, body: readFileSync(new URL(name, ASSETS_DIRECTORY), "utf8") });
  }
  return assets;
}

/**
 * The shell: the console's settings in a meta element (no inline script), and where its module starts.
 * The audit and webhook event types come from the service's own lists, so that the console's filters
 * and choices never fall behind a type a capability adds.
 */
function consoleDocument(settings: AdminConsoleSettings): string {
  const meta = {
    "client-id": CONSOLE_CLIENT_ID,
    "require-mfa": settings.requireMfa ? "on" : "off",
    "security-page": SECURITY_PAGE_PATH,
    "sign-in-page": SIGN_IN_PAGE_PATH,
    "audit-types": AUDIT_EVENT_TYPES.join(" "),
    "webhook-types": WEBHOOK_EVENT_TYPES.join(" "),
  };
  const data = Object.entries(meta)
    .map(([name, value]) => `data-${name}="${escapeHtml(value)}"`)
    .join(" ");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="admin-console" ${data}>
<title>Admin console</title>
<link rel="stylesheet" href="${CONSOLE_ASSETS_PATH}console.css">
<script type="module" src="${CONSOLE_ASSETS_PATH}console.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header id="top" class="top" hidden></header>
<main id="main" tabindex="-1">
<p id="status" role="status" aria-live="polite">Loading the admin console…</p>
<noscript><p class="error">The admin console needs JavaScript.</p></noscript>
</main>
</body>
</html>
`;
}

export async function registerConsolePages(app: FastifyInstance, settings: AdminConsoleSettings): Promise<void> {
  const page = consoleDocument(settings);
  const assets = readConsoleAssets();
  app.get("/admin", { schema: { hide: true } }, async function consoleRedirect(_request, reply) {
    return reply.redirect(CONSOLE_PATH, 308);
  });
  // Every path under /admin/ but the assets is the console's: its router reads the fragment.
  app.get(CONSOLE_PATH, { schema: { hide: true } }, async function consolePage(_request, reply) {
    return sendPage(reply, page, PAGES_CONTENT_SECURITY_POLICY);
  });
  app.get<{ Params: { name: string } }>(
    `${CONSOLE_ASSETS_PATH}:name`,
    { schema: { hide: true } },
    async function consoleAsset(request, reply) {
      const asset = assets.get(request.params.name);
      if (asset === undefined) return reply.code(404).send({ detail: "Not Found" });
      return reply.type(asset.type).header("cache-control", "no-cache").send(asset.body);
    },
  );
}
