// Webhooks: the endpoints (/webhooks), their event types, enable/disable,
// the signing secret (shown once at creation and rotation), the delivery log
// with the receiver's status codes, delivering one event again, and sending a
// test event (POST /webhooks/{id}/test).
import { query } from "./api.js";
import {
  checkbox,
  confirmAction,
  emptyState,
  field,
  fill,
  h,
  secretOnce,
  serverList,
  statusLine,
  table,
  when,
} from "./ui.js";

export const webhooks = { path: "webhooks", title: "Webhooks", nav: true, render };

/** The webhook event types, the service's own list (the OpenAPI document's enum). */
const EVENT_TYPES = serverList("webhookTypes");

async function render(context, [id]) {
  if (id) return endpointPage(context, id);
  return listPage(context);
}

function eventChoices(prefix, chosen) {
  return h(
    "fieldset",
    { class: "choices" },
    h("legend", {}, "Event types"),
    EVENT_TYPES.map((type) =>
      checkbox(`${prefix}-${type.replace(".", "-")}`, type, chosen.includes(type), { value: type }),
    ),
  );
}

const chosenTypes = (form) => [...form.querySelectorAll("fieldset.choices input:checked")].map((input) => input.value);

async function listPage({ api, page }) {
  const status = statusLine();
  const results = h("div", { id: "webhook-results" });
  const shown = h("div", {});
  async function load() {
    try {
      const answer = await api.get(`/webhooks${query({ limit: 100 })}`);
      fill(
        results,
        answer.items.length === 0
          ? emptyState("No webhook endpoints yet. Add one below to have account events POSTed to your system.")
          : table(
              "Webhook endpoints, oldest first",
              ["Address", "Events", "State"],
              answer.items.map((endpoint) => [
                h("a", { href: `#/webhooks/${encodeURIComponent(endpoint.id)}` }, endpoint.url),
                endpoint.event_types.join(", "),
                endpoint.enabled ? "On" : `Off${endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ""}`,
              ]),
            ),
        answer.next_cursor ? h("p", { class: "hint" }, "Only the first 100 endpoints are listed.") : null,
      );
    } catch (error) {
      status.fail(error);
    }
  }
  const form = h(
    "form",
    { id: "create-webhook" },
    field(
      "webhook-url",
      "Address (url)",
      h("input", { type: "url", required: true, maxlength: 2000 }),
      "Where events are POSTed, signed by the Standard Webhooks scheme.",
    ),
    eventChoices("create", ["user.created"]),
    field("webhook-description", "Description (optional)", h("input", { maxlength: 500 })),
    h("button", { type: "submit" }, "Add the endpoint"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const description = form.querySelector("#webhook-description").value.trim();
    try {
      const created = await api.post("/webhooks", {
        url: form.querySelector("#webhook-url").value.trim(),
        event_types: chosenTypes(form),
        description: description === "" ? null : description,
      });
      form.reset();
      fill(shown, secretOnce("The endpoint's signing secret", created.secret));
      status.say("Added.");
      load();
    } catch (error) {
      status.fail(error);
    }
  });
  page(
    "Webhooks",
    status.element,
    results,
    h(
      "section",
      { "aria-labelledby": "add-webhook-heading" },
      h("h2", { id: "add-webhook-heading" }, "Add an endpoint"),
      shown,
      form,
    ),
  );
  await load();
}

