// The security page: authenticator app (QR code, key for manual entry, a code
// to confirm, recovery codes shown once), recovery codes (how many are left,
// new ones for the password), passkeys (add, rename, remove), signed-in
// sessions (see, end), the password, and signing out. Everything goes through
// the API with the access token (see session.js); all text is set with
// textContent, never parsed as HTML.
import { api, problem, resume, say, signOut, t } from "./session.js";
import { ceremonyError, createPasskey, passkeysSupported } from "./webauthn.js";

const $ = (id) => document.getElementById(id);
/** The answers of a password (and code) check the page has words for. */
const WRONG_PROOF = { 401: "pages.securityJs.wrongProof", 400: "pages.securityJs.wrongProof" };
// Dates in the page's language and the browser's time zone (issue 37).
const dates = new Intl.DateTimeFormat(document.documentElement.lang, { dateStyle: "medium", timeStyle: "short" });
const dateText = (iso) => (iso ? dates.format(new Date(iso)) : t("pages.securityJs.never"));

function element(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

/** A button whose visible word is followed by words only a screen reader needs ("Remove" + "passkey Laptop"), each a whole message. */
function button(word, hidden, onClick) {
  const node = element("button", { type: "button" }, [
    word,
    element("span", { class: "visually-hidden" }, [` ${hidden}`]),
  ]);
  node.addEventListener("click", () => guarded(node, onClick));
  return node;
}

async function guarded(control, work) {
  control.disabled = true;
  try {
    await work();
  } finally {
    control.disabled = false;
  }
}

function onSubmit(form, work) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(form.querySelector("button[type=submit]"), work);
  });
}

function showCodes(codes) {
  const list = $("codes-list");
  list.replaceChildren(...codes.map((code) => element("li", {}, [element("code", {}, [code])])));
  $("codes-shown").hidden = codes.length === 0;
}

// Authenticator app and recovery codes (GET /me/mfa and the /me/totp routes).
async function loadFactors() {
  const result = await api("/me/mfa");
  if (!result.ok) {
    $("totp-state").textContent = t("pages.securityJs.totpUnavailable");
    $("totp-start").hidden = true;
    $("codes-section").hidden = true;
    return;
  }
  const { totp_enabled, recovery_codes_remaining } = result.data;
  $("totp-state").textContent = totp_enabled ? t("pages.securityJs.totpOn") : t("pages.securityJs.totpOff");
  $("totp-start").hidden = totp_enabled;
  $("totp-disable").hidden = !totp_enabled;
  if (totp_enabled) $("totp-enrol").hidden = true;
  $("codes-section").hidden = false;
  $("codes-state").textContent = t("pages.securityJs.codesLeft", { count: recovery_codes_remaining });
}

$("totp-start").addEventListener("click", () =>
  guarded($("totp-start"), async () => {
    const result = await api("/me/totp", { method: "POST", body: {} });
    if (!result.ok) return say(problem(result, "pages.securityJs.totpSetupFailed"), "error");
    $("totp-qr").src = result.data.qr_code;
    $("totp-secret").textContent = result.data.secret;
    $("totp-enrol").hidden = false;
    $("totp-start").hidden = true;
    say(t("pages.securityJs.totpScan"));
    $("totp-code").focus();
  }),
);

onSubmit($("totp-confirm"), async () => {
  const code = $("totp-code").value.trim();
  const result = await api("/me/totp/confirm", { method: "POST", body: { code } });
  $("totp-code").value = "";
  if (!result.ok)
    return say(
      problem(result, "pages.securityJs.totpCodeRefused", { 400: "pages.securityJs.totpCodeRefused" }),
      "error",
    );
  $("totp-enrol").hidden = true;
  const codes = result.data.recovery_codes || [];
  showCodes(codes);
  say(codes.length ? t("pages.securityJs.totpOnSaveCodes") : t("pages.securityJs.totpOnDone"), "success");
  await loadFactors();
});

onSubmit($("totp-disable"), async () => {
  const password = $("disable-password").value;
  const code = $("disable-code").value.trim();
  const body = /^\d{6}$/.test(code) ? { password, code } : { password, recovery_code: code };
  const result = await api("/me/totp/disable", { method: "POST", body });
  $("disable-password").value = "";
  $("disable-code").value = "";
  if (!result.ok) return say(problem(result, "pages.securityJs.totpDisableFailed", WRONG_PROOF), "error");
  say(t("pages.securityJs.totpOffDone"), "success");
  await loadFactors();
});

onSubmit($("codes-regenerate"), async () => {
  const result = await api("/me/recovery-codes", { method: "POST", body: { password: $("codes-password").value } });
  $("codes-password").value = "";
  if (!result.ok) return say(problem(result, "pages.securityJs.codesFailed", WRONG_PROOF), "error");
  showCodes(result.data.recovery_codes || []);
  say(t("pages.securityJs.codesNew"), "success");
  await loadFactors();
});

