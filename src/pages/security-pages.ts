// The sign-in page (/sign-in) and the security page (/account/security): the
// pages the WebAuthn ceremonies need in the service's own origin, built like
// the reset and verification pages (account-pages.ts): static HTML, plain
// script modules and one stylesheet served from here, nothing inline, nothing
// from elsewhere. The security page's policy also allows data: images, for the
// authenticator app's QR code, which the API sends as a data: URL.

import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { DeviceCookie } from "../auth/devices.ts";
import { LOCALE_NAMES, LOCALES } from "../i18n/locales.ts";
import type { Translator } from "../i18n/translate.ts";
import { REVIEW_PAGE_PATH } from "../mail/notices.ts";
import { mailSignInSection } from "../passwordless/page-section.ts";
import { escapeHtml } from "../platform/html.ts";
import { PAGES_CONTENT_SECURITY_POLICY, pageDocument, sendPage } from "./account-pages.ts";
import { messagesBlock, pageTranslator, perLocale } from "./page-locale.ts";

export const SIGN_IN_PAGE_PATH = "/sign-in";
/** Where the pages' script gets the browser's device cookie just before it signs in (session.js). */
export const DEVICE_COOKIE_ROUTE = "/sign-in/device";
/** The address security notifications point to (mail/notices.ts). */
export const SECURITY_PAGE_PATH = REVIEW_PAGE_PATH;
export const SECURITY_PAGE_CONTENT_SECURITY_POLICY = PAGES_CONTENT_SECURITY_POLICY.replace(
  "img-src 'self'",
  "img-src 'self' data:",
);

const SCRIPTS = ["session.js", "webauthn.js", "sign-in.js", "security.js"] as const;
const scripts = new Map(SCRIPTS.map((name) => [name, readFileSync(new URL(`./${name}`, import.meta.url), "utf8")]));

const page = (t: Translator, title: string, script: string, body: string, back: string) =>
  pageDocument(
    t,
    title,
    `${messagesBlock(t, [`pages.${script === "sign-in.js" ? "signInJs" : "securityJs"}.`, "pages.sharedJs."])}
<script type="module" src="/pages/${script}"></script>`,
    body,
    t.html("pages.common.noscript"),
    back,
  );

// The sign-in page, a section per constant (other sections, such as a mail sign-in, slot in beside them).
const signInStatus = () => `<p id="status" role="status" aria-live="polite"></p>`;

const signInPasswordForm = (t: Translator) => `<form id="password-form">
<label for="email">${t.html("pages.signIn.email")}</label>
<input id="email" name="username" type="email" autocomplete="username webauthn" required maxlength="254">
<label for="password">${t.html("pages.signIn.password")}</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">${t.html("pages.signIn.submit")}</button>
</form>`;

const signInPasskeySection = (t: Translator) => `<section id="passkey-section" aria-labelledby="passkey-heading">
<h2 id="passkey-heading">${t.html("pages.signIn.passkeyHeading")}</h2>
<p class="hint">${t.html("pages.signIn.passkeyHint")}</p>
<button type="button" id="passkey-sign-in">${t.html("pages.signIn.passkeyButton")}</button>
</section>`;

const signInLinkMailSection = (
  t: Translator,
) => `<section id="link-mail-section" aria-labelledby="link-mail-heading" hidden>
<h2 id="link-mail-heading">${t.html("pages.signIn.linkMailHeading")}</h2>
<p class="hint">${t.html("pages.signIn.linkMailHint")}</p>
<button type="button" id="link-by-mail" class="secondary">${t.html("pages.signIn.linkMailButton")}</button>
</section>`;

const signInUpstreamSection = (
  t: Translator,
) => `<section id="upstream-section" aria-labelledby="upstream-heading" hidden>
<h2 id="upstream-heading">${t.html("pages.signIn.upstreamHeading")}</h2>
<ul id="upstream-list" class="items"></ul>
</section>`;