async function endpointPage({ api, page }, id) {
  const path = `/webhooks/${encodeURIComponent(id)}`;
  const endpoint = await api.get(path);
  const status = statusLine();
  const shown = h("div", {});
  const reload = () => endpointPage({ api, page }, id);

  const edit = h(
    "form",
    { id: "edit-webhook" },
    field(
      "edit-url",
      "Address (url)",
      h("input", { type: "url", required: true, maxlength: 2000, value: endpoint.url }),
    ),
    eventChoices("edit", endpoint.event_types),
    h("button", { type: "submit" }, "Save"),
  );
  edit.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api.patch(path, { url: edit.querySelector("#edit-url").value.trim(), event_types: chosenTypes(edit) });
      status.say("Saved.");
    } catch (error) {
      status.fail(error);
    }
  });

  const actions = h(
    "div",
    { class: "actions" },
    h(
      "button",
      {
        type: "button",
        id: "toggle-webhook",
        class: endpoint.enabled ? "secondary" : "",
        async onclick() {
          if (
            endpoint.enabled &&
            !(await confirmAction("Turn this endpoint off? Events wait in its queue until it is on again.", "Turn off"))
          )
            return;
          try {
            await api.patch(path, { enabled: !endpoint.enabled });
            await reload();
          } catch (error) {
            status.fail(error);
          }
        },
      },
      endpoint.enabled ? "Turn off" : "Turn on",
    ),
    // Issue 35: POST /webhooks/{id}/test, a signed webhook.test event to this endpoint only.
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        id: "send-test-event",
        disabled: !endpoint.enabled,
        async onclick() {
          try {
            const sent = await api.post(`${path}/test`);
            status.say(
              `A test event (webhook-id ${sent.event_id}) is queued; it arrives within seconds and shows in the delivery log below (reload it with "Refresh the log").`,
            );
          } catch (error) {
            status.fail(error);
          }
        },
      },
      "Send a test event",
    ),
    endpoint.enabled
      ? null
      : h(
          "p",
          { class: "hint" },
          "Turn the endpoint on to send it a test event: an endpoint that is off receives nothing.",
        ),
    h(
      "button",
      {
        type: "button",
        class: "danger",
        id: "rotate-webhook-secret",
        async onclick() {
          if (
            !(await confirmAction(
              "Make a new signing secret? The current one keeps signing beside it for the grace period.",
              "Rotate",
            ))
          )
            return;
          try {
            const rotated = await api.post(`${path}/secrets`);
            fill(shown, secretOnce("The new signing secret", rotated.secret));
            status.say(
              `The secret was rotated; the previous one signs until ${when(rotated.previous_secret_expires_at)}.`,
            );
          } catch (error) {
            status.fail(error);
          }
        },
      },
      "Rotate the secret",
    ),
    h(
      "button",
      {
        type: "button",
        class: "danger",
        id: "delete-webhook",
        async onclick() {
          if (
            !(await confirmAction("Delete this endpoint? Its queued events and its delivery log go with it.", "Delete"))
          )
            return;
          try {
            await api.delete(path);
            location.hash = "#/webhooks";
          } catch (error) {
            status.fail(error);
          }
        },
      },
      "Delete",
    ),
  );

  const deliveries = h(
    "section",
    { "aria-labelledby": "deliveries-heading" },
    h("h2", { id: "deliveries-heading" }, "Delivery log"),
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        id: "refresh-deliveries",
        onclick() {
          for (const old of deliveries.querySelectorAll(".delivery-page")) old.remove();
          fillDeliveries(api, path, deliveries, status);
        },
      },
      "Refresh the log",
    ),
  );
  page(
    endpoint.url,
    h(
      "p",
      { class: "facts" },
      `${endpoint.enabled ? "On" : "Off"}${endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ""} · created ${when(endpoint.created_at)}`,
    ),
    status.element,
    shown,
    h(
      "section",
      { "aria-labelledby": "webhook-actions-heading" },
      h("h2", { id: "webhook-actions-heading" }, "Actions"),
      actions,
    ),
    h(
      "section",
      { "aria-labelledby": "edit-webhook-heading" },
      h("h2", { id: "edit-webhook-heading" }, "Address and events"),
      edit,
    ),
    deliveries,
    h("p", {}, h("a", { href: "#/webhooks" }, "Back to webhooks")),
  );
  fillDeliveries(api, path, deliveries, status);
}

async function fillDeliveries(api, path, section, status, cursor) {
  const holder = h("div", { class: "delivery-page" });
  section.append(holder);
  try {
    const answer = await api.get(`${path}/deliveries${query({ limit: 20, cursor })}`);
    fill(
      holder,
      answer.items.length === 0 && !cursor
        ? emptyState("Nothing delivered yet: events of the chosen types are sent as they happen.")
        : table(
            "Delivery attempts, newest first",
            ["When", "Event", "Attempt", "Answer", "Time", "Error", "Action"],
            answer.items.map((delivery) => [
              when(delivery.created_at),
              delivery.type,
              String(delivery.attempt),
              delivery.status_code === null ? "none" : String(delivery.status_code),
              `${delivery.duration_ms} ms`,
              delivery.error ?? "—",
              h(
                "button",
                {
                  type: "button",
                  class: "secondary",
                  "aria-label": `Deliver again: ${delivery.type} event ${delivery.event_id}`,
                  async onclick() {
                    try {
                      await api.post(`${path}/deliveries`, { event_id: delivery.event_id });
                      status.say("Queued again; it is delivered within seconds.");
                    } catch (error) {
                      status.fail(error);
                    }
                  },
                },
                "Deliver again",
              ),
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
                fillDeliveries(api, path, section, status, answer.next_cursor);
              },
            },
            "Older attempts",
          )
        : null,
    );
  } catch (error) {
    fill(holder, h("p", { class: "error" }, error.detail ?? "The delivery log could not be read."));
  }
}
