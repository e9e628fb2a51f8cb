// The security page: authenticator app (QR code, key for manual entry, a code
// to confirm, recovery codes shown once), recovery codes (how many are left,
// new ones for the password), passkeys (add, rename, remove), signed-in
// sessions (see, end), the password, and signing out. Everything goes through
// the API with the access token (see session.js); all text is set with
// textContent, never parsed as HTML.
import { api, detail, resume, say, signOut } from "./session.js";
import { ceremonyError, createPasskey, passkeysSupported } from "./webauthn.js";

const $ = (id) => document.getElementById(id);
const dateText = (iso) => (iso ? new Date(iso).toLocaleString() : "never");

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

/** A button whose visible word is followed by words only a screen reader needs ("Remove" + "passkey Laptop"). */
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
    $("totp-state").textContent = "Authenticator apps are not available on this server.";
    $("totp-start").hidden = true;
    $("codes-section").hidden = true;
    return;
  }
  const { totp_enabled, recovery_codes_remaining } = result.data;
  $("totp-state").textContent = totp_enabled
    ? "An authenticator app is turned on: signing in with your password also asks for its code."
    : "No authenticator app is set up.";
  $("totp-start").hidden = totp_enabled;
  $("totp-disable").hidden = !totp_enabled;
  if (totp_enabled) $("totp-enrol").hidden = true;
  $("codes-section").hidden = false;
  $("codes-state").textContent = `Recovery codes left: ${recovery_codes_remaining}.`;
}

$("totp-start").addEventListener("click", () =>
  guarded($("totp-start"), async () => {
    const result = await api("/me/totp", { method: "POST", body: {} });
    if (!result.ok) return say(detail(result, "The authenticator app could not be set up."), "error");
    $("totp-qr").src = result.data.qr_code;
    $("totp-secret").textContent = result.data.secret;
    $("totp-enrol").hidden = false;
    $("totp-start").hidden = true;
    say("Scan the QR code (or type the key), then enter the code the app shows.");
    $("totp-code").focus();
  }),
);

onSubmit($("totp-confirm"), async () => {
  const code = $("totp-code").value.trim();
  const result = await api("/me/totp/confirm", { method: "POST", body: { code } });
  $("totp-code").value = "";
  if (!result.ok) return say(detail(result, "The code was not accepted. Try the next one."), "error");
  $("totp-enrol").hidden = true;
  const codes = result.data.recovery_codes || [];
  showCodes(codes);
  say(
    codes.length
      ? "The authenticator app is on. Save your recovery codes now: they are shown only once."
      : "The authenticator app is on.",
    "success",
  );
  await loadFactors();
});

onSubmit($("totp-disable"), async () => {
  const password = $("disable-password").value;
  const code = $("disable-code").value.trim();
  const body = /^\d{6}$/.test(code) ? { password, code } : { password, recovery_code: code };
  const result = await api("/me/totp/disable", { method: "POST", body });
  $("disable-password").value = "";
  $("disable-code").value = "";
  if (!result.ok) return say(detail(result, "The authenticator app could not be turned off."), "error");
  say("The authenticator app is off.", "success");
  await loadFactors();
});

onSubmit($("codes-regenerate"), async () => {
  const result = await api("/me/recovery-codes", { method: "POST", body: { password: $("codes-password").value } });
  $("codes-password").value = "";
  if (!result.ok) return say(detail(result, "New recovery codes could not be made."), "error");
  showCodes(result.data.recovery_codes || []);
  say("New recovery codes: save them now. The old ones no longer work.", "success");
  await loadFactors();
});

// Passkeys.
async function loadPasskeys() {
  const result = await api("/me/passkeys");
  if (!result.ok) return say(detail(result, "Your passkeys could not be loaded."), "error");
  const list = $("passkey-list");
  if (result.data.length === 0) {
    list.replaceChildren(element("li", {}, ["No passkeys yet."]));
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
      const label = element("label", { htmlFor: field.id, class: "visually-hidden" }, [`New name for ${passkey.name}`]);
      return element("li", {}, [
        element("strong", {}, [passkey.name]),
        element("p", { class: "hint" }, [
          `Added ${dateText(passkey.created_at)}, last used ${dateText(passkey.last_used_at)}`,
        ]),
        label,
        field,
        element("div", { class: "actions" }, [
          button("Rename", `passkey ${passkey.name}`, async () => {
            const renamed = await api(`/me/passkeys/${passkey.id}`, {
              method: "PATCH",
              body: { name: field.value.trim() },
            });
            if (!renamed.ok) return say(detail(renamed, "The passkey could not be renamed."), "error");
            say(`Renamed to ${renamed.data.name}.`, "success");
            await loadPasskeys();
          }),
          button("Remove", `passkey ${passkey.name}`, async () => {
            const removed = await api(`/me/passkeys/${passkey.id}`, { method: "DELETE" });
            if (!removed.ok) return say(detail(removed, "The passkey could not be removed."), "error");
            say(`Passkey ${passkey.name} removed.`, "success");
            await loadPasskeys();
          }),
        ]),
      ]);
    }),
  );
}

