// The console's few DOM helpers: h() builds elements (text is always set as
// text, never as HTML, so nothing the API answers can become markup), a
// confirmation dialog for destructive actions, and the status line that
// reads API errors out in words.

/**
 * An element with attributes (`on*` functions become listeners; false/null/undefined are left out)
 * and children (strings become text nodes).
 * @param {string} tag
 * @param {Record<string, unknown>} [attributes]
 * @param {...(Node|string|null|undefined|false|Array<Node|string|null|undefined|false>)} children
 * @returns {HTMLElement}
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

/** Replaces the children of `element`. */
export function fill(element, ...children) {
  element.replaceChildren();
  for (const child of children.flat()) if (child) element.append(child);
  return element;
}

/** A message in words for any failure: the API's `detail`, else what the browser said. */
export function describeError(error) {
  if (error && typeof error === "object" && "detail" in error && typeof error.detail === "string") return error.detail;
  if (error instanceof Error) return error.message;
  return "Something went wrong.";
}

/** The status line of a screen: polite for news, alert for errors. */
export function statusLine() {
  const line = h("p", { role: "status", "aria-live": "polite", class: "status" });
  return {
    element: line,
    say(text) {
      line.className = "status";
      line.textContent = text;
    },
    fail(error) {
      line.className = "status error";
      line.textContent = describeError(error);
    },
    clear() {
      line.textContent = "";
    },
  };
}

/**
 * Asks before a destructive action, in a modal dialog (focus stays inside it; Escape cancels).
 * @param {string} question
 * @param {string} actionLabel
 * @returns {Promise<boolean>}
 */
export function confirmAction(question, actionLabel) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-question" },
      h("p", { id: "confirm-question" }, question),
      h(
        "form",
        { method: "dialog", class: "actions" },
        h("button", { type: "submit", value: "cancel", class: "secondary" }, "Cancel"),
        h("button", { type: "submit", value: "confirm", class: "danger" }, actionLabel),
      ),
    );
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A secret shown once: the value, a copy button and the warning. */
export function secretOnce(label, secret) {
  const status = statusLine();
  const code = h("code", { class: "secret", id: "shown-secret" }, secret);
  return h(
    "div",
    { class: "secret-once", role: "region", "aria-label": label },
    h("p", { class: "warning" }, `${label}: copy it now. It is shown only this once; the service keeps only its hash.`),
    code,
    h(
      "button",
      {
        type: "button",
        class: "secondary",
        async onclick() {
          try {
            await navigator.clipboard.writeText(secret);
            status.say("Copied.");
          } catch {
            status.say("The browser refused the clipboard: select the text and copy it.");
          }
        },
      },
      "Copy",
    ),
    status.element,
  );
}

/** A table with a caption and headers; `rows` are arrays of cells (strings or nodes). */
export function table(caption, headers, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      {},
      h("caption", {}, caption),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          headers.map((name) => h("th", { scope: "col" }, name)),
        ),
      ),
      h(
        "tbody",
        {},
        rows.map((cells) =>
          h(
            "tr",
            {},
            cells.map((cell) => h("td", {}, cell)),
          ),
        ),
      ),
    ),
  );
}

/** A list's empty state: what there is not, and what to do. */
export function emptyState(text) {
  return h("p", { class: "empty" }, text);
}

/** A labelled input with an optional hint. */
export function field(id, label, input, hint) {
  if (hint) input.setAttribute("aria-describedby", `${id}-hint`);
  input.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    input,
    hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null,
  );
}

/** A checkbox with its label after it. */
export function checkbox(id, label, checked, attributes = {}) {
  return h(
    "div",
    { class: "check" },
    h("input", { type: "checkbox", id, checked: checked === true, ...attributes }),
    h("label", { for: id }, label),
  );
}

/** A date-time as the reader's locale writes it. */
export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** What the server put in the console's meta element (data-sign-in-page is `consoleSettings.signInPage`). */
export const consoleSettings = document.querySelector('meta[name="admin-console"]')?.dataset ?? {};

/** A space-separated list of the console's settings (data-audit-types: "auditTypes"). */
export function serverList(name) {
  return (consoleSettings[name] ?? "").split(" ").filter(Boolean);
}
