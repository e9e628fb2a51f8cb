// Users: the list (GET /users with its filters, cursor pages), creating a
// user, and a user's page (record, activate/deactivate, admin role, second
// factor reset, linked identities, audit trail). Sessions, passkeys and apps
// of a user come as their own sections once the API serves them.
import { query } from "./api.js";
import { checkbox, confirmAction, emptyState, field, fill, h, statusLine, table, when } from "./ui.js";

const PAGE_SIZE = 20;

export const users = { path: "users", title: "Users", nav: true, render };

async function render(context, [id]) {
  if (id) return userPage(context, id);
  return listPage(context);
}

function listPage({ api, page }) {
  const status = statusLine();
  const results = h("div", { id: "user-results" });
  const filters = { email: "", is_active: "", is_admin: "" };
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
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Find users" },
    field(
      "filter-email",
      "E-mail",
      h("input", { type: "email", autocomplete: "off" }),
      "The whole address (any case).",
    ),
    choice("filter-active", "State", [
      ["", "Any"],
      ["true", "Active"],
      ["false", "Deactivated"],
    ]),
    choice("filter-admin", "Role", [
      ["", "Any"],
      ["true", "Admins"],
      ["false", "Not admins"],
    ]),
    h("button", { type: "submit" }, "Find"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    filters.email = form.querySelector("#filter-email").value.trim();
    filters.is_active = form.querySelector("#filter-active").value;
    filters.is_admin = form.querySelector("#filter-admin").value;
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
              filters.email || filters.is_active || filters.is_admin
                ? "No user matches these filters. Clear them, or create the user below."
                : "No users yet. Create the first one below, or let people sign up.",
            )
          : table("Users, oldest first", ["E-mail", "Name", "State", "Role", "Created"], rows),
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

  const identities = h(
    "section",
    { "aria-labelledby": "identities-heading" },
    h("h2", { id: "identities-heading" }, "Linked sign-ins"),
  );
  const events = h(
    "section",
    { "aria-labelledby": "events-heading" },
    h("h2", { id: "events-heading" }, "Audit trail"),
  );
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
    identities,
    events,
    h("p", {}, h("a", { href: "#/users" }, "Back to users")),
  );
  if (notice) status.say(notice);
  fillIdentities(api, path, identities);
  fillEvents(api, path, events);
}

async function fillIdentities(api, path, section) {
  try {
    const answer = await api.get(`${path}/identities`);
    const items = answer.items ?? answer;
    section.append(
      items.length === 0
        ? emptyState("No upstream sign-in is linked. The user links one from their security page.")
        : table(
            "Linked upstream identities",
            ["Provider", "E-mail", "Linked"],
            items.map((identity) => [
              identity.provider,
              identity.email ?? "—",
              when(identity.created_at ?? identity.linked_at),
            ]),
          ),
    );
  } catch (error) {
    section.append(
      emptyState(
        error.status === 404
          ? "No upstream provider is configured (UPSTREAM_PROVIDERS), so no sign-in can be linked."
          : (error.detail ?? "The linked sign-ins could not be read."),
      ),
    );
  }
}

async function fillEvents(api, path, section, cursor) {
  const holder = h("div", {});
  section.append(holder);
  try {
    const answer = await api.get(`${path}/events${query({ limit: 20, cursor })}`);
    fill(
      holder,
      answer.items.length === 0 && !cursor
        ? emptyState("No events recorded for this user yet.")
        : table(
            "Events, oldest first",
            ["When", "Event", "Outcome", "Address"],
            answer.items.map((event) => [
              when(event.created_at),
              event.type,
              event.outcome ?? "—",
              event.client_address ?? "—",
            ]),
          ),
      answer.next_cursor
        ? h(
            "button",
            {
              type: "button",
              class: "secondary",
              onclick(click) {
                click.currentTarget.remove();
                fillEvents(api, path, section, answer.next_cursor);
              },
            },
            "More events",
          )
        : null,
    );
  } catch (error) {
    fill(holder, h("p", { class: "error" }, error.detail ?? "The audit trail could not be read."));
  }
}
