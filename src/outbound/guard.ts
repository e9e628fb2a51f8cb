// The one guard of every outbound request to a URL that someone typed (an
// admin's webhook, an OAuth client's backchannel_logout_uri), against
// server-side request forgery (OWASP). Rules say where such a URL may lead:
// whether addresses that are not public (addresses.ts) may be reached
// (WEBHOOK_REFUSE_PRIVATE_ADDRESSES off; never for a dynamically registered
// client), and whether plain http is kept to loopback. checkDestination()
// applies them when the URL is registered, resolving its host as the
// delivery will; postOutbound() applies them again at every delivery, on the
// address actually connected to (resolved, checked, then connected to that
// address), so a DNS answer that changes between the two (rebinding) changes
// nothing. The POST itself follows no redirect (a 3xx is a failure), has one
// deadline for connecting, the answer and its body, reads at most BODY_CAP
// bytes of the answer, and uses no proxy and no keep-alive.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { isLoopbackAddress, isSpecialAddress } from "./addresses.ts";

const BODY_CAP = 4096;

/** A host name's addresses: the system's resolver, unless a test substitutes its own (to play DNS rebinding). */
export type Resolve = (host: string) => Promise<LookupAddress[]>;

export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );

/** Where a URL may lead. */
export interface OutboundRules {
  /** Addresses that are not public (loopback, private, link-local, ...) may be reached. */
  privateAllowed: boolean;
  /**
   * Plain http goes only to a loopback address, so only when privateAllowed; https everywhere else.
   * Off, http goes wherever https may (webhooks).
   */
  httpOnlyToLoopback: boolean;
  /** What refuses private addresses, named in the delivery's error: the setting, or the kind of client. */
  privateRefusedBy: string;
}

/** Why a URL may not be reached: credentials in it, a name that does not resolve, no allowed address. */
export type Refusal = "credentials" | "unresolvable" | "private" | "plain_http";

/** A delivery's error when no address of the host is public and the rules want one. */
export const refusedAddress = (by: string) => `the host has no public address (${by})`;
export const REFUSED_ADDRESS = refusedAddress("WEBHOOK_REFUSE_PRIVATE_ADDRESSES");
export const REFUSED_PLAIN_HTTP = "plain http goes only to a loopback address: use https";

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

const plainHttpKeptToLoopback = (protocol: string, rules: OutboundRules) =>
  protocol === "http:" && rules.httpOnlyToLoopback;

/** Whether the rules let a `protocol` URL reach any address, so that no address needs a look. */
const unrestricted = (protocol: string, rules: OutboundRules) =>
  rules.privateAllowed && !plainHttpKeptToLoopback(protocol, rules);

/** The addresses among `all` that a request to a `protocol` URL may connect to, or why none. */
function reachable(all: LookupAddress[], protocol: string, rules: OutboundRules): LookupAddress[] | Refusal {
  const allowed = rules.privateAllowed ? all : all.filter((entry) => !isSpecialAddress(entry.address));
  if (allowed.length === 0) return "private";
  if (!plainHttpKeptToLoopback(protocol, rules)) return allowed;
  const loopback = allowed.filter((entry) => isLoopbackAddress(entry.address));
  return loopback.length === 0 ? "plain_http" : loopback;
}

/** A literal address as itself; a name through `resolve`. */
async function addressesOf(host: string, resolve: Resolve): Promise<LookupAddress[]> {
  const family = isIP(host);
  return family !== 0 ? [{ address: host, family }] : resolve(host);
}

/**
 * Whether `url`, an absolute http(s) URL, may be registered: undefined, or why not. Its host is
 * resolved only when the rules look at addresses; then a name that does not resolve is refused too.
 * Checked again at every delivery (postOutbound): DNS may change.
 */
export async function checkDestination(
  url: URL,
  rules: OutboundRules,
  resolve: Resolve = systemResolve,
): Promise<Refusal | undefined> {
  if (url.username !== "" || url.password !== "") return "credentials";
  if (unrestricted(url.protocol, rules)) return undefined;
  let all: LookupAddress[];
  try {
    all = await addressesOf(hostOf(url), resolve);
  } catch {
    return "unresolvable";
  }
  const result = reachable(all, url.protocol, rules);
  return typeof result === "string" ? result : undefined;
}

const refusalError = (refusal: Refusal, rules: OutboundRules) =>
  refusal === "plain_http" ? REFUSED_PLAIN_HTTP : refusedAddress(rules.privateRefusedBy);

/** The socket's lookup: resolves, keeps the addresses the rules allow, so only a checked address is connected to. */
function checkedLookup(protocol: string, rules: OutboundRules, resolve: Resolve): LookupFunction {
  return (hostname, options, callback) => {
    addressesOf(hostname, resolve).then(
      (all) => {
        const result = reachable(all, protocol, rules);
        const first = typeof result === "string" ? undefined : result[0];
        if (typeof result === "string" || first === undefined)
          callback(new Error(refusalError(typeof result === "string" ? result : "private", rules)), "", 0);
        else if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, result);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
}

export interface PostResult {
  /** The receiver's status; undefined when no answer came. */
  statusCode?: number;
  /** Why it failed: refused, no answer, or an answer outside 2xx. Undefined on a 2xx. */
  error?: string;
  durationMs: number;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  rules: OutboundRules;
  resolve?: Resolve;
}

export async function postOutbound(
  target: string,
  { headers, body, timeoutMs, rules, resolve = systemResolve }: PostOptions,
): Promise<PostResult> {
  const started = performance.now();
  const done = (result: Omit<PostResult, "durationMs">): PostResult => ({
    ...result,
    durationMs: Math.round(performance.now() - started),
  });
  const url = new URL(target);
  // A literal address is connected to without a lookup: checked here.
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    const result = reachable([{ address: host, family: isIP(host) }], url.protocol, rules);
    if (typeof result === "string") return done({ error: refusalError(result, rules) });
  }
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<PostResult>((resolveResult) => {
    let settled = false;
    let request: ClientRequest | undefined;
    const finish = (result: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      request?.destroy();
      resolveResult(done(result));
    };
    const deadline = setTimeout(() => finish({ error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    request = send(url, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)), connection: "close" },
      agent: false,
      lookup: checkedLookup(url.protocol, rules, resolve),
    });
    request.on("error", (error) => finish({ error: error.message }));
    request.on("response", (response: IncomingMessage) => {
      const statusCode = response.statusCode ?? 0;
      const error =
        statusCode >= 200 && statusCode < 300
          ? undefined
          : statusCode >= 300 && statusCode < 400
            ? `redirect (${statusCode}) not followed`
            : `answered ${statusCode}`;
      let read = 0;
      response.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= BODY_CAP) finish({ statusCode, ...(error ? { error } : {}) });
      });
      response.on("end", () => finish({ statusCode, ...(error ? { error } : {}) }));
      response.on("error", () => finish({ statusCode, ...(error ? { error } : {}) }));
    });
    request.end(body);
  });
}