// Passkeys.
async function loadPasskeys() {
  const result = await api("/me/passkeys");
  if (!result.ok) return say(problem(result, "pages.securityJs.passkeysLoadFailed"), "error");
  const list = $("passkey-list");
  if (result.data.length === 0) {
    list.replaceChildren(element("li", {}, [t("pages.securityJs.noPasskeys")]));
    return;
  }
  list.replaceChildren(
    ...result.data.map((passkey) => {
      const field = element("input", {
        id: `passkey-name-${passkey.id}`,
        value: passkey.name,
        maxLength: 100,
        required: true,
      });
      const label = element("label", { htmlFor: field.id, class: "visually-hidden" }, [
        t("pages.securityJs.passkeyNewName", { name: passkey.name }),
      ]);
      return element("li", {}, [
        element("strong", {}, [passkey.name]),
        element("p", { class: "hint" }, [
          passkey.last_used_at
            ? t("pages.securityJs.passkeyDates", {
                added: dateText(passkey.created_at),
                used: dateText(passkey.last_used_at),
              })
            : t("pages.securityJs.passkeyAdded", { added: dateText(passkey.created_at) }),
        ]),
        label,
        field,
        element("div", { class: "actions" }, [
          button(
            t("pages.securityJs.rename"),
            t("pages.securityJs.passkeyHidden", { name: passkey.name }),
            async () => {
              const renamed = await api(`/me/passkeys/${passkey.id}`, {
                method: "PATCH",
                body: { name: field.value.trim() },
              });
              if (!renamed.ok) return say(problem(renamed, "pages.securityJs.renameFailed"), "error");
              say(t("pages.securityJs.renamed", { name: renamed.data.name }), "success");
              await loadPasskeys();
            },
          ),
          button(
            t("pages.securityJs.remove"),
            t("pages.securityJs.passkeyHidden", { name: passkey.name }),
            async () => {
              const removed = await api(`/me/passkeys/${passkey.id}`, { method: "DELETE" });
              if (!removed.ok) return say(problem(removed, "pages.securityJs.removeFailed"), "error");
              say(t("pages.securityJs.removed", { name: passkey.name }), "success");
              await loadPasskeys();
            },
          ),
        ]),
      ]);
    }),
  );
}

onSubmit($("passkey-add"), async () => {
  if (!passkeysSupported()) return say(t("pages.securityJs.noPasskeySupport"), "error");
  const name = $("passkey-name").value.trim();
  const begun = await api("/me/passkeys/registration-options", { method: "POST" });
  if (!begun.ok) return say(problem(begun, "pages.securityJs.addUnavailable"), "error");
  say(t("pages.securityJs.followPrompt"));
  let response;
  try {
    response = await createPasskey(begun.data.options);
  } catch (error) {
    return say(ceremonyError(error), "error");
  }
  const added = await api("/me/passkeys", {
    method: "POST",
    body: { challenge_id: begun.data.challenge_id, name, response },
  });
  if (!added.ok) return say(problem(added, "pages.securityJs.addFailed"), "error");
  $("passkey-name").value = "";
  // The first second factor comes with recovery codes, shown this once.
  const codes = added.data.recovery_codes || [];
  showCodes(codes);
  say(
    codes.length
      ? t("pages.securityJs.addedSaveCodes", { name: added.data.name })
      : t("pages.securityJs.added", { name: added.data.name }),
    "success",
  );
  await Promise.all([loadPasskeys(), loadFactors()]);
});

// Sessions.
async function loadSessions() {
  const result = await api("/me/sessions");
  if (!result.ok) return say(problem(result, "pages.securityJs.sessionsLoadFailed"), "error");
  $("session-list").replaceChildren(
    ...result.data.items.map((session) => {
      const where = t("pages.securityJs.sessionWhere", {
        browser: session.user_agent || t("pages.securityJs.unknownBrowser"),
        address: session.client_address || t("pages.securityJs.unknownAddress"),
      });
      return element("li", {}, [
        element("strong", {}, [session.current ? t("pages.securityJs.thisBrowser") : where]),
        element("p", { class: "hint" }, [
          t("pages.securityJs.sessionDates", {
            signedIn: dateText(session.created_at),
            active: dateText(session.last_used_at),
          }),
        ]),
        button(
          t("pages.securityJs.end"),
          t("pages.securityJs.sessionHidden", { date: dateText(session.created_at) }),
          async () => {
            const ended = await api(`/me/sessions/${session.id}`, { method: "DELETE" });
            if (!ended.ok) return say(problem(ended, "pages.securityJs.endFailed"), "error");
            if (session.current) return leave();
            say(t("pages.securityJs.ended"), "success");
            await loadSessions();
          },
        ),
      ]);
    }),
  );
}

