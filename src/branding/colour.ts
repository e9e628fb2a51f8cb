// Brand colours (issue 37): a colour is `#RRGGBB`, and a primary colour must
// stay readable where the pages use it: behind the buttons' white text, and as
// the links' colour on the page's background. Both pairs must reach WCAG 2.x
// AA for normal text (4.5:1), by WCAG's relative luminance and contrast
// ratio formulas. The same check refuses a setting at start-up and a value
// sent to the admin API (422).

/** The text on a primary-coloured button. */
export const BUTTON_TEXT = "#ffffff";
/** The page's background (src/pages/account.css, body), behind the header's and footer's links. */
export const PAGE_BACKGROUND = "#f5f5f4";
/** WCAG 2.x success criterion 1.4.3 (AA), normal text. */
export const AA_CONTRAST = 4.5;

const HEX = /^#[0-9a-fA-F]{6}$/;

/** The colour, lower-cased, when it is `#RRGGBB`; undefined otherwise. */
export function parseColour(text: string): string | undefined {
  return HEX.test(text) ? text.toLowerCase() : undefined;
}

/** WCAG 2.x relative luminance of an `#rrggbb` colour. */
export function relativeLuminance(colour: string): number {
  const channel = (offset: number) => {
    const value = Number.parseInt(colour.slice(offset, offset + 2), 16) / 255;
    return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** WCAG 2.x contrast ratio of two colours, from 1 to 21. */
export function contrastRatio(a: string, b: string): number {
  const [light, dark] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** A ratio as people read it: rounded down to one decimal (4.49 is 4.4:1, never "4.5:1" refused). */
const ratioText = (ratio: number) => `${(Math.floor(ratio * 10) / 10).toFixed(1)}:1`;

/**
 * Why `text` cannot be a primary colour, in one sentence naming `field`; undefined when it can. A colour
 * that is not `#RRGGBB`, then white button text on it, then it as link text on the page's background.
 */
export function primaryColourProblem(field: string, text: string): string | undefined {
  const colour = parseColour(text);
  if (colour === undefined) return `${field} must be a colour written #RRGGBB, got "${text}"`;
  const onButton = contrastRatio(colour, BUTTON_TEXT);
  if (onButton < AA_CONTRAST)
    return `${field} ${colour} on white text has contrast ${ratioText(onButton)}; WCAG AA needs at least 4.5:1`;
  const asLink = contrastRatio(colour, PAGE_BACKGROUND);
  if (asLink < AA_CONTRAST)
    return `${field} ${colour} as link text on the page background ${PAGE_BACKGROUND} has contrast ${ratioText(asLink)}; WCAG AA needs at least 4.5:1`;
  return undefined;
}

/** The text colour for a primary-coloured surface: white or near-black, whichever contrasts more. */
export function onPrimary(colour: string): string {
  return contrastRatio(colour, BUTTON_TEXT) >= contrastRatio(colour, "#1c1917") ? BUTTON_TEXT : "#1c1917";
}
