// The sign-in page's part for sign-in by mail (issue 37): one fragment
// inserted into the page's template, hidden until its script
// (pages/mail-sign-in.js) learns from GET /auth/mail-sign-in that the setting
// is on; its messages in a JSON data block (not executed, CSP-safe), with
// `<` escaped so no message can close the block.
import type { Translator } from "../i18n/translate.ts";

export function mailSignInSection(t: Translator): string {
  const page = Object.fromEntries(
    Object.entries(t.messages("passwordless.")).filter(([key]) => !key.startsWith("passwordless.mail.")),
  );
  const data = JSON.stringify(page).replace(/</g, "\\u003c");
  return `<section id="mail-sign-in" aria-labelledby="mail-sign-in-heading" hidden>
<h2 id="mail-sign-in-heading">${t.html("passwordless.heading")}</h2>
<p id="mail-sign-in-hint" class="hint">${t.html("passwordless.hint")}</p>
<button type="button" id="mail-sign-in-send" class="secondary">${t.html("passwordless.send")}</button>
</section>
<section id="mail-sign-in-inbox" aria-labelledby="mail-sign-in-inbox-heading" hidden>
<h2 id="mail-sign-in-inbox-heading" tabindex="-1">${t.html("passwordless.inboxHeading")}</h2>
<p id="mail-sign-in-sent"></p>
<form id="mail-code-form" hidden>
<label for="mail-code">${t.html("passwordless.codeLabel")}</label>
<input id="mail-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" minlength="6" maxlength="6" required>
<button type="submit">${t.html("passwordless.codeSubmit")}</button>
</form>
<button type="button" id="mail-sign-in-restart" class="secondary">${t.html("passwordless.startOver")}</button>
</section>
<section id="mail-link-confirm" aria-labelledby="mail-link-confirm-heading" hidden>
<h2 id="mail-link-confirm-heading">${t.html("passwordless.confirmHeading")}</h2>
<p id="mail-link-question"></p>
<p class="hint">${t.html("passwordless.confirmHint")}</p>
<div class="actions">
<button type="button" id="mail-link-yes">${t.html("passwordless.confirmYes")}</button>
<button type="button" id="mail-link-no" class="secondary">${t.html("passwordless.confirmNo")}</button>
</div>
</section>
<script type="application/json" id="passwordless-messages">${data}</script>`;
}
