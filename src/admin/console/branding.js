// Branding (issue 37): the brand the hosted pages and mails show, from
// GET /branding, with where each value comes from (its BRAND_* setting, or
// set through the API); a form that saves the fields changed (PATCH
// /branding) and puts one back to its setting (PATCH with null); the API's
// refusal (422) next to the field it names; a live preview of the colour with
// its contrast ratios (colour.js); the logo (PUT /branding/logo with the
// file's own type, DELETE /branding/logo); and the sign-in page in a new tab.
import { colourField, colourPreview } from "./colour.js";
import { confirmAction, consoleSettings, describeError, field, fill, h, statusLine, table } from "./ui.js";

export const branding = { path: "branding", title: "Branding", nav: true, render };

/** The brand's fields, in the API's names, with their settings. */
const FIELDS = [
  {
    name: "product_name",
    label: "Product name",
    setting: "BRAND_PRODUCT_NAME",
    hint: "On every page's header and in the mails. At most 80 characters.",
    input: () => h("input", { maxlength: 80, autocomplete: "off" }),
  },
  {
    name: "primary_color",
    label: "Primary colour",
    setting: "BRAND_PRIMARY_COLOR",
    hint: "The buttons and links, as #RRGGBB. White text on it, and it as link text on the page background, must reach WCAG AA contrast (4.5:1).",
  },
  {
    name: "support_email",
    label: "Support e-mail",
    setting: "BRAND_SUPPORT_EMAIL",
    hint: "Where the pages and mails send people for help.",
    input: () => h("input", { type: "email", autocomplete: "off", spellcheck: "false" }),
  },
  {
    name: "terms_url",
    label: "Terms of service URL",
    setting: "BRAND_TERMS_URL",
    hint: "An https address, linked in every page's footer.",
    input: () => h("input", { type: "url", autocomplete: "off", spellcheck: "false" }),
  },
  {
    name: "privacy_url",
    label: "Privacy notice URL",
    setting: "BRAND_PRIVACY_URL",
    hint: "An https address, linked in every page's footer.",
    input: () => h("input", { type: "url", autocomplete: "off", spellcheck: "false" }),
  },
];

const LOGO_TYPES = "image/png,image/jpeg,image/webp,image/gif";

const signInPage = () => consoleSettings.signInPage ?? "/sign-in";

const sourceText = (field, source) =>
  source === "api"
    ? "Set here (the /branding API)."
    : `From its setting, ${field.setting} (or that setting's default).`;

/** The field a 422 detail is about: the API names it first (e.g. "primary_color #ffcc00 on white text …"). */
function fieldOf(detail) {
  const text = String(detail ?? "");
  return FIELDS.find(
    (f) => text.startsWith(`${f.name} `) || text.includes(`/${f.name}`) || text.includes(`'${f.name}'`),
  );
}

