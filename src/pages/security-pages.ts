// The sign-in page (/sign-in) and the security page (/account/security): the
// pages the WebAuthn ceremonies need in the service's own origin, built like
// the reset and verification pages (account-pages.ts): static HTML, plain
// script modules and one stylesheet served from here, nothing inline, nothing
// from elsewhere. The security page's policy also allows data: images, for the
// authenticator app's QR code, which the API sends as a data: URL.

import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import type { DeviceCookie } from "../auth/devices.ts";
import { translator } from "../i18n/translate.ts";
import { REVIEW_PAGE_PATH } from "../mail/notices.ts";
import { mailSignInSection } from "../passwordless/page-section.ts";
import { PAGES_CONTENT_SECURITY_POLICY, pageDocument, sendPage } from "./account-pages.ts";

export const SIGN_IN_PAGE_PATH = "/sign-in";
/** The address security notifications point to (mail/notices.ts). */
export const SECURITY_PAGE_PATH = REVIEW_PAGE_PATH;
export const SECURITY_PAGE_CONTENT_SECURITY_POLICY = PAGES_CONTENT_SECURITY_POLICY.replace(
  "img-src 'self'",
  "img-src 'self' data:",
);

const SCRIPTS = ["session.js", "webauthn.js", "sign-in.js", "security.js"] as const;
const scripts = new Map(SCRIPTS.map((name) => [name, readFileSync(new URL(`./${name}`, import.meta.url), "utf8")]));

const page = (title: string, script: string, body: string) =>
  pageDocument(
    translator("en"),
    title,
    `<script type="module" src="/pages/${script}"></script>`,
    body,
    "This page needs JavaScript.",
  );

const SIGN_IN_PAGE = page(
  "Sign in",
  "sign-in.js",
  `<p id="status" role="status" aria-live="polite"></p>
<form id="password-form">
<label for="email">E-mail</label>
<input id="email" name="username" type="email" autocomplete="username webauthn" required maxlength="254">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">Sign in</button>
</form>
<section id="passkey-section" aria-labelledby="passkey-heading">
<h2 id="passkey-heading">Or use a passkey</h2>
<p class="hint">No e-mail or password needed: your device asks for your fingerprint, face or PIN.</p>
<button type="button" id="passkey-sign-in">Sign in with a passkey</button>
</section>
${mailSignInSection(translator("en"))}
<section id="link-mail-section" aria-labelledby="link-mail-heading" hidden>
<h2 id="link-mail-heading">Or prove it with a link we send you</h2>
<p class="hint">We send a link to the account's address; open it in this browser.</p>
<button type="button" id="link-by-mail" class="secondary">E-mail me a link</button>
</section>
<section id="upstream-section" aria-labelledby="upstream-heading" hidden>
<h2 id="upstream-heading">Or sign in with</h2>
<ul id="upstream-list" class="items"></ul>
</section>
<section id="second-factor" aria-labelledby="second-factor-heading" hidden>
<h2 id="second-factor-heading">Confirm it is you</h2>
<form id="otp-form" hidden>
<label for="otp">Code from your authenticator app</label>
<input id="otp" name="otp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required aria-describedby="otp-hint">
<p id="otp-hint" class="hint">Six digits; a new one every 30 seconds.</p>
<button type="submit">Verify the code</button>
</form>
<form id="recovery-form" hidden>
<label for="recovery-code">Recovery code</label>
<input id="recovery-code" name="recovery_code" autocomplete="off" spellcheck="false" required maxlength="64">
<button type="submit">Use the recovery code</button>
</form>
<div class="actions">
<button type="button" id="use-passkey" class="secondary" hidden>Use a passkey</button>
<button type="button" id="use-otp" class="secondary" hidden>Use the authenticator app</button>
<button type="button" id="use-recovery" class="secondary" hidden>Use a recovery code</button>
</div>
</section>`,
);

