// Apps (the OAuth / OpenID Connect clients of /clients): the list, the
// registration form in RFC 7591's names with help text, the secret shown once,
// an app's page (redirect URIs, secret rotation with a grace period, deletion)
// and ready-to-paste snippets with this service's issuer filled in.
import { query } from "./api.js";
import { colourField, colourPreview } from "./colour.js";
import { checkbox, confirmAction, emptyState, field, fill, h, secretOnce, statusLine, table, when } from "./ui.js";

export const apps = { path: "apps", title: "Apps", nav: true, render };

async function render(context, [id]) {
  if (id) return appPage(context, id);
  return listPage(context);
}

const lines = (text) =>
  text
    .split(/\s+/)
    .map((line) => line.trim())
    .filter((line) => line !== "");

async function listPage({ api, page }) {
  const status = statusLine();
  const results = h("div", { id: "app-results" });
  const cursors = [];
  let cursor;
  async function load() {
    try {
      const answer = await api.get(`/clients${query({ limit: 20, cursor })}`);
      fill(
        results,
        answer.items.length === 0 && !cursor
          ? emptyState("No apps registered yet. Register one below to let it sign users in.")
          : table(
              "Registered apps, oldest first",
              ["Name", "client_id", "Type", "Registered by"],
              answer.items.map((client) => [
                h("a", { href: `#/apps/${encodeURIComponent(client.client_id)}` }, client.client_name),
                h("code", {}, client.client_id),
                client.token_endpoint_auth_method === "none" ? "Public" : "Confidential",
                client.registered_by,
              ]),
            ),
        h(
          "div",
          { class: "actions" },
          cursors.length > 0
            ? h(
                "button",
                {
                  type: "button",
                  class: "secondary",
                  onclick() {
                    cursor = cursors.pop();
                    load();
                  },
                },
                "Previous page",
              )
            : null,
          answer.next_cursor
            ? h(
                "button",
                {
                  type: "button",
                  class: "secondary",
                  onclick() {
                    cursors.push(cursor);
                    cursor = answer.next_cursor;
                    load();
                  },
                },
                "Next page",
              )
            : null,
        ),
      );
    } catch (error) {
      status.fail(error);
    }
  }
  page("Apps", status.element, results, registerForm(api, load));
  await load();
}

