// The sign-in page: e-mail and password, then the second factor when the
// token endpoint answers 403 mfa_required (a code from the authenticator app,
// a recovery code, or a passkey); or a passkey alone (discoverable). On
// success the tokens are kept (see session.js) and the security page opens.
// Reached from an application's authorization request (?continue=...), the
// page instead opens the browser session with the new access token (the
// server sets an HttpOnly cookie) and goes back to that request, which must
// be this service's authorization endpoint or its /device page: never another address.
import { api, problem, saveTokens, say, t, tokenRequest } from "./session.js";
import { ceremonyError, getPasskey, passkeysSupported } from "./webauthn.js";

const GRANT = "urn:user-token-service:grant-type:";
const passwordForm = document.getElementById("password-form");
const passkeySection = document.getElementById("passkey-section");
const secondFactor = document.getElementById("second-factor");
const otpForm = document.getElementById("otp-form");
const recoveryForm = document.getElementById("recovery-form");
const useOtp = document.getElementById("use-otp");
const useRecovery = document.getElementById("use-recovery");
const usePasskey = document.getElementById("use-passkey");
let mfaToken = null;
/** The token endpoint's answers to a password the page has words for (the spec's statuses). */
const SIGN_IN_ANSWERS = { 401: "pages.signInJs.wrongPassword", 403: "pages.signInJs.notVerified" };
let factors = [];
const AUTHORIZE = "/oauth/authorize?";
// Or the device page (issue 36), where a person approves a device after signing in.
const DEVICE = "/device";
const allowedContinue = (address) =>
  address?.startsWith(AUTHORIZE) || address === DEVICE || address?.startsWith(`${DEVICE}?`) ? address : null;
const query = new URLSearchParams(location.search);
const next = query.get("continue");
let continuing = allowedContinue(next);
if (query.get("login_hint")) passwordForm.elements.username.value = query.get("login_hint");
// Back from an upstream provider (issue 25): a ticket in the fragment, never sent to a server by the
// browser; removed from the address bar at once.
const fragment = new URLSearchParams(location.hash.slice(1));
const upstreamTicket = fragment.get("upstream");
const linkTicket = fragment.get("link");
// The link mailed to the account's address to prove it (/sign-in?link=mail#token=...).
const mailedLink = query.get("link") === "mail" ? fragment.get("token") : null;
if (upstreamTicket || linkTicket || mailedLink) history.replaceState(null, "", location.pathname + location.search);

if (location.hash === "#signed-out") {
  say(t("pages.signInJs.signedOut"), "success");
  history.replaceState(null, "", location.pathname);
}
if (!passkeysSupported()) {
  passkeySection.hidden = true;
}

async function signedIn(result) {
  saveTokens(result.data);
  if (linkTicket) {
    const linked = await api("/auth/upstream/link", { method: "POST", body: { ticket: linkTicket } });
    if (!linked.ok) return say(problem(linked, "pages.signInJs.linkFailed"), "error");
  }
  if (continuing) {
    const opened = await fetch("/oauth/browser-session", {
      method: "POST",
      headers: { authorization: `Bearer ${result.data.access_token}` },
    }).catch(() => null);
    if (!opened?.ok) return say(t("pages.signInJs.appFailed"), "error");
    say(t("pages.signInJs.backToApp"), "success");
    location.assign(continuing);
    return;
  }
  say(t("pages.signInJs.signedIn"), "success");
  location.assign("/account/security");
}

async function busy(button, work) {
  button.disabled = true;
  try {
    await work();
  } finally {
    button.disabled = false;
  }
}

/** Shows one way of answering the challenge, and buttons for the others the account has. */
function show(way) {
  otpForm.hidden = way !== "otp";
  recoveryForm.hidden = way !== "recovery_code";
  useOtp.hidden = way === "otp" || !factors.includes("otp");
  useRecovery.hidden = way === "recovery_code" || !factors.includes("recovery_code");
  usePasskey.hidden = !factors.includes("webauthn") || !passkeysSupported();
  const field =
    way === "otp" ? otpForm.elements.otp : way === "recovery_code" ? recoveryForm.elements.recovery_code : null;
  if (field) field.focus();
}

function askSecondFactor(data) {
  mfaToken = data.mfa_token;
  factors = Array.isArray(data.mfa_factors) ? data.mfa_factors : [];
  passwordForm.hidden = true;
  passkeySection.hidden = true;
  secondFactor.hidden = false;
  const first = factors.includes("otp") ? "otp" : factors.includes("webauthn") ? "webauthn" : "recovery_code";
  show(first);
  say(
    first === "otp"
      ? t("pages.signInJs.askOtp")
      : first === "webauthn"
        ? t("pages.signInJs.askPasskey")
        : t("pages.signInJs.askRecovery"),
  );
  if (first === "webauthn") usePasskey.focus();
}

passwordForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const button = passwordForm.querySelector("button");
  busy(button, async () => {
    say(t("pages.signInJs.signingIn"));
    const result = await tokenRequest({
      username: passwordForm.elements.username.value,
      password: passwordForm.elements.password.value,
    });
    if (result.ok) return signedIn(result);
    if (result.status === 403 && result.data.error === "mfa_required") {
      passwordForm.elements.password.value = "";
      return askSecondFactor(result.data);
    }
    say(problem(result, "pages.signInJs.failed", SIGN_IN_ANSWERS), "error");
  });
});

