// Audit log: the service-wide log (GET /events) with its filters (user, type,
// outcome, address, time range), cursor pages, each row linking to the
// user's page, and the export as CSV or JSON Lines. The export is fetched
// with the Authorization header and saved through a Blob and an <a download>,
// so the token never goes into a URL (history, logs, Referer).
import { query } from "./api.js";
import { emptyState, field, fill, h, serverList, statusLine, table, when } from "./ui.js";

const PAGE_SIZE = 50;

/** The audit event types, the service's own list (docs/reference/audit-events.md, the API's enum). */
const EVENT_TYPES = serverList("auditTypes");

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const audit = { path: "audit", title: "Audit log", nav: true, render };

/** An instant from a datetime-local input (the reader's time zone), as RFC 3339; "" when empty. */
function instant(value) {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

/** The filters as the API takes them; a user given by e-mail is looked up first. */
async function readFilters(api, form) {
  const value = (id) => form.querySelector(`#${id}`).value.trim();
  const user = value("audit-user");
  let userId = "";
  if (user) {
    if (UUID.test(user)) userId = user;
    else {
      const found = await api.get(`/users${query({ email: user, limit: 1 })}`);
      if (found.items.length === 0) throw new Error(`No user has the e-mail address ${user}.`);
      userId = found.items[0].id;
    }
  }
  return {
    user_id: userId,
    type: value("audit-type"),
    outcome: value("audit-outcome"),
    address: value("audit-address"),
    since: instant(value("audit-since")),
    until: instant(value("audit-until")),
  };
}

function userCell(event) {
  if (!event.user_id) return "—";
  return h("a", { href: `#/users/${encodeURIComponent(event.user_id)}` }, event.user_email ?? event.user_id);
}

/** The admin who acted on the user's account, linked to the admin's page; "—" when the user or the service acted. */
function actorCell(event) {
  if (!event.actor_id) return "—";
  return h("a", { href: `#/users/${encodeURIComponent(event.actor_id)}` }, event.actor_email ?? event.actor_id);
}

/** The file name the service proposes (Content-Disposition), else one of ours. */
function fileName(disposition, extension) {
  const match = /filename="([^"]+)"/.exec(disposition ?? "");
  return match ? match[1] : `events-${new Date().toISOString().slice(0, 10)}.${extension}`;
}

async function render({ api, page }, [userId]) {
  const status = statusLine();
  const results = h("div", { id: "audit-results" });
  /** The cursors of the newer pages, for "Newer". */
  const cursors = [];
  let cursor;
  let filters = { user_id: userId && UUID.test(userId) ? userId : "" };

  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter the audit log", id: "audit-filters" },
    field(
      "audit-user",
      "User",
      h("input", { autocomplete: "off", maxlength: 320, value: filters.user_id }),
      "An e-mail address or a user id.",
    ),
    field(
      "audit-type",
      "Event",
      h(
        "select",
        {},
        h("option", { value: "" }, "Any"),
        EVENT_TYPES.map((type) => h("option", { value: type }, type)),
      ),
    ),
    field(
      "audit-outcome",
      "Outcome",
      h("input", { autocomplete: "off", maxlength: 200 }),
      "Its start: refused matches refused_inactive.",
    ),
    field("audit-address", "Address", h("input", { autocomplete: "off", maxlength: 100 }), "The client's IP address."),
    field("audit-since", "Since", h("input", { type: "datetime-local" })),
    field("audit-until", "Until", h("input", { type: "datetime-local" })),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      filters = await readFilters(api, form);
    } catch (error) {
      status.fail(error);
      return;
    }
    cursors.length = 0;
    cursor = undefined;
    load();
  });

  async function exportAs(format, extension) {
    status.say("Preparing the export…");
    try {
      const { blob, disposition } = await api.download(`/events${query({ ...filters, format })}`);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: fileName(disposition, extension), hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      // The browser has the file once the click is handled; the object URL is freed after it.
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      status.say(`Exported the events matching the filters as ${extension.toUpperCase()}.`);
    } catch (error) {
      status.fail(error);
    }
  }

  async function load() {
    status.say("Loading…");
    try {
      const answer = await api.get(`/events${query({ limit: PAGE_SIZE, cursor, ...filters })}`);
      status.clear();
      const filtered = Object.values(filters).some((value) => value);
      fill(
        results,
        answer.items.length === 0
          ? emptyState(
              filtered
                ? "No event matches these filters. Widen the time range or clear a filter."
                : "No events recorded yet. Sign-ins, sign-ups and admin actions will show here.",
            )
          : table(
              "Events, newest first",
              ["When", "Event", "Outcome", "User", "By", "Address"],
              answer.items.map((event) => [
                when(event.created_at),
                event.type,
                event.outcome,
                userCell(event),
                actorCell(event),
                event.client_address ?? "—",
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
                "Newer",
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
                "Older",
              )
            : null,
        ),
      );
    } catch (error) {
      status.fail(error);
    }
  }

  page(
    "Audit log",
    h(
      "p",
      { class: "hint" },
      "Every audit event of the service, newest first. Events do not record which app was involved, so rows link to their user only.",
    ),
    form,
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        { type: "button", class: "secondary", id: "export-csv", onclick: () => exportAs("csv", "csv") },
        "Export as CSV",
      ),
      h(
        "button",
        { type: "button", class: "secondary", id: "export-jsonl", onclick: () => exportAs("jsonl", "jsonl") },
        "Export as JSON Lines",
      ),
    ),
    status.element,
    results,
  );
  await load();
}
