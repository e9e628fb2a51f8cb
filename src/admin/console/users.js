// Users: the list (GET /users: e-mail prefix and name search, filters on
// state, role, verification, second factor and upstream provider, cursor
// pages), creating a user, and a user's page (record, activate/deactivate,
// admin role, verify e-mail, password-reset mail, second factor reset, then
// the lists of user-sections.js: sessions, passkeys, apps, linked sign-ins,
// audit trail).
import { query } from "./api.js";
import { checkbox, confirmAction, emptyState, field, fill, h, statusLine, table, when } from "./ui.js";
import { appsSection, eventsSection, identitiesSection, passkeysSection, sessionsSection } from "./user-sections.js";

const PAGE_SIZE = 20;

export const users = { path: "users", title: "Users", nav: true, render };

async function render(context, [id]) {
  if (id) return userPage(context, id);
  return listPage(context);
}

function listPage({ api, page }) {
  const status = statusLine();
  const results = h("div", { id: "user-results" });
  /** The query's filters, by the API's names; "" is "any". */
  const filters = {
    email_prefix: "",
    name: "",
    is_active: "",
    is_admin: "",
    is_verified: "",
    has_second_factor: "",
    upstream_provider: "",
  };
  /** The cursors of the pages before this one, for "Previous". */
  const cursors = [];
  let cursor;

  const choice = (id, label, options) =>
    field(
      id,
      label,
      h(
        "select",
        {},
        options.map(([value, text]) => h("option", { value }, text)),
      ),
    );
  const yesNo = (any, yes, no) => [
    ["", any],
    ["true", yes],
    ["false", no],
  ];
  // Shown once GET /auth/upstream/providers names a provider (it answers 404 while none is configured).
  const providerChoice = h("div", { hidden: true });
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Find users" },
    field(
      "filter-email",
      "E-mail begins with",
      h("input", { type: "search", autocomplete: "off", maxlength: 254 }),
      'The start of the address, any case: "ada" finds ada@example.com.',
    ),
    field("filter-name", "Name contains", h("input", { type: "search", autocomplete: "off", maxlength: 200 })),
    choice("filter-active", "State", yesNo("Any", "Active", "Deactivated")),
    choice("filter-admin", "Role", yesNo("Any", "Admins", "Not admins")),
    choice("filter-verified", "E-mail", yesNo("Any", "Verified", "Not verified")),
    choice("filter-mfa", "Second factor", yesNo("Any", "Has one", "Has none")),
    providerChoice,
    h("button", { type: "submit" }, "Find"),
  );
  api
    .get("/auth/upstream/providers")
    .then((providers) => {
      if (!Array.isArray(providers) || providers.length === 0) return;
      fill(
        providerChoice,
        choice("filter-provider", "Linked sign-in", [
          ["", "Any"],
          ...providers.map((provider) => [provider.name, provider.label ?? provider.name]),
        ]),
      );
      providerChoice.hidden = false;
    })
    .catch(() => undefined); // no upstream provider configured: no such filter
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = (id) => form.querySelector(id)?.value.trim() ?? "";
    filters.email_prefix = value("#filter-email");
    filters.name = value("#filter-name");
    filters.is_active = value("#filter-active");
    filters.is_admin = value("#filter-admin");
    filters.is_verified = value("#filter-verified");
    filters.has_second_factor = value("#filter-mfa");
    filters.upstream_provider = providerChoice.hidden ? "" : value("#filter-provider");
    cursors.length = 0;
    cursor = undefined;
    load();
  });

  async function load() {
    status.say("Loading…");
    try {
      const answer = await api.get(`/users${query({ limit: PAGE_SIZE, cursor, ...filters })}`);
      status.clear();
      const rows = answer.items.map((user) => [
        h("a", { href: `#/users/${encodeURIComponent(user.id)}` }, user.email),
        user.full_name ?? "—",
        user.is_active ? "Active" : "Deactivated",
        user.is_admin ? "Admin" : "User",
        user.email_verified ? "Yes" : "No",
        when(user.created_at),
      ]);
      const pager = h(
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
      );
      fill(
        results,
        rows.length === 0
          ? emptyState(
              Object.values(filters).some((value) => value !== "")
                ? "No user matches these filters. Clear them, or create the user below."
                : "No users yet. Create the first one below, or let people sign up.",
            )
          : table("Users, oldest first", ["E-mail", "Name", "State", "Role", "E-mail verified", "Created"], rows),
        pager,
      );
    } catch (error) {
      status.fail(error);
    }
  }

  page("Users", form, status.element, results, createForm(api, load));
  load();
}

function createForm(api, reload) {
  const status = statusLine();
  const form = h(
    "form",
    { id: "create-user" },
    field("new-email", "E-mail", h("input", { type: "email", required: true, maxlength: 254, autocomplete: "off" })),
    field(
      "new-password",
      "Initial password",
      h("input", { type: "password", required: true, minlength: 8, maxlength: 256, autocomplete: "new-password" }),
      "At least 8 characters; give it to the person through a safe channel, or let them reset it.",
    ),
    field("new-name", "Full name (optional)", h("input", { maxlength: 200, autocomplete: "off" })),
    checkbox("new-admin", "Make this user an admin", false),
    h("button", { type: "submit" }, "Create the user"),
    status.element,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = form.querySelector("#new-name").value.trim();
    try {
      const created = await api.post("/users", {
        email: form.querySelector("#new-email").value.trim(),
        password: form.querySelector("#new-password").value,
        full_name: name === "" ? null : name,
        is_admin: form.querySelector("#new-admin").checked,
      });
      form.reset();
      status.say(`Created ${created.email}.`);
      reload();
    } catch (error) {
      status.fail(error);
    }
  });
  return h(
    "section",
    { "aria-labelledby": "create-user-heading" },
    h("h2", { id: "create-user-heading" }, "Create a user"),
    form,
  );
}

