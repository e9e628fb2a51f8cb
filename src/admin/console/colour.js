// Brand colours in the console (issue 37): a colour picker beside its hex
// text field, and a live preview of a button and a link in the colour with
// its WCAG contrast ratios, computed here by the formulas the service uses
// (src/branding/colour.ts). The service stays the judge: a colour is refused
// by the API (422), and the console shows that refusal; the numbers here only
// tell the operator before they save. The preview is coloured through the
// CSSOM (element.style.setProperty), which the pages' `style-src 'self'`
// allows: it is not an inline style attribute.
import { field, h } from "./ui.js";

/** The text on a primary-coloured button, and the pages' background behind links (src/branding/colour.ts). */
const BUTTON_TEXT = "#ffffff";
const PAGE_BACKGROUND = "#f5f5f4";
/** WCAG 2.x AA for normal text. */
const AA_CONTRAST = 4.5;

const HEX = /^#[0-9a-fA-F]{6}$/;

/** The colour lower-cased when it is #RRGGBB, else undefined. */
export function parseColour(text) {
  const trimmed = String(text ?? "").trim();
  return HEX.test(trimmed) ? trimmed.toLowerCase() : undefined;
}

function luminance(colour) {
  const channel = (offset) => {
    const value = Number.parseInt(colour.slice(offset, offset + 2), 16) / 255;
    return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** WCAG 2.x contrast ratio of two #rrggbb colours, 1 to 21. */
export function contrastRatio(a, b) {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

/** As the service writes it: rounded down to one decimal, so 4.49 never reads "4.5:1". */
const ratioText = (ratio) => `${(Math.floor(ratio * 10) / 10).toFixed(1)}:1`;

/**
 * A colour field: `<input type="color">` and the hex text field, kept in step. The text field is the
 * value (it can say "empty"); the picker follows it whenever it holds a colour.
 * @param {string} id the text field's id (the picker's is `${id}-picker`)
 * @param {string} label
 * @param {string} hint
 * @param {(colour: string | undefined) => void} onChange
 */
export function colourField(id, label, hint, onChange) {
  const text = h("input", {
    type: "text",
    maxlength: 7,
    spellcheck: "false",
    autocomplete: "off",
    pattern: "#[0-9a-fA-F]{6}",
    placeholder: "#RRGGBB",
  });
  const picker = h("input", {
    type: "color",
    id: `${id}-picker`,
    class: "colour-picker",
    "aria-label": `${label}: pick`,
  });
  text.addEventListener("input", () => {
    const colour = parseColour(text.value);
    if (colour) picker.value = colour;
    onChange(colour);
  });
  picker.addEventListener("input", () => {
    text.value = picker.value;
    onChange(parseColour(picker.value));
  });
  const element = field(id, label, text, hint);
  element.classList.add("colour-field");
  element.insertBefore(picker, text);
  return {
    element,
    text,
    picker,
    /** The text field's value, trimmed. */
    value: () => text.value.trim(),
    /** Shows `colour` (or empties the text field for null). */
    set(colour) {
      text.value = colour ?? "";
      const parsed = parseColour(colour);
      if (parsed) picker.value = parsed;
      onChange(parsed);
    },
  };
}

/**
 * The preview: a button and a link in the colour, on the pages' background, and the two contrast
 * ratios the service checks.
 * @param {string} id
 */
export function colourPreview(id) {
  const button = h("span", { class: "preview-button" }, "Sign in");
  const link = h("span", { class: "preview-link" }, "Forgot your password?");
  const verdict = h("p", { class: "contrast", id: `${id}-contrast` });
  const element = h(
    "div",
    { class: "brand-preview", id, role: "group", "aria-label": "Preview" },
    h("p", { class: "preview-sample" }, button, " ", link),
    verdict,
  );
  return {
    element,
    /** @param {string | undefined} colour */
    show(colour) {
      if (!colour) {
        button.style.removeProperty("background-color");
        button.style.removeProperty("border-color");
        link.style.removeProperty("color");
        element.classList.add("empty");
        verdict.className = "contrast";
        verdict.textContent = "No colour to preview: write one as #RRGGBB.";
        return;
      }
      element.classList.remove("empty");
      button.style.setProperty("background-color", colour);
      button.style.setProperty("border-color", colour);
      link.style.setProperty("color", colour);
      const onButton = contrastRatio(colour, BUTTON_TEXT);
      const asLink = contrastRatio(colour, PAGE_BACKGROUND);
      const readable = onButton >= AA_CONTRAST && asLink >= AA_CONTRAST;
      verdict.className = readable ? "contrast" : "contrast warning";
      verdict.textContent =
        `Contrast: white text on it ${ratioText(onButton)}, as a link on the page background ${ratioText(asLink)}. ` +
        (readable
          ? "Both reach WCAG AA (4.5:1)."
          : "WCAG AA needs 4.5:1 for both: the service will refuse this colour.");
    },
  };
}