const signInSecondFactorSection = (
  t: Translator,
) => `<section id="second-factor" aria-labelledby="second-factor-heading" hidden>
<h2 id="second-factor-heading">${t.html("pages.signIn.secondFactorHeading")}</h2>
<form id="otp-form" hidden>
<label for="otp">${t.html("pages.signIn.otpLabel")}</label>
<input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required aria-describedby="otp-hint">
<p id="otp-hint" class="hint">${t.html("pages.signIn.otpHint")}</p>
<button type="submit">${t.html("pages.signIn.otpSubmit")}</button>
</form>
<form id="recovery-form" hidden>
<label for="recovery-code">${t.html("pages.signIn.recoveryLabel")}</label>
<input id="recovery-code" name="recovery_code" autocomplete="off" spellcheck="false" required maxlength="64">
<button type="submit">${t.html("pages.signIn.recoverySubmit")}</button>
</form>
<div class="actions">
<button type="button" id="use-passkey" class="secondary" hidden>${t.html("pages.signIn.usePasskey")}</button>
<button type="button" id="use-otp" class="secondary" hidden>${t.html("pages.signIn.useOtp")}</button>
<button type="button" id="use-recovery" class="secondary" hidden>${t.html("pages.signIn.useRecovery")}</button>
</div>
</section>`;

const SIGN_IN_PAGE = perLocale((t) =>
  page(
    t,
    t.html("pages.signIn.title"),
    "sign-in.js",
    [
      signInStatus(),
      signInPasswordForm(t),
      signInPasskeySection(t),
      mailSignInSection(t),
      signInLinkMailSection(t),
      signInUpstreamSection(t),
      signInSecondFactorSection(t),
    ].join("\n"),
    SIGN_IN_PAGE_PATH,
  ),
);

/** The security page's choice of language: saved in this browser (the cookie) and to the account. */
const languageSection = (t: Translator) => `<section aria-labelledby="language-heading">
<h2 id="language-heading">${t.html("pages.security.languageHeading")}</h2>
<form id="language-choice">
<label for="language-select">${t.html("pages.security.languageLabel")}</label>
<select id="language-select" name="locale">
${LOCALES.map((locale) => `<option value="${locale}" lang="${locale}"${locale === t.locale ? " selected" : ""}>${escapeHtml(LOCALE_NAMES[locale])}</option>`).join("\n")}
</select>
<button type="submit">${t.html("pages.security.languageSave")}</button>
</form>
</section>`;

