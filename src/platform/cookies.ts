// Reading one cookie from a request's Cookie header (RFC 6265 section 5.4),
// without a cookie library: the service reads a handful of its own cookies by
// name (the browser session, the device, the language, the sign-in mail's and
// the upstream sign-in's bindings) and never sets a cookie through a parser.
// Node's limit on a request's headers (16 KiB by default) bounds the work; a
// shorter limit here would sign people out on a domain whose other apps set
// many cookies.

/** The value of the cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(";")) {
    const at = pair.indexOf("=");
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}