/** A user's page; `notice` is what the action that redrew it says. */
async function userPage({ api, page, me }, id, notice) {
  const path = `/users/${encodeURIComponent(id)}`;
  const user = await api.get(path);
  const status = statusLine();
  const self = user.id === me.id;

  /** Runs an action, then redraws the page with what it did, or says why it failed. */
  async function act(run, done) {
    try {
      await run();
      await userPage({ api, page, me }, id, done);
    } catch (error) {
      status.fail(error);
    }
  }

  const record = h(
    "form",
    { id: "user-record" },
    field("user-email", "E-mail", h("input", { type: "email", required: true, maxlength: 254, value: user.email })),
    field("user-name", "Full name", h("input", { maxlength: 200, value: user.full_name ?? "" })),
    h("button", { type: "submit" }, "Save"),
  );
  record.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = record.querySelector("#user-name").value.trim();
    act(
      () =>
        api.patch(path, {
          email: record.querySelector("#user-email").value.trim(),
          full_name: name === "" ? null : name,
        }),
      "Saved.",
    );
  });

  const actions = h(
    "div",
    { class: "actions" },
    user.is_active
      ? h(
          "button",
          {
            type: "button",
            class: "danger",
            id: "deactivate",
            async onclick() {
              if (
                await confirmAction(
                  `Deactivate ${user.email}? They cannot sign in, and their tokens stop working.`,
                  "Deactivate",
                )
              )
                act(() => api.patch(path, { is_active: false }), "Deactivated.");
            },
          },
          "Deactivate",
        )
      : h(
          "button",
          {
            type: "button",
            id: "activate",
            onclick: () => act(() => api.patch(path, { is_active: true }), "Activated."),
          },
          "Activate",
        ),
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        id: "toggle-admin",
        async onclick() {
          const question = user.is_admin
            ? `Remove ${user.email}'s admin role?`
            : `Make ${user.email} an admin? Admins manage every user, app and webhook.`;
          if (await confirmAction(question, user.is_admin ? "Remove admin role" : "Make admin"))
            act(() => api.patch(path, { is_admin: !user.is_admin }), "Role changed.");
        },
      },
      user.is_admin ? "Remove admin role" : "Make admin",
    ),
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        id: "toggle-verified",
        async onclick() {
          // Un-verifying is the one that takes something away: ask first.
          if (
            user.email_verified &&
            !(await confirmAction(
              `Mark ${user.email} as not verified? Apps that require a verified address may refuse the user until they verify it again.`,
              "Mark not verified",
            ))
          )
            return;
          act(
            () => api.patch(path, { email_verified: !user.email_verified }),
            user.email_verified
              ? "The e-mail address is marked not verified."
              : "The e-mail address is marked verified.",
          );
        },
      },
      user.email_verified ? "Mark e-mail not verified" : "Mark e-mail verified",
    ),
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        id: "send-password-reset",
        async onclick() {
          if (!user.is_active) {
            status.say(
              `${user.email} is deactivated and cannot sign in, so no reset mail is sent: activate the account first.`,
            );
            return;
          }
          if (
            !(await confirmAction(
              `Mail ${user.email} a password-reset link? An earlier link stops working; their password stays until they use it.`,
              "Send the mail",
            ))
          )
            return;
          try {
            await api.post(`${path}/password-reset`);
            status.say(`A password-reset mail is on its way to ${user.email}. You never see the link.`);
          } catch (error) {
            status.fail(error);
          }
        },
      },
      "Send a password-reset mail",
    ),
    h(
      "button",
      {
        type: "button",
        class: "danger",
        id: "reset-mfa",
        async onclick() {
          if (
            await confirmAction(
              `Reset ${user.email}'s second factors? Their authenticator app, recovery codes and passkeys are removed; the password alone signs in until they set up new ones.`,
              "Reset second factors",
            )
          )
            act(() => api.delete(`${path}/mfa`), "Second factors reset. The user was told by mail.");
        },
      },
      "Reset second factors",
    ),
    self
      ? null
      : h(
          "button",
          {
            type: "button",
            class: "danger",
            id: "delete-user",
            async onclick() {
              if (await confirmAction(`Delete ${user.email} for good? This cannot be undone.`, "Delete")) {
                try {
                  await api.delete(path);
                  location.hash = "#/users";
                } catch (error) {
                  status.fail(error);
                }
              }
            },
          },
          "Delete",
        ),
  );

  // The upstream providers name the linked sign-ins; none configured answers 404: no such section's data.
  const providers = await api.get("/auth/upstream/providers").catch(() => []);
  page(
    user.email,
    h(
      "p",
      { class: "facts" },
      `${user.is_active ? "Active" : "Deactivated"} · ${user.is_admin ? "Admin" : "User"} · e-mail ${user.email_verified ? "verified" : "not verified"} · created ${when(user.created_at)}`,
    ),
    status.element,
    h("section", { "aria-labelledby": "record-heading" }, h("h2", { id: "record-heading" }, "Record"), record),
    h("section", { "aria-labelledby": "actions-heading" }, h("h2", { id: "actions-heading" }, "Actions"), actions),
    sessionsSection(api, path, user, status),
    passkeysSection(api, path, user, status),
    appsSection(api, path, user, status),
    identitiesSection(api, path, user, status, Array.isArray(providers) ? providers : []),
    eventsSection(api, path),
    h("p", {}, h("a", { href: "#/users" }, "Back to users")),
  );
  if (notice) status.say(notice);
}