otpForm.addEventListener("submit", (event) => {
  event.preventDefault();
  busy(otpForm.querySelector("button"), async () => {
    const result = await tokenRequest({
      grant_type: `${GRANT}mfa-otp`,
      mfa_token: mfaToken,
      otp: otpForm.elements.otp.value.trim(),
    });
    if (result.ok) return signedIn(result);
    otpForm.elements.otp.value = "";
    say(problem(result, "pages.signInJs.otpRefused", { 401: "pages.signInJs.otpRefused" }), "error");
  });
});

recoveryForm.addEventListener("submit", (event) => {
  event.preventDefault();
  busy(recoveryForm.querySelector("button"), async () => {
    const result = await tokenRequest({
      grant_type: `${GRANT}mfa-recovery-code`,
      mfa_token: mfaToken,
      recovery_code: recoveryForm.elements.recovery_code.value.trim(),
    });
    if (result.ok) return signedIn(result);
    say(problem(result, "pages.signInJs.recoveryRefused", { 401: "pages.signInJs.recoveryRefused" }), "error");
  });
});

useOtp.addEventListener("click", () => show("otp"));
useRecovery.addEventListener("click", () => show("recovery_code"));

/** A passkey ceremony: options from the service, the authenticator's answer, then the grant. */
async function withPasskey(optionsBody, grantFields) {
  say(t("pages.signInJs.waitingPasskey"));
  const options = await api("/auth/webauthn/authentication-options", { method: "POST", body: optionsBody });
  if (!options.ok) return say(problem(options, "pages.signInJs.passkeysUnavailable"), "error");
  let assertion;
  try {
    assertion = await getPasskey(options.data.options);
  } catch (error) {
    return say(ceremonyError(error), "error");
  }
  const result = await tokenRequest({
    ...grantFields,
    challenge_id: options.data.challenge_id,
    webauthn_response: JSON.stringify(assertion),
  });
  if (result.ok) return signedIn(result);
  say(problem(result, "pages.signInJs.passkeyRefused", { 401: "pages.signInJs.passkeyRefused" }), "error");
}

usePasskey.addEventListener("click", () =>
  busy(usePasskey, () =>
    withPasskey({ mfa_token: mfaToken }, { grant_type: `${GRANT}mfa-webauthn`, mfa_token: mfaToken }),
  ),
);

const passkeyButton = document.getElementById("passkey-sign-in");
passkeyButton.addEventListener("click", () =>
  busy(passkeyButton, () => withPasskey({}, { grant_type: `${GRANT}webauthn` })),
);

/** A button per upstream provider; each goes back to the pending authorization request, if any. */
async function showProviders() {
  const section = document.getElementById("upstream-section");
  const answer = await api("/auth/upstream/providers");
  if (!answer.ok || !Array.isArray(answer.data) || answer.data.length === 0) return;
  const list = document.getElementById("upstream-list");
  for (const provider of answer.data) {
    const link = document.createElement("a");
    link.className = "button";
    link.id = `upstream-${provider.name}`;
    link.href = continuing ? `${provider.start}?${new URLSearchParams({ continue: continuing })}` : provider.start;
    link.textContent = t("pages.signInJs.withProvider", { provider: provider.label });
    const item = document.createElement("li");
    item.append(link);
    list.append(item);
  }
  section.hidden = false;
}

/** The upstream grant with a sign-in ticket (from the callback, or from a confirmed mailed link). */
async function signInWithTicket(ticket) {
  passwordForm.hidden = true;
  passkeySection.hidden = true;
  say(t("pages.signInJs.signingIn"));
  const result = await tokenRequest({ grant_type: `${GRANT}upstream`, upstream_ticket: ticket });
  if (result.ok) return signedIn(result);
  if (result.status === 403 && result.data.error === "mfa_required") return askSecondFactor(result.data);
  passwordForm.hidden = false;
  say(problem(result, "pages.signInJs.failed", { 401: "pages.signInJs.ticketExpired" }), "error");
}

if (linkTicket) {
  say(t("pages.signInJs.linkExisting"));
  const mailSection = document.getElementById("link-mail-section");
  const mailButton = document.getElementById("link-by-mail");
  mailSection.hidden = false;
  mailButton.addEventListener("click", () =>
    busy(mailButton, async () => {
      const body = continuing ? { ticket: linkTicket, continue: continuing } : { ticket: linkTicket };
      const sent = await api("/auth/upstream/link/mail", { method: "POST", body });
      if (!sent.ok) return say(problem(sent, "pages.signInJs.linkMailFailed"), "error");
      passwordForm.hidden = true;
      passkeySection.hidden = true;
      mailSection.hidden = true;
      say(t("pages.signInJs.linkMailed"), "success");
    }),
  );
} else if (mailedLink) {
  passwordForm.hidden = true;
  passkeySection.hidden = true;
  say(t("pages.signInJs.linking"));
  api("/auth/upstream/link/mail/confirm", { method: "POST", body: { token: mailedLink } }).then((confirmed) => {
    if (!confirmed.ok) {
      passwordForm.hidden = false;
      return say(problem(confirmed, "pages.signInJs.linkFailed", { 400: "pages.signInJs.linkMailExpired" }), "error");
    }
    continuing = allowedContinue(confirmed.data.continue);
    return signInWithTicket(confirmed.data.upstream_ticket);
  });
} else if (upstreamTicket) {
  signInWithTicket(upstreamTicket);
}
if (!upstreamTicket && !mailedLink) showProviders();
import("./mail-sign-in.js").then((mail) => mail.start({ signedIn, askSecondFactor }));