const SECURITY_PAGE = page(
  "Security",
  "security.js",
  `<p id="status" role="status" aria-live="polite">Loading…</p>
<div id="content" hidden>
<p id="who"></p>
<button type="button" id="sign-out" class="secondary">Sign out</button>
<section aria-labelledby="totp-heading">
<h2 id="totp-heading">Authenticator app</h2>
<p id="totp-state"></p>
<button type="button" id="totp-start" hidden>Set up an authenticator app</button>
<div id="totp-enrol" hidden>
<p>Scan this QR code with your authenticator app, or type the key below into it.</p>
<img id="totp-qr" alt="QR code to add this account to an authenticator app" width="200" height="200">
<p>Key for manual entry: <code id="totp-secret" class="secret"></code></p>
<form id="totp-confirm">
<label for="totp-code">Code shown by the app</label>
<input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
<button type="submit">Turn on the authenticator app</button>
</form>
</div>
<form id="totp-disable" hidden>
<h3>Turn it off</h3>
<label for="disable-password">Password</label>
<input id="disable-password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<label for="disable-code">Code from the app, or a recovery code</label>
<input id="disable-code" name="code" autocomplete="off" spellcheck="false" required maxlength="64">
<button type="submit">Turn off the authenticator app</button>
</form>
</section>
<section id="codes-section" aria-labelledby="codes-heading" hidden>
<h2 id="codes-heading">Recovery codes</h2>
<p id="codes-state"></p>
<div id="codes-shown" hidden>
<p>Save these codes somewhere safe. Each works once, and they are shown only now.</p>
<ul id="codes-list" class="codes"></ul>
</div>
<form id="codes-regenerate">
<label for="codes-password">Password</label>
<input id="codes-password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">Make new recovery codes</button>
</form>
</section>
<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">Passkeys</h2>
<ul id="passkey-list" class="items"></ul>
<form id="passkey-add">
<label for="passkey-name">Name for a new passkey</label>
<input id="passkey-name" name="name" maxlength="100" required placeholder="For example: laptop fingerprint">
<button type="submit">Add a passkey</button>
</form>
</section>
<section id="identities-section" aria-labelledby="identities-heading" hidden>
<h2 id="identities-heading">Linked sign-ins</h2>
<ul id="identity-list" class="items"></ul>
<div id="identity-link" class="actions"></div>
</section>
<section id="apps-section" aria-labelledby="apps-heading" hidden>
<h2 id="apps-heading">Apps with access to your account</h2>
<p id="apps-empty" class="hint" hidden>No application has access.</p>
<ul id="app-list" class="items"></ul>
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Signed-in sessions</h2>
<ul id="session-list" class="items"></ul>
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">Change your password</h2>
<form id="password-change">
<label for="current-password">Current password</label>
<input id="current-password" name="current_password" type="password" autocomplete="current-password" required maxlength="256">
<label for="new-password">New password</label>
<input id="new-password" name="new_password" type="password" autocomplete="new-password" required minlength="8" maxlength="256" aria-describedby="new-password-hint">
<p id="new-password-hint" class="hint">At least 8 characters. Every session ends, this one too: sign in again afterwards.</p>
<button type="submit">Change the password</button>
</form>
</section>
</div>`,
);

export async function registerSecurityPages(app: FastifyInstance, deviceCookie: DeviceCookie): Promise<void> {
  app.get(SIGN_IN_PAGE_PATH, { schema: { hide: true } }, async function signInPage(request, reply) {
    // The browser's device cookie, for the new-device notice (auth/devices.ts): set here, read by the
    // token endpoint, so that the token endpoint's answers stay exactly the spec's.
    const cookie = deviceCookie.issueFor(request.headers.cookie);
    if (cookie !== undefined) reply.header("set-cookie", cookie);
    return sendPage(reply, SIGN_IN_PAGE);
  });
  app.get(SECURITY_PAGE_PATH, { schema: { hide: true } }, async function securityPage(_request, reply) {
    return sendPage(reply, SECURITY_PAGE, SECURITY_PAGE_CONTENT_SECURITY_POLICY);
  });
  for (const [name, source] of scripts) {
    app.get(`/pages/${name}`, { schema: { hide: true } }, async function pageScript(_request, reply) {
      return reply.type("text/javascript; charset=utf-8").header("cache-control", "no-cache").send(source);
    });
  }
}