const SECURITY_PAGE = perLocale((t) =>
  page(
    t,
    t.html("pages.security.title"),
    "security.js",
    `<p id="status" role="status" aria-live="polite">${t.html("pages.security.loading")}</p>
<div id="content" hidden>
<p id="who"></p>
<button type="button" id="sign-out" class="secondary">${t.html("pages.security.signOut")}</button>
<section aria-labelledby="totp-heading">
<h2 id="totp-heading">${t.html("pages.security.totpHeading")}</h2>
<p id="totp-state"></p>
<button type="button" id="totp-start" hidden>${t.html("pages.security.totpStart")}</button>
<div id="totp-enrol" hidden>
<p>${t.html("pages.security.totpScan")}</p>
<img id="totp-qr" alt="${t.html("pages.security.totpQrAlt")}" width="200" height="200">
<p>${t.html("pages.security.totpKey")} <code id="totp-secret" class="secret"></code></p>
<form id="totp-confirm">
<label for="totp-code">${t.html("pages.security.totpCode")}</label>
<input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">${t.html("pages.security.totpConfirm")}</button>
</form>
</div>
<form id="totp-disable" hidden>
<h3>${t.html("pages.security.totpDisableHeading")}</h3>
<label for="disable-password">${t.html("pages.security.password")}</label>
<input id="disable-password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<label for="disable-code">${t.html("pages.security.disableCode")}</label>
<input id="disable-code" name="code" autocomplete="off" spellcheck="false" required maxlength="64">
<button type="submit">${t.html("pages.security.totpDisable")}</button>
</form>
</section>
<section id="codes-section" aria-labelledby="codes-heading" hidden>
<h2 id="codes-heading">${t.html("pages.security.codesHeading")}</h2>
<p id="codes-state"></p>
<div id="codes-shown" hidden>
<p>${t.html("pages.security.codesSave")}</p>
<ul id="codes-list" class="codes"></ul>
</div>
<form id="codes-regenerate">
<label for="codes-password">${t.html("pages.security.password")}</label>
<input id="codes-password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">${t.html("pages.security.codesRegenerate")}</button>
</form>
</section>
<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">${t.html("pages.security.passkeysHeading")}</h2>
<ul id="passkey-list" class="items"></ul>
<form id="passkey-add">
<label for="passkey-name">${t.html("pages.security.passkeyName")}</label>
<input id="passkey-name" name="name" maxlength="100" required placeholder="${t.html("pages.security.passkeyNamePlaceholder")}">
<button type="submit">${t.html("pages.security.passkeyAdd")}</button>
</form>
</section>
<section id="identities-section" aria-labelledby="identities-heading" hidden>
<h2 id="identities-heading">${t.html("pages.security.identitiesHeading")}</h2>
<ul id="identity-list" class="items"></ul>
<div id="identity-link" class="actions"></div>
</section>
<section id="apps-section" aria-labelledby="apps-heading" hidden>
<h2 id="apps-heading">${t.html("pages.security.appsHeading")}</h2>
<p id="apps-empty" class="hint" hidden>${t.html("pages.security.appsEmpty")}</p>
<ul id="app-list" class="items"></ul>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">${t.html("pages.security.sessionsHeading")}</h2>
<ul id="session-list" class="items"></ul>
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">${t.html("pages.security.passwordHeading")}</h2>
<form id="password-change">
<label for="current-password">${t.html("pages.security.currentPassword")}</label>
<input id="current-password" name="current_password" type="password" autocomplete="current-password" required maxlength="256">
<label for="new-password">${t.html("pages.security.newPassword")}</label>
<input id="new-password" name="new_password" type="password" autocomplete="new-password" required minlength="8" maxlength="256" aria-describedby="new-password-hint">
<p id="new-password-hint" class="hint">${t.html("pages.security.newPasswordHint")}</p>
<button type="submit">${t.html("pages.security.passwordChange")}</button>
</form>
</section>
${languageSection(t)}
</div>`,
    SECURITY_PAGE_PATH,
  ),
);

/** The language of an authorization request the sign-in page continues to (its `ui_locales`), if any. */
function continuedUiLocales(request: FastifyRequest): string | undefined {
  const next = (request.query as Record<string, unknown> | undefined)?.continue;
  if (typeof next !== "string" || next.length > 8192) return undefined;
  const at = next.indexOf("?");
  if (at < 0 || !next.startsWith("/")) return undefined;
  return new URLSearchParams(next.slice(at + 1)).get("ui_locales") ?? undefined;
}

export async function registerSecurityPages(app: FastifyInstance, deviceCookie: DeviceCookie): Promise<void> {
  app.get(SIGN_IN_PAGE_PATH, { schema: { hide: true } }, async function signInPage(request, reply) {
    return sendPage(reply, SIGN_IN_PAGE(pageTranslator(request, continuedUiLocales(request))));
  });
  app.post(DEVICE_COOKIE_ROUTE, { schema: { hide: true } }, async function deviceCookieForSignIn(request, reply) {
    // The browser's device cookie, for the new-device notice (auth/devices.ts): set here when the page is
    // about to sign in (session.js asks before its first sign-in request), read by the token endpoint, so
    // that the token endpoint's answers stay exactly the spec's and a page view makes no cookie at all.
    const cookie = deviceCookie.issueFor(request.headers.cookie);
    if (cookie !== undefined) reply.header("set-cookie", cookie);
    return reply.code(204).header("cache-control", "no-store").send();
  });
  app.get(SECURITY_PAGE_PATH, { schema: { hide: true } }, async function securityPage(request, reply) {
    return sendPage(reply, SECURITY_PAGE(pageTranslator(request)), SECURITY_PAGE_CONTENT_SECURITY_POLICY);
  });
  for (const [name, source] of scripts) {
    app.get(`/pages/${name}`, { schema: { hide: true } }, async function pageScript(_request, reply) {
      return reply.type("text/javascript; charset=utf-8").header("cache-control", "no-cache").send(source);
    });
  }
}
