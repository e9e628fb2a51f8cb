// Browser sessions at the peer (bench/peer-oidc-provider.ts), as bench/run.ts opens them at the service
// before the code exchanges are timed: one authorization request with the user as login_hint, its
// redirects followed through the peer's sign-in and consent pages with the cookies it sets, until it
// answers the client's redirect URI with a code. The cookies left for GET /auth are the signed-in
// browser's, as it would send them (by path).

/** Cookies as a browser keeps them for one site: name -> value and the path they are sent under. */
type Jar = Map<string, { value: string; path: string }>;

function keep(jar: Jar, response: Response): void {
  for (const line of response.headers.getSetCookie()) {
    const [pair = "", ...attributes] = line.split(";");
    const equals = pair.indexOf("=");
    const name = pair.slice(0, equals).trim();
    const value = pair.slice(equals + 1);
    const path =
      attributes
        .map((part) => part.trim())
        .find((part) => /^path=/i.test(part))
        ?.slice(5) || "/";
    // A cookie cleared (expired, empty) is no longer sent.
    if (value === "" || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
    else jar.set(name, { value, path });
  }
}

/** The Cookie header a browser sends to `pathname`: the cookies whose path covers it. */
const header = (jar: Jar, pathname: string) =>
  [...jar]
    .filter(([, { path }]) => pathname === path || pathname.startsWith(path.endsWith("/") ? path : `${path}/`))
    .map(([name, { value }]) => `${name}=${value}`)
    .join("; ");

/**
 * Signs `email` in at the peer for `authorize` (a path and query of GET /auth, without login_hint) and
 * returns the browser's Cookie header; throws unless the flow ends in a redirect with a code.
 */
export async function peerBrowserSession(peerUrl: string, authorize: string, email: string): Promise<string> {
  const jar: Jar = new Map();
  let location = `${authorize}&${new URLSearchParams({ login_hint: email })}`;
  for (let step = 0; step < 10; step++) {
    const url = new URL(location, peerUrl);
    if (url.origin !== new URL(peerUrl).origin) {
      if (!url.searchParams.get("code")) throw new Error(`peer sign-in ended without a code: ${location}`);
      return header(jar, new URL(authorize, peerUrl).pathname);
    }
    const response = await fetch(url, { redirect: "manual", headers: { cookie: header(jar, url.pathname) } });
    keep(jar, response);
    await response.arrayBuffer();
    const next = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || next === null)
      throw new Error(`peer sign-in: ${url.pathname} answered ${response.status}`);
    location = next;
  }
  throw new Error("peer sign-in: too many redirects");
}
