// A small User-Agent reader: the browser family and the operating system,
// enough for a person to recognise "Firefox on Windows" in a notification and
// for the known-devices check to tell one kind of client from another. It
// knows the common browsers and systems and, for anything else (curl, an app's
// HTTP library), names the first product token. Versions are left out on
// purpose: they change with every update, and a device is not new because its
// browser updated. Never throws, whatever the header holds.

export interface UserAgentFamily {
  browser: string;
  system: string;
}

/** Checked in order: Edge, Opera and Samsung Internet also say "Chrome", and Chrome also says "Safari". */
const BROWSERS: readonly [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\//, "Edge"],
  [/\b(?:OPR|Opera)\//, "Opera"],
  [/\bSamsungBrowser\//, "Samsung Internet"],
  [/\bVivaldi\//, "Vivaldi"],
  [/\bYaBrowser\//, "Yandex Browser"],
  [/\b(?:Firefox|FxiOS)\//, "Firefox"],
  [/\b(?:Chrome|CriOS|Chromium)\//, "Chrome"],
  [/\bVersion\/[\d.]+.*\bSafari\//, "Safari"],
  [/\bMobile\/\w+$/, "Safari"],
];

/** iOS before macOS (iPads may say "Mac OS X" too, with "Mobile"), Android and ChromeOS before Linux. */
const SYSTEMS: readonly [RegExp, string][] = [
  [/\b(?:iPhone|iPad|iPod)\b|\biOS\b/, "iOS"],
  [/\bAndroid\b/, "Android"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bWindows\b/, "Windows"],
  [/\bMac OS X\b|\bMacintosh\b|\bmacOS\b/, "macOS"],
  [/\bLinux\b|\bUbuntu\b|\bFedora\b|\bX11\b/, "Linux"],
];

export const UNKNOWN_BROWSER = "an unknown browser or app";
const OTHER_APP = "an app or script";

/**
 * Clients a notification names: any other product token tells devices apart (devices.ts) but is not
 * shown, since whoever sends the header chose it, and a mail that may warn of them is no place for it.
 */
const KNOWN_TOOLS = new Set([
  "curl",
  "Wget",
  "HTTPie",
  "python-requests",
  "python-httpx",
  "aiohttp",
  "okhttp",
  "Go-http-client",
  "axios",
  "node-fetch",
  "undici",
  "node",
  "Dart",
  "Java",
  "PostmanRuntime",
  "insomnia",
]);
export const UNKNOWN_SYSTEM = "an unknown system";

/** A product token's name, for clients that are not browsers: "curl/8.5" is "curl". */
const PRODUCT = /^([A-Za-z][\w.+-]{0,39})(?:\/|$|\s)/;

export function parseUserAgent(header: string | null | undefined): UserAgentFamily {
  const agent = (header ?? "").slice(0, 512);
  const named = (list: readonly [RegExp, string][]) => list.find(([pattern]) => pattern.test(agent))?.[1];
  // Browsers start with "Mozilla/5.0"; anything else is an app or a tool, named by its first product.
  const browser = agent.startsWith("Mozilla/") ? named(BROWSERS) : PRODUCT.exec(agent)?.[1];
  return { browser: browser ?? UNKNOWN_BROWSER, system: named(SYSTEMS) ?? UNKNOWN_SYSTEM };
}

/** "Firefox on Windows", as a notification shows it; a client it does not know is "an app or script". */
export function describeDevice(header: string | null | undefined): string {
  const { browser, system } = parseUserAgent(header);
  const agent = header ?? "";
  const shown = agent.startsWith("Mozilla/") || browser === UNKNOWN_BROWSER || KNOWN_TOOLS.has(browser);
  return `${shown ? browser : OTHER_APP} on ${system}`;
}