async function render({ api, page }) {
  let brand = await api.get("/branding");
  const status = statusLine();
  const effective = h("div", { id: "brand-effective" });
  const preview = colourPreview("brand-preview");

  // One row per field: its input, where the value comes from, a reset button, and the API's refusal.
  const rows = FIELDS.map((f) => {
    const id = `brand-${f.name.replaceAll("_", "-")}`;
    let input;
    let element;
    let set;
    if (f.name === "primary_color") {
      const colour = colourField(id, f.label, f.hint, (value) => preview.show(value));
      input = colour.text;
      element = colour.element;
      set = colour.set;
    } else {
      input = f.input();
      element = field(id, f.label, input, f.hint);
      set = (value) => {
        input.value = value ?? "";
      };
    }
    const source = h("p", { class: "hint source", id: `${id}-source` });
    const error = h("p", { class: "error field-error", id: `${id}-error`, hidden: true });
    input.setAttribute("aria-describedby", `${id}-hint ${id}-source ${id}-error`);
    const reset = h(
      "button",
      {
        type: "button",
        class: "secondary reset",
        id: `${id}-reset`,
        "aria-label": `Reset to the setting: ${f.label.toLowerCase()}`,
        async onclick() {
          clearErrors();
          try {
            brand = await api.patch("/branding", { [f.name]: null });
            show(brand);
            status.say(`${f.label} is back to its setting, ${f.setting}.`);
          } catch (failure) {
            refuse(failure);
          }
        },
      },
      "Reset to the setting",
    );
    element.append(source, reset, error);
    if (f.name === "primary_color") element.append(preview.element);
    return { field: f, input, element, set, source, reset, error };
  });

  function clearErrors() {
    for (const row of rows) {
      row.error.hidden = true;
      row.error.textContent = "";
      row.input.removeAttribute("aria-invalid");
    }
    status.clear();
  }

  /** The API's refusal: next to the field it names (focused), else in the status line. */
  function refuse(failure) {
    const row = failure?.status === 422 ? rows.find((r) => r.field === fieldOf(failure.detail)) : undefined;
    if (!row) {
      status.fail(failure);
      return;
    }
    row.error.textContent = describeError(failure);
    row.error.hidden = false;
    row.input.setAttribute("aria-invalid", "true");
    status.fail({ detail: `Nothing was saved: ${row.field.label.toLowerCase()} was refused.` });
    row.input.focus();
  }

  function showLogo() {
    fill(
      logoNow,
      brand.logo_url
        ? h("img", { src: brand.logo_url, alt: "The current logo", class: "logo-now", id: "brand-logo-now" })
        : h("p", { class: "empty" }, "No logo: the pages show the product's name alone. Upload one below."),
    );
    removeLogo.hidden = !brand.logo_url;
  }

  /** Puts `brand` on the screen: the effective values, the inputs, sources and reset buttons, the logo. */
  function show(next) {
    brand = next;
    fill(
      effective,
      table(
        "The brand the pages and mails show now",
        ["Field", "Value", "From"],
        FIELDS.map((f) => [
          f.label,
          brand[f.name] ?? "—",
          brand.sources[f.name] === "api" ? "Set here (API)" : h("span", {}, "Setting ", h("code", {}, f.setting)),
        ]),
      ),
    );
    for (const row of rows) {
      row.set(brand[row.field.name]);
      row.source.textContent = sourceText(row.field, brand.sources[row.field.name]);
      row.reset.hidden = brand.sources[row.field.name] !== "api";
    }
    showLogo();
  }

  const form = h(
    "form",
    { id: "brand-form", novalidate: true },
    rows.map((row) => row.element),
    h("button", { type: "submit" }, "Save"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    // Only the fields changed: a value left as it is keeps coming from where it comes from. An emptied
    // field is null, which puts it back to its setting (the API cannot set an empty value).
    const change = {};
    for (const row of rows) {
      const typed = row.input.value.trim();
      const value = typed === "" ? null : row.field.name === "primary_color" ? typed.toLowerCase() : typed;
      if (value !== (brand[row.field.name] ?? null)) change[row.field.name] = value;
    }
    if (Object.keys(change).length === 0) {
      status.say("Nothing to save: no field was changed.");
      return;
    }
    try {
      show(await api.patch("/branding", change));
      status.say("Saved. The pages and mails show the new brand now.");
    } catch (failure) {
      refuse(failure);
    }
  });

  const logoNow = h("div", { id: "brand-logo" });
  const logoStatus = statusLine();
  const logoInput = h("input", { type: "file", accept: LOGO_TYPES });
  const logoForm = h(
    "form",
    { id: "brand-logo-form" },
    field("brand-logo-file", "New logo", logoInput, "PNG, JPEG, WebP or GIF, at most 256 KiB (SVG is refused)."),
    h("button", { type: "submit" }, "Upload the logo"),
  );
  logoForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = logoInput.files?.[0];
    if (!file) {
      logoStatus.fail({ detail: "Choose an image file first." });
      return;
    }
    try {
      show(await api.upload("/branding/logo", file));
      logoForm.reset();
      logoStatus.say("The logo was uploaded: the pages show it now.");
    } catch (failure) {
      logoStatus.fail(failure);
    }
  });
  const removeLogo = h(
    "button",
    {
      type: "button",
      class: "danger",
      id: "brand-logo-remove",
      async onclick() {
        if (!(await confirmAction("Remove the logo? The pages show the product's name alone.", "Remove"))) return;
        try {
          await api.delete("/branding/logo");
          show(await api.get("/branding"));
          logoStatus.say("The logo was removed.");
        } catch (failure) {
          logoStatus.fail(failure);
        }
      },
    },
    "Remove the logo",
  );

  page(
    "Branding",
    h(
      "p",
      { class: "hint" },
      "The product's name, colour, logo and links on every hosted page and mail. Each field comes from its BRAND_* setting until it is set here; reset it to go back to the setting.",
    ),
    h(
      "p",
      {},
      h("a", { href: signInPage(), target: "_blank", rel: "noopener", id: "open-sign-in" }, "Open the sign-in page"),
      " (in a new tab)",
    ),
    status.element,
    h("section", { "aria-labelledby": "brand-now-heading" }, h("h2", { id: "brand-now-heading" }, "Now"), effective),
    h("section", { "aria-labelledby": "brand-edit-heading" }, h("h2", { id: "brand-edit-heading" }, "Change"), form),
    h(
      "section",
      { "aria-labelledby": "brand-logo-heading" },
      h("h2", { id: "brand-logo-heading" }, "Logo"),
      logoNow,
      removeLogo,
      logoForm,
      logoStatus.element,
    ),
  );
  show(brand);
}
