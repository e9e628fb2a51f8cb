// The message format of the catalogues: a subset of ICU MessageFormat, enough
// for whole sentences with values in them, so no sentence is ever built by
// concatenation. `{name}` puts a value in; `{count, plural, one {# minute}
// other {# minutes}}` picks a form by the language's plural rules (Intl's),
// with `=N` for exact numbers and `#` for the number in the reader's format.
// Messages are parsed once, when first used, and kept.
export type MessageValues = Readonly<Record<string, string | number>>;

type Part =
  | string
  | { readonly name: string }
  | { readonly name: string; readonly forms: ReadonlyMap<string, readonly Part[]> };

/** Thrown for a message the format cannot read: a catalogue error, found by the catalogue test. */
export class MessageSyntaxError extends Error {}

function parse(text: string, start: number, inPlural: boolean): [Part[], number] {
  const parts: Part[] = [];
  let literal = "";
  let i = start;
  while (i < text.length) {
    const char = text[i]!;
    if (char === "}") {
      if (!inPlural) throw new MessageSyntaxError(`unexpected } at ${i}`);
      break;
    }
    if (char === "#" && inPlural) {
      if (literal) parts.push(literal);
      literal = "";
      parts.push({ name: "#" });
      i++;
      continue;
    }
    if (char !== "{") {
      literal += char;
      i++;
      continue;
    }
    if (literal) parts.push(literal);
    literal = "";
    const close = text.indexOf("}", i);
    const comma = text.indexOf(",", i);
    if (close < 0) throw new MessageSyntaxError(`unclosed { at ${i}`);
    if (comma < 0 || comma > close) {
      parts.push({ name: text.slice(i + 1, close).trim() });
      i = close + 1;
      continue;
    }
    const name = text.slice(i + 1, comma).trim();
    const kindEnd = text.indexOf(",", comma + 1);
    if (kindEnd < 0 || text.slice(comma + 1, kindEnd).trim() !== "plural") {
      throw new MessageSyntaxError(`only {name} and {name, plural, ...} are supported (at ${i})`);
    }
    const forms = new Map<string, readonly Part[]>();
    let j = kindEnd + 1;
    for (;;) {
      while (text[j] === " " || text[j] === "\n") j++;
      if (text[j] === "}") break;
      const open = text.indexOf("{", j);
      if (open < 0) throw new MessageSyntaxError(`plural form without a message at ${j}`);
      const selector = text.slice(j, open).trim();
      const [form, end] = parse(text, open + 1, true);
      if (text[end] !== "}") throw new MessageSyntaxError(`unclosed plural form at ${open}`);
      forms.set(selector, form);
      j = end + 1;
    }
    if (!forms.has("other")) throw new MessageSyntaxError(`plural without an "other" form at ${i}`);
    parts.push({ name, forms });
    i = j + 1;
  }
  if (literal) parts.push(literal);
  return [parts, i];
}

/** The message's parts; throws MessageSyntaxError for one the format cannot read. */
export function parseMessage(text: string): readonly Part[] {
  const [parts, end] = parse(text, 0, false);
  if (end !== text.length) throw new MessageSyntaxError(`unexpected } at ${end}`);
  return parts;
}

/** The names of the values a message takes (for the catalogue test: every language takes the same). */
export function valueNames(parts: readonly Part[], into = new Set<string>()): Set<string> {
  for (const part of parts) {
    if (typeof part === "string") continue;
    if (part.name !== "#") into.add(part.name);
    if ("forms" in part) for (const form of part.forms.values()) valueNames(form, into);
  }
  return into;
}

const pluralRules = new Map<string, Intl.PluralRules>();
const numberFormats = new Map<string, Intl.NumberFormat>();

function cached<T>(map: Map<string, T>, locale: string, make: () => T): T {
  let value = map.get(locale);
  if (value === undefined) {
    value = make();
    map.set(locale, value);
  }
  return value;
}

/** The message with its values put in; `encode` is applied to literal text and values alike (HTML pages). */
export function formatParts(
  parts: readonly Part[],
  locale: string,
  values: MessageValues = {},
  encode: (text: string) => string = (text) => text,
  count?: number,
): string {
  let out = "";
  for (const part of parts) {
    if (typeof part === "string") {
      out += encode(part);
      continue;
    }
    if (part.name === "#" && count !== undefined) {
      out += encode(cached(numberFormats, locale, () => new Intl.NumberFormat(locale)).format(count));
      continue;
    }
    const value = values[part.name];
    if (!("forms" in part)) {
      out += encode(value === undefined ? `{${part.name}}` : String(value));
      continue;
    }
    const number = Number(value);
    const category = cached(pluralRules, locale, () => new Intl.PluralRules(locale)).select(number);
    const form = part.forms.get(`=${number}`) ?? part.forms.get(category) ?? part.forms.get("other")!;
    out += formatParts(form, locale, values, encode, number);
  }
  return out;
}