onSubmit($("passkey-add"), async () => {
  if (!passkeysSupported()) return say("This browser does not support passkeys.", "error");
  const name = $("passkey-name").value.trim();
  const begun = await api("/me/passkeys/registration-options", { method: "POST" });
  if (!begun.ok) return say(detail(begun, "A passkey cannot be added right now."), "error");
  say("Follow your browser's prompt to create the passkey…");
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
  if (!added.ok) return say(detail(added, "The passkey could not be added."), "error");
  $("passkey-name").value = "";
  // The first second factor comes with recovery codes, shown this once.
  const codes = added.data.recovery_codes || [];
  showCodes(codes);
  say(
    codes.length
      ? `Passkey ${added.data.name} added. Save your recovery codes now: they are shown only once.`
      : `Passkey ${added.data.name} added. You can sign in with it now.`,
    "success",
  );
  await Promise.all([loadPasskeys(), loadFactors()]);
});

// Sessions.
async function loadSessions() {
  const result = await api("/me/sessions");
  if (!result.ok) return say(detail(result, "Your sessions could not be loaded."), "error");
  $("session-list").replaceChildren(
    ...result.data.items.map((session) => {
      const where = `${session.user_agent || "Unknown browser"}, ${session.client_address || "unknown address"}`;
      return element("li", {}, [
        element("strong", {}, [session.current ? "This browser" : where]),
        element("p", { class: "hint" }, [
          `Signed in ${dateText(session.created_at)}, last active ${dateText(session.last_used_at)}`,
        ]),
        button("End", `session from ${dateText(session.created_at)}`, async () => {
          const ended = await api(`/me/sessions/${session.id}`, { method: "DELETE" });
          if (!ended.ok) return say(detail(ended, "The session could not be ended."), "error");
          if (session.current) return leave();
          say("Session ended.", "success");
          await loadSessions();
        }),
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
        element("p", { class: "hint" }, [`Allowed ${dateText(app.granted_at)}: ${app.scope}`]),
        button("Remove access", app.client_name, async () => {
          const removed = await api(`/me/apps/${encodeURIComponent(app.client_id)}`, { method: "DELETE" });
          if (!removed.ok) return say(detail(removed, "The access could not be removed."), "error");
          say(`${app.client_name} no longer has access.`, "success");
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
  if (!result.ok) return say(detail(result, "The password could not be changed."), "error");
  // Every session ended with the change, this one too.
  await leave();
});

// Linked sign-ins (upstream identities, issue 25): list, unlink, link another.
async function loadIdentities() {
  const providers = await api("/auth/upstream/providers");
  if (!providers.ok || !Array.isArray(providers.data) || providers.data.length === 0) return;
  const result = await api("/me/identities");
  if (!result.ok) return say(detail(result, "Your linked sign-ins could not be loaded."), "error");
  const labels = new Map(providers.data.map((provider) => [provider.name, provider.label]));
  const list = $("identity-list");
  const items = result.data.items.map((identity) => {
    const label = labels.get(identity.provider) ?? identity.provider;
    return element("li", { class: "identity" }, [
      element("strong", {}, [label]),
      element("p", { class: "hint" }, [
        `${identity.email ?? "no e-mail"}; linked ${dateText(identity.created_at)}, last used ${dateText(identity.last_used_at)}`,
      ]),
      button("Unlink", label, async () => {
        const removed = await api(`/me/identities/${identity.id}`, { method: "DELETE" });
        if (!removed.ok) return say(detail(removed, "The sign-in could not be unlinked."), "error");
        say(`${label} is unlinked.`, "success");
        await loadIdentities();
      }),
    ]);
  });
  list.replaceChildren(...(items.length > 0 ? items : [element("li", {}, ["No linked sign-ins."])]));
  $("identity-link").replaceChildren(
    ...providers.data.map((provider) => {
      const node = button(`Link ${provider.label}`, "to this account", async () => {
        const started = await api("/me/identities", { method: "POST", body: { provider: provider.name } });
        if (!started.ok) return say(detail(started, "Linking could not start."), "error");
        location.assign(started.data.location);
      });
      node.id = `link-${provider.name}`;
      return node;
    }),
  );
  $("identities-section").hidden = false;
}

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
  $("who").textContent = `Signed in as ${me.data.email}.`;
  $("content").hidden = false;
  if (!passkeysSupported()) $("passkey-add").hidden = true;
  const linked = location.hash === "#linked";
  if (linked) history.replaceState(null, "", location.pathname);
  await Promise.all([loadFactors(), loadPasskeys(), loadSessions(), loadApps(), loadIdentities()]);
  say(linked ? "The sign-in is linked." : "Your security settings are loaded.", linked ? "success" : "info");
})();