// Applications with access (OpenID Connect consents); the section stays hidden while that is off.
async function loadApps() {
  const result = await api("/me/apps");
  if (!result.ok) return;
  $("apps-section").hidden = false;
  $("apps-empty").hidden = result.data.items.length > 0;
  $("app-list").replaceChildren(
    ...result.data.items.map((app) =>
      element("li", {}, [
        element("strong", {}, [app.client_name]),
        element("p", { class: "hint" }, [
          t("pages.securityJs.appAllowed", { date: dateText(app.granted_at), scope: app.scope }),
        ]),
        button(t("pages.securityJs.removeAccess"), app.client_name, async () => {
          const removed = await api(`/me/apps/${encodeURIComponent(app.client_id)}`, { method: "DELETE" });
          if (!removed.ok) return say(problem(removed, "pages.securityJs.removeAccessFailed"), "error");
          say(t("pages.securityJs.accessRemoved", { name: app.client_name }), "success");
          await loadApps();
        }),
      ]),
    ),
  );
}

// Password.
onSubmit($("password-change"), async () => {
  const result = await api("/me/password", {
    method: "PUT",
    body: { current_password: $("current-password").value, new_password: $("new-password").value },
  });
  $("current-password").value = "";
  $("new-password").value = "";
  if (!result.ok)
    return say(
      problem(result, "pages.securityJs.passwordFailed", {
        401: "pages.securityJs.wrongCurrentPassword",
        400: "pages.securityJs.wrongCurrentPassword",
        422: "pages.securityJs.passwordRefused",
      }),
      "error",
    );
  // Every session ended with the change, this one too.
  await leave();
});

// Linked sign-ins (upstream identities, issue 25): list, unlink, link another.
async function loadIdentities() {
  const providers = await api("/auth/upstream/providers");
  if (!providers.ok || !Array.isArray(providers.data) || providers.data.length === 0) return;
  const result = await api("/me/identities");
  if (!result.ok) return say(problem(result, "pages.securityJs.identitiesLoadFailed"), "error");
  const labels = new Map(providers.data.map((provider) => [provider.name, provider.label]));
  const list = $("identity-list");
  const items = result.data.items.map((identity) => {
    const label = labels.get(identity.provider) ?? identity.provider;
    return element("li", { class: "identity" }, [
      element("strong", {}, [label]),
      element("p", { class: "hint" }, [
        t("pages.securityJs.identityDates", {
          email: identity.email ?? t("pages.securityJs.noEmail"),
          linked: dateText(identity.created_at),
          used: dateText(identity.last_used_at),
        }),
      ]),
      button(t("pages.securityJs.unlink"), label, async () => {
        const removed = await api(`/me/identities/${identity.id}`, { method: "DELETE" });
        if (!removed.ok)
          return say(problem(removed, "pages.securityJs.unlinkFailed", { 409: "pages.securityJs.lastWay" }), "error");
        say(t("pages.securityJs.unlinked", { name: label }), "success");
        await loadIdentities();
      }),
    ]);
  });
  list.replaceChildren(...(items.length > 0 ? items : [element("li", {}, [t("pages.securityJs.noIdentities")])]));
  $("identity-link").replaceChildren(
    ...providers.data.map((provider) => {
      const node = button(
        t("pages.securityJs.link", { name: provider.label }),
        t("pages.securityJs.toThisAccount"),
        async () => {
          const started = await api("/me/identities", { method: "POST", body: { provider: provider.name } });
          if (!started.ok) return say(problem(started, "pages.securityJs.linkFailed"), "error");
          location.assign(started.data.location);
        },
      );
      node.id = `link-${provider.name}`;
      return node;
    }),
  );
  $("identities-section").hidden = false;
}

// Language (issue 37): kept in this browser (the language page's cookie) and saved to the account
// (PATCH /me's `locale`), which its mails follow.
onSubmit($("language-choice"), async () => {
  const locale = $("language-select").value;
  const chosen = await fetch("/language", {
    method: "POST",
    body: new URLSearchParams({ locale, continue: location.pathname }),
    redirect: "manual",
  }).catch(() => null);
  if (chosen === null || (chosen.type !== "opaqueredirect" && !chosen.ok))
    return say(t("pages.securityJs.languageFailed"), "error");
  const saved = await api("/me", { method: "PATCH", body: { locale } });
  if (!saved.ok) return say(problem(saved, "pages.securityJs.languageFailed"), "error");
  location.reload();
});

async function leave() {
  await signOut();
  location.assign("/sign-in#signed-out");
}

$("sign-out").addEventListener("click", () => guarded($("sign-out"), leave));

(async () => {
  if (!(await resume())) {
    location.assign("/sign-in");
    return;
  }
  const me = await api("/me");
  if (!me.ok) return leave();
  $("who").textContent = t("pages.securityJs.who", { email: me.data.email });
  $("content").hidden = false;
  if (!passkeysSupported()) $("passkey-add").hidden = true;
  const linked = location.hash === "#linked";
  if (linked) history.replaceState(null, "", location.pathname);
  await Promise.all([loadFactors(), loadPasskeys(), loadSessions(), loadApps(), loadIdentities()]);
  say(linked ? t("pages.securityJs.linked") : t("pages.securityJs.loaded"), linked ? "success" : "info");
})();