function registerForm(api, reload) {
  const status = statusLine();
  const shown = h("div", { id: "registered" });
  const form = h(
    "form",
    { id: "register-app" },
    field(
      "client_name",
      "client_name",
      h("input", { required: true, maxlength: 200 }),
      "The app's name, shown to users on the sign-in and consent pages.",
    ),
    field(
      "redirect_uris",
      "redirect_uris",
      h("textarea", { rows: 3, spellcheck: "false" }),
      "Where the service sends the browser back with the code, one per line; matched exactly. https, or http on 127.0.0.1 for development.",
    ),
    field(
      "post_logout_redirect_uris",
      "post_logout_redirect_uris (optional)",
      h("textarea", { rows: 2, spellcheck: "false" }),
      "Where the browser may return after signing out (RP-initiated logout), one per line.",
    ),
    field(
      "token_endpoint_auth_method",
      "token_endpoint_auth_method",
      h(
        "select",
        {},
        h("option", { value: "client_secret_basic" }, "client_secret_basic: a server app with a secret (HTTP Basic)"),
        h("option", { value: "client_secret_post" }, "client_secret_post: a server app with a secret (in the form)"),
        h("option", { value: "none" }, "none: a public app (browser or mobile), PKCE only"),
      ),
      "How the app proves itself at the token endpoint. Apps that run in a browser or on a phone cannot keep a secret: choose none.",
    ),
    h(
      "fieldset",
      { "aria-describedby": "grant-hint" },
      h("legend", {}, "grant_types"),
      checkbox("grant-code", "authorization_code (users sign in)", true),
      checkbox("grant-refresh", "refresh_token (the app stays signed in)", true),
      checkbox("grant-client", "client_credentials (the app calls APIs as itself; confidential only)", false),
      h("p", { class: "hint", id: "grant-hint" }, "What the app may exchange at the token endpoint."),
    ),
    field(
      "scope",
      "scope",
      h("input", { value: "openid profile email", spellcheck: "false" }),
      "The scopes the app may ask for, separated by spaces.",
    ),
    checkbox("first_party", "first_party: the service's own app (no consent screen)", false),
    h("button", { type: "submit" }, "Register the app"),
    status.element,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = (id) => form.querySelector(`#${id}`).value;
    const grantTypes = [
      ["grant-code", "authorization_code"],
      ["grant-refresh", "refresh_token"],
      ["grant-client", "client_credentials"],
    ]
      .filter(([id]) => form.querySelector(`#${id}`).checked)
      .map(([, grant]) => grant);
    const signsUsersIn = grantTypes.includes("authorization_code");
    try {
      const created = await api.post("/clients", {
        client_name: value("client_name").trim(),
        redirect_uris: lines(value("redirect_uris")),
        post_logout_redirect_uris: lines(value("post_logout_redirect_uris")),
        token_endpoint_auth_method: value("token_endpoint_auth_method"),
        grant_types: grantTypes,
        response_types: signsUsersIn ? ["code"] : [],
        scope: value("scope").trim(),
        first_party: form.querySelector("#first_party").checked,
      });
      form.reset();
      status.say(`Registered ${created.client_name} (client_id ${created.client_id}).`);
      fill(
        shown,
        created.client_secret ? secretOnce("The app's client_secret", created.client_secret) : null,
        h("p", {}, h("a", { href: `#/apps/${encodeURIComponent(created.client_id)}` }, `Open ${created.client_name}`)),
      );
      reload();
    } catch (error) {
      status.fail(error);
    }
  });
  return h(
    "section",
    { "aria-labelledby": "register-heading" },
    h("h2", { id: "register-heading" }, "Register an app"),
    shown,
    form,
  );
}

async function appPage({ api, page }, id) {
  const path = `/clients/${encodeURIComponent(id)}`;
  const client = await api.get(path);
  const issuer = (await fetch("/.well-known/openid-configuration", { credentials: "omit" }).then((r) => r.json()))
    .issuer;
  const status = statusLine();
  const shown = h("div", {});

  const uris = h(
    "form",
    { id: "edit-uris" },
    field(
      "edit-redirect",
      "redirect_uris",
      h("textarea", { rows: 3, spellcheck: "false" }),
      "One per line; matched exactly.",
    ),
    field("edit-logout", "post_logout_redirect_uris", h("textarea", { rows: 2, spellcheck: "false" }), "One per line."),
    h("button", { type: "submit" }, "Save the addresses"),
  );
  uris.querySelector("#edit-redirect").value = client.redirect_uris.join("\n");
  uris.querySelector("#edit-logout").value = client.post_logout_redirect_uris.join("\n");
  uris.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api.patch(path, {
        redirect_uris: lines(uris.querySelector("#edit-redirect").value),
        post_logout_redirect_uris: lines(uris.querySelector("#edit-logout").value),
      });
      status.say("Saved.");
    } catch (error) {
      status.fail(error);
    }
  });

  const rotate = h(
    "form",
    { id: "rotate-secret" },
    field(
      "grace",
      "Grace period (hours)",
      h("input", { type: "number", min: 0, max: 720, value: 24, inputmode: "numeric" }),
      "How long the current secret keeps working beside the new one, so the app's deployments can switch. 0 ends it at once (a leaked secret).",
    ),
    h("button", { type: "submit", class: "danger" }, "Rotate the secret"),
  );
  rotate.addEventListener("submit", async (event) => {
    event.preventDefault();
    const hours = Number(rotate.querySelector("#grace").value || 0);
    if (
      !(await confirmAction(
        `Give ${client.client_name} a new secret? The current one stops working in ${hours} hours.`,
        "Rotate",
      ))
    )
      return;
    try {
      const rotated = await api.post(`${path}/secret`, { grace_seconds: Math.round(hours * 3600) });
      fill(shown, secretOnce("The new client_secret", rotated.client_secret));
      status.say("The secret was rotated.");
    } catch (error) {
      status.fail(error);
    }
  });

  const brandSection = await appBranding(api, path, client);

  const remove = h(
    "button",
    {
      type: "button",
      class: "danger",
      id: "delete-app",
      async onclick() {
        if (
          !(await confirmAction(
            `Delete ${client.client_name}? Its users are signed out of it and it cannot sign anyone in again.`,
            "Delete",
          ))
        )
          return;
        try {
          await api.delete(path);
          location.hash = "#/apps";
        } catch (error) {
          status.fail(error);
        }
      },
    },
    "Delete the app",
  );

  page(
    client.client_name,
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "client_id"),
      h("dd", {}, h("code", {}, client.client_id)),
      h("dt", {}, "Type"),
      h(
        "dd",
        {},
        client.token_endpoint_auth_method === "none"
          ? "Public (PKCE, no secret)"
          : `Confidential (${client.token_endpoint_auth_method})`,
      ),
      h("dt", {}, "grant_types"),
      h("dd", {}, client.grant_types.join(", ") || "—"),
      h("dt", {}, "scope"),
      h("dd", {}, client.scope || "—"),
      h("dt", {}, "Registered"),
      h("dd", {}, when(new Date(client.client_id_issued_at * 1000).toISOString())),
    ),
    status.element,
    shown,
    h("section", { "aria-labelledby": "uris-heading" }, h("h2", { id: "uris-heading" }, "Addresses"), uris),
    client.token_endpoint_auth_method === "none"
      ? null
      : h("section", { "aria-labelledby": "secret-heading" }, h("h2", { id: "secret-heading" }, "Secret"), rotate),
    brandSection,
    h(
      "section",
      { "aria-labelledby": "snippets-heading" },
      h("h2", { id: "snippets-heading" }, "Use it in your app"),
      snippets(issuer, client),
    ),
    h("section", { "aria-labelledby": "danger-heading" }, h("h2", { id: "danger-heading" }, "Delete"), remove),
    h("p", {}, h("a", { href: "#/apps" }, "Back to apps")),
  );
}

