// What the sign-in and security pages share: the status line, calls to the
// API, and where the tokens live.
//
// Token storage: the access token lives in this module's memory only; the
// refresh token in sessionStorage, so that going from the sign-in page to the
// security page (a new document) keeps the session, while closing the tab
// ends it. sessionStorage is per tab and never sent with requests (unlike a
// cookie, no CSRF), and the pages' policy allows no inline or foreign script,
// which is what would read it. Each page load spends the refresh token for a
// new pair (rotation), so a copied token works once at most.

const REFRESH_KEY = "uts.refresh_token";
let accessToken = null;

// The page's messages in its language (issue 37): the server embeds them as a JSON data block.
let messages = null;
const lang = document.documentElement.lang || "en";

/** The end of the `{...}` that opens at `start`. */
function closing(message, start) {
  let depth = 0;
  for (let i = start; i < message.length; i++) {
    if (message[i] === "{") depth++;
    else if (message[i] === "}" && --depth === 0) return i;
  }
  return message.length;
}

/**
 * A message of the page's language with its values: `{name}`, and `{name, plural, one {...} other {...}}`
 * by Intl's plural rules (the subset src/i18n/format.ts checks every catalogue message against).
 */
export function format(message, values) {
  let out = "";
  let i = 0;
  while (i < message.length) {
    const open = message.indexOf("{", i);
    if (open < 0) return out + message.slice(i);
    out += message.slice(i, open);
    const end = closing(message, open);
    const inner = message.slice(open + 1, end);
    const [name, kind] = inner.split(",", 2).map((part) => part.trim());
    if (kind === "plural") {
      const count = Number(values[name]);
      const options = inner.slice(inner.indexOf("plural") + 6).replace(/^\s*,/, "");
      const choices = {};
      const pattern = /\s*(=?\w+)\s*\{/g;
      let found = pattern.exec(options);
      while (found) {
        const from = found.index + found[0].length - 1;
        const to = closing(options, from);
        choices[found[1]] = options.slice(from + 1, to);
        pattern.lastIndex = to + 1;
        found = pattern.exec(options);
      }
      const chosen = choices[`=${count}`] ?? choices[new Intl.PluralRules(lang).select(count)] ?? choices.other ?? "";
      out += format(chosen, values).replaceAll("#", new Intl.NumberFormat(lang).format(count));
    } else {
      // A value not given leaves its placeholder showing: a missing value is seen in tests, not hidden.
      out += name in values ? String(values[name]) : message.slice(open, end + 1);
    }
    i = end + 1;
  }
  return out;
}

/** The message `key` of the page's language, formatted with `values` (format). */
export function t(key, values = {}) {
  if (messages === null) {
    const block = document.getElementById("messages");
    try {
      messages = block ? JSON.parse(block.textContent) : {};
    } catch {
      messages = {};
    }
  }
  return format(messages[key] ?? key, values);
}

// The footer's language link comes back to this very address (with its query: an authorization request's).
const languageLink = document.getElementById("language-link");
if (languageLink) {
  languageLink.href = `/language?${new URLSearchParams({ continue: location.pathname + location.search })}`;
}

export function say(text, kind = "info") {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = kind;
}

export function saveTokens(body) {
  accessToken = body.access_token;
  sessionStorage.setItem(REFRESH_KEY, body.refresh_token);
}

export function refreshToken() {
  return sessionStorage.getItem(REFRESH_KEY);
}

export function forgetTokens() {
  accessToken = null;
  sessionStorage.removeItem(REFRESH_KEY);
}

async function call(path, init) {
  try {
    const response = await fetch(path, init);
    const data = response.status === 204 ? {} : await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, data };
  } catch {
    return { ok: false, status: 0, data: {} };
  }
}

// The browser's device cookie (HttpOnly, so this script cannot see whether it has one) is asked for
// once per page, just before the page's first sign-in: the token endpoint reads it to tell this browser
// from the account's other devices (the new-device notice). Asked here, not set by every view of the page,
// so that a page view costs no cookie; a failure only means this sign-in is known by its User-Agent.
let deviceCookie = null;
function withDeviceCookie() {
  deviceCookie ??= fetch("/sign-in/device", { method: "POST" }).catch(() => undefined);
  return deviceCookie;
}

/** POST /auth/token, form-encoded as OAuth 2.0 requires; a sign-in first makes sure of the device cookie. */
export async function tokenRequest(fields) {
  if (fields.grant_type !== "refresh_token") await withDeviceCookie();
  return call("/auth/token", { method: "POST", body: new URLSearchParams(fields) });
}

/** A JSON call to the API, with the access token when there is one. */
export function api(path, { method = "GET", body } = {}) {
  const headers = {};
  if (accessToken) headers.authorization = `Bearer ${accessToken}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  return call(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** Spends the stored refresh token for a new pair; false when there is no live session. */
export async function resume() {
  const token = refreshToken();
  if (!token) return false;
  const result = await tokenRequest({ grant_type: "refresh_token", refresh_token: token });
  if (!result.ok) {
    forgetTokens();
    return false;
  }
  saveTokens(result.data);
  return true;
}

/** Ends this session at the service (RFC 7009) and forgets it here. */
export async function signOut() {
  const token = refreshToken();
  forgetTokens();
  if (token) await call("/auth/revoke", { method: "POST", body: new URLSearchParams({ token }) });
}

/**
 * What to tell the reader about a failed call, in the page's language: never the API's `detail`, which
 * stays English (the spec's contract). `expected` maps the answers the caller knows (an OAuth `error`
 * code, or a status) to message keys; no connection, too many attempts and anything else have words of
 * their own, `fallback` (a key) for the rest.
 */
export function problem(result, fallback, expected = {}) {
  if (result.status === 0) return t("pages.sharedJs.offline");
  const byError = typeof result.data?.error === "string" ? expected[result.data.error] : undefined;
  const key = byError ?? expected[result.status];
  if (key) return t(key);
  if (result.status === 429) return t("pages.sharedJs.tooMany");
  return t(fallback);
}
