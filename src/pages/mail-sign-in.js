// Sign-in by mail on the sign-in page (issue 37): "E-mail me a sign-in link"
// beside the password form, then "Check your inbox" with the 6-digit code;
// the mail's link (/sign-in?mail_sign_in=<attempt>#token=<token>) signs in
// when opened in the browser that asked, and elsewhere asks first whether the
// person asked for it. Loaded by sign-in.js, which hands over what it does
// after a sign-in (signedIn) or on a second-factor challenge (askSecondFactor).
// The texts come from the page's JSON data block (#passwordless-messages),
// in the page's language, formatted by session.js's format.
import { api, format, say, t, tokenRequest } from "./session.js";

const GRANT = "urn:user-token-service:grant-type:";
const lang = document.documentElement.lang || "en";
const block = document.getElementById("passwordless-messages");
const messages = block ? JSON.parse(block.textContent || "{}") : {};
const byId = (id) => document.getElementById(id);

const text = (key, values = {}) => format(messages[`passwordless.${key}`] ?? key, values);

const others = () => [byId("password-form"), byId("passkey-section"), byId("upstream-section")].filter(Boolean);
/** Hides the page's other ways in; answers how to show again those that were shown. */
function hideOthers() {
  const shown = others().filter((element) => !element.hidden);
  for (const element of shown) element.hidden = true;
  return () => {
    for (const element of shown) element.hidden = false;
  };
}

/** While a mailed link is being opened, the upstream buttons (drawn later by sign-in.js) stay hidden. */
function keepUpstreamHidden() {
  const upstream = byId("upstream-section");
  if (!upstream) return;
  new MutationObserver(() => {
    if (!upstream.hidden) upstream.hidden = true;
  }).observe(upstream, { attributes: true, attributeFilter: ["hidden"] });
}

async function busy(button, work) {
  button.disabled = true;
  try {
    await work();
  } finally {
    button.disabled = false;
  }
}

/** The grant's answer: signed in, a second factor to pass, or false (the caller says why). */
async function finish(result, hooks) {
  if (result.ok) {
    await hooks.signedIn(result);
    return true;
  }
  if (result.status === 403 && result.data.error === "mfa_required") {
    for (const id of ["mail-sign-in", "mail-sign-in-inbox", "mail-link-confirm"]) byId(id).hidden = true;
    hooks.askSecondFactor(result.data);
    return true;
  }
  return false;
}

/** The link from the mail: the grant, with the confirmation asked for when this is not the browser that asked. */
async function openLink(attempt, token, hooks) {
  hideOthers();
  keepUpstreamHidden();
  const confirm = byId("mail-link-confirm");
  const fail = (result) => {
    confirm.hidden = true;
    byId("password-form").hidden = false;
    say(result.status === 429 ? t("pages.sharedJs.tooMany") : text("linkRefused"), "error");
  };
  say(text("signingIn"));
  const fields = { grant_type: `${GRANT}mail-link`, attempt, token };
  const result = await tokenRequest(fields);
  if (await finish(result, hooks)) return;
  if (result.status !== 400 || result.data.confirmation_required !== true) return fail(result);
  const at = new Date(result.data.requested_at);
  const time = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" }).format(at);
  byId("mail-link-question").textContent = text("confirmQuestion", { time });
  confirm.hidden = false;
  say("");
  const yes = byId("mail-link-yes");
  yes.focus();
  yes.addEventListener("click", () =>
    busy(yes, async () => {
      say(text("signingIn"));
      const confirmed = await tokenRequest({ ...fields, confirm: "true" });
      if (!(await finish(confirmed, hooks))) fail(confirmed);
    }),
  );
  byId("mail-link-no").addEventListener("click", () => {
    confirm.hidden = true;
    say(text("cancelled"), "success");
  });
}

/** Asks for the mail: its own fetch, to read Retry-After of a 429. */
async function requestMail(email) {
  try {
    const response = await fetch("/auth/mail-sign-in", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email }),
    });
    const data = await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, data, retryAfter: Number(response.headers.get("retry-after")) };
  } catch {
    return { ok: false, status: 0, data: {} };
  }
}

async function offer(hooks) {
  const options = await api("/auth/mail-sign-in");
  if (!options.ok || !Array.isArray(options.data.delivery)) return;
  const delivery = options.data.delivery;
  const section = byId("mail-sign-in");
  const button = byId("mail-sign-in-send");
  const inbox = byId("mail-sign-in-inbox");
  const codeForm = byId("mail-code-form");
  if (!delivery.includes("link")) {
    byId("mail-sign-in-hint").textContent = text("hintCode");
    button.textContent = text("sendCode");
  } else if (!delivery.includes("code")) {
    byId("mail-sign-in-hint").textContent = text("hintLink");
  }
  section.hidden = false;
  let attempt = null;
  let showOthers = () => {};

  button.addEventListener("click", () =>
    busy(button, async () => {
      const field = byId("email");
      const email = field.value.trim();
      if (!email || !field.checkValidity()) {
        say(text("enterEmail"), "error");
        return field.focus();
      }
      say(text("sending"));
      const sent = await requestMail(email);
      if (sent.status === 429) {
        const minutes = Math.max(1, Math.ceil((sent.retryAfter || 60) / 60));
        return say(text("tooMany", { minutes }), "error");
      }
      if (!sent.ok) return say(text("sendFailed"), "error");
      attempt = sent.data.attempt;
      showOthers = hideOthers();
      section.hidden = true;
      inbox.hidden = false;
      const minutes = Math.round(sent.data.expires_in / 60);
      byId("mail-sign-in-sent").textContent = [
        text("sent", { minutes }),
        ...(delivery.includes("link") ? [text("sentLink")] : []),
      ].join(" ");
      say("");
      codeForm.hidden = !delivery.includes("code");
      if (!codeForm.hidden) codeForm.elements.code.focus();
      else byId("mail-sign-in-inbox-heading").focus();
    }),
  );

  codeForm.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(codeForm.querySelector("button"), async () => {
      say(text("signingIn"));
      const code = codeForm.elements.code.value.trim();
      const result = await tokenRequest({ grant_type: `${GRANT}mail-code`, attempt, code });
      if (await finish(result, hooks)) return;
      codeForm.elements.code.value = "";
      codeForm.elements.code.focus();
      say(result.status === 429 ? t("pages.sharedJs.tooMany") : text("codeRefused"), "error");
    });
  });

  byId("mail-sign-in-restart").addEventListener("click", () => {
    inbox.hidden = true;
    section.hidden = false;
    showOthers();
    say("");
    byId("email").focus();
  });
}

/** Called by sign-in.js once its own handlers are in place. */
export function start(hooks) {
  const query = new URLSearchParams(location.search);
  const attempt = query.get("mail_sign_in");
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (attempt && token) {
    // The token leaves the address bar (and the history) at once.
    history.replaceState(null, "", location.pathname);
    return openLink(attempt, token, hooks);
  }
  return offer(hooks);
}