/**
 * The app's own brand on the sign-in and consent pages of its requests (issue 37): its colour
 * (`brand_color`, PATCH; null is the service's colour) and its logo (PUT/DELETE /clients/{id}/logo).
 * The client's answer does not say whether it has a logo, so the section shows the logo it uploads.
 */
async function appBranding(api, path, client) {
  const service = await api.get("/branding");
  const status = statusLine();
  const preview = colourPreview("app-brand-preview");
  const colour = colourField(
    "app-brand-color",
    "brand_color",
    "The colour of this app's sign-in and consent pages, as #RRGGBB; the same WCAG AA contrast check as the service's colour. Empty: the service's colour.",
    (value) => preview.show(value ?? service.primary_color),
  );
  const error = h("p", { class: "error field-error", id: "app-brand-color-error", hidden: true });
  colour.text.setAttribute("aria-describedby", "app-brand-color-hint app-brand-color-error");
  colour.element.append(error, preview.element);
  let current = client.brand_color ?? null;
  colour.set(current);
  preview.show(current ?? service.primary_color);

  async function save(value) {
    error.hidden = true;
    colour.text.removeAttribute("aria-invalid");
    try {
      const saved = await api.patch(path, { brand_color: value });
      current = saved.brand_color ?? null;
      colour.set(current);
      preview.show(current ?? service.primary_color);
      status.say(current ? `Saved: its pages are in ${current}.` : "Its pages use the service's colour.");
    } catch (failure) {
      if (failure?.status === 422) {
        error.textContent = failure.detail;
        error.hidden = false;
        colour.text.setAttribute("aria-invalid", "true");
        status.fail({ detail: "Nothing was saved: the colour was refused." });
        colour.text.focus();
      } else status.fail(failure);
    }
  }

  const colourForm = h(
    "form",
    { id: "app-brand-form", novalidate: true },
    colour.element,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Save the colour"),
      h(
        "button",
        { type: "button", class: "secondary", id: "app-brand-color-reset", onclick: () => save(null) },
        "Use the service's colour",
      ),
    ),
  );
  colourForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = colour.value();
    save(typed === "" ? null : typed.toLowerCase());
  });

  const logoNow = h("div", { id: "app-logo" });
  const logoInput = h("input", { type: "file", accept: "image/png,image/jpeg,image/webp,image/gif" });
  const logoForm = h(
    "form",
    { id: "app-logo-form" },
    field(
      "app-logo-file",
      "Logo",
      logoInput,
      "Shown with its name on its sign-in and consent pages. PNG, JPEG, WebP or GIF, at most 256 KiB. Its logo_uri is never fetched.",
    ),
    h("button", { type: "submit" }, "Upload the logo"),
  );
  logoForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = logoInput.files?.[0];
    if (!file) {
      status.fail({ detail: "Choose an image file first." });
      return;
    }
    try {
      const uploaded = await api.upload(`${path}/logo`, file);
      logoForm.reset();
      fill(logoNow, h("img", { src: uploaded.logo_url, alt: `The logo of ${client.client_name}`, class: "logo-now" }));
      status.say("The logo was uploaded: its pages show it now.");
    } catch (failure) {
      status.fail(failure);
    }
  });
  const removeLogo = h(
    "button",
    {
      type: "button",
      class: "secondary",
      id: "app-logo-remove",
      async onclick() {
        if (
          !(await confirmAction(
            `Remove the logo of ${client.client_name}? Its pages show the service's logo.`,
            "Remove",
          ))
        )
          return;
        try {
          await api.delete(`${path}/logo`);
          fill(logoNow);
          status.say("Its logo was removed (if it had one): its pages show the service's logo.");
        } catch (failure) {
          status.fail(failure);
        }
      },
    },
    "Remove its logo",
  );

  return h(
    "section",
    { "aria-labelledby": "app-brand-heading" },
    h("h2", { id: "app-brand-heading" }, "Branding"),
    colourForm,
    logoNow,
    logoForm,
    removeLogo,
    status.element,
  );
}

/** Ready-to-paste configuration for three common libraries, this service's issuer filled in. */
function snippets(issuer, client) {
  const redirect = client.redirect_uris[0] ?? "https://app.example.com/callback";
  const secretLine = client.token_endpoint_auth_method === "none" ? "" : "\n  clientSecret: process.env.CLIENT_SECRET,";
  const authJs = `// auth.ts (Auth.js / NextAuth v5)
import NextAuth from "next-auth";
export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [{
    id: "user-token-service",
    name: ${JSON.stringify(client.client_name)},
    type: "oidc",
    issuer: ${JSON.stringify(issuer)},
    clientId: ${JSON.stringify(client.client_id)},${secretLine}
    checks: ["pkce", "state"],
  }],
});`;
  const oidcClientTs = `// oidc-client-ts (a browser app)
import { UserManager } from "oidc-client-ts";
const users = new UserManager({
  authority: ${JSON.stringify(issuer)},
  client_id: ${JSON.stringify(client.client_id)},
  redirect_uri: ${JSON.stringify(redirect)},
  scope: ${JSON.stringify(client.scope || "openid profile email")},
});
await users.signinRedirect();`;
  const openidClient = `// openid-client v6 (a Node.js server)
import * as client from "openid-client";
const config = await client.discovery(new URL(${JSON.stringify(issuer)}), ${JSON.stringify(client.client_id)}${
    client.token_endpoint_auth_method === "none" ? ", undefined, client.None()" : ", process.env.CLIENT_SECRET"
  });
const verifier = client.randomPKCECodeVerifier();
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: ${JSON.stringify(redirect)},
  scope: ${JSON.stringify(client.scope || "openid profile email")},
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: "S256",
});`;
  return h(
    "div",
    { class: "snippets" },
    [
      ["Auth.js", authJs],
      ["oidc-client-ts", oidcClientTs],
      ["openid-client", openidClient],
    ].map(([name, code]) =>
      h(
        "details",
        {},
        h("summary", {}, name),
        h("pre", { tabindex: 0, "aria-label": `${name} snippet` }, h("code", {}, code)),
      ),
    ),
  );
}
