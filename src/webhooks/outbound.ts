// One outbound webhook POST, made safe for a URL an admin typed (server-side
// request forgery, OWASP): no redirects are followed (a 3xx is a failure);
// one deadline covers connecting, the answer and its body, so a slow
// receiver cannot hold the worker; at most BODY_CAP bytes of the answer are
// read, then the connection is dropped; no proxy, no keep-alive. With
// refusePrivate (WEBHOOK_REFUSE_PRIVATE_ADDRESSES), the host's addresses
// are resolved here, special ones (loopback, private, link-local, shared,
// documentation, multicast, ...) are dropped, and the connection goes to
// one of the addresses that passed: the address checked is the address
// connected to, so a DNS answer that changes between check and connect
// (rebinding) changes nothing.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";

const BODY_CAP = 4096;

// Two lists: a list with an IPv6 rule for ::ffff:0:0/96 would match every IPv4 address, and the IPv4
// list also matches the IPv4-mapped forms of its ranges (::ffff:127.0.0.1).
const SPECIAL_V4 = new BlockList();
const SPECIAL_V6 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  SPECIAL_V4.addSubnet(network, prefix, "ipv4");
// NAT64 forms are refused whole: they could carry any of the addresses above.
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const)
  SPECIAL_V6.addSubnet(network, prefix, "ipv6");

/** Whether an address is not a public unicast one (anything that is not an IP address counts as special). */
export function isSpecialAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return SPECIAL_V4.check(address, "ipv4");
  return SPECIAL_V6.check(address, "ipv6") || SPECIAL_V4.check(address, "ipv6");
}

export const REFUSED_ADDRESS = "the host has no public address (WEBHOOK_REFUSE_PRIVATE_ADDRESSES)";

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** The host's addresses that may be connected to; all of them unless refusePrivate. */
export async function allowedAddresses(url: URL, refusePrivate: boolean): Promise<LookupAddress[]> {
  const host = hostOf(url);
  const family = isIP(host);
  const all: LookupAddress[] =
    family !== 0
      ? [{ address: host, family }]
      : await new Promise((resolve, reject) =>
          dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
        );
  return refusePrivate ? all.filter((entry) => !isSpecialAddress(entry.address)) : all;
}

/** Resolves through allowedAddresses, so that the socket connects only to an address that was checked. */
function checkedLookup(refusePrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    allowedAddresses(new URL(`http://${isIP(hostname) === 6 ? `[${hostname}]` : hostname}`), refusePrivate).then(
      (addresses) => {
        const first = addresses[0];
        if (!first) callback(new Error(REFUSED_ADDRESS), "", 0);
        else if (options.all) (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
}

export interface PostResult {
  /** The receiver's status; undefined when no answer came. */
  statusCode?: number;
  /** Why it failed: no answer, or an answer outside 2xx. Undefined on a 2xx. */
  error?: string;
  durationMs: number;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  refusePrivate: boolean;
}

export async function postWebhook(target: string, { headers, body, timeoutMs, refusePrivate }: PostOptions) {
  const started = performance.now();
  const done = (result: Omit<PostResult, "durationMs">): PostResult => ({
    ...result,
    durationMs: Math.round(performance.now() - started),
  });
  const url = new URL(target);
  // A literal address is connected to without a lookup: checked here.
  if (refusePrivate && isIP(hostOf(url)) !== 0 && isSpecialAddress(hostOf(url)))
    return done({ error: REFUSED_ADDRESS });
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    let request: ClientRequest | undefined;
    const finish = (result: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      request?.destroy();
      resolve(done(result));
    };
    const deadline = setTimeout(() => finish({ error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    request = send(url, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)), connection: "close" },
      agent: false,
      lookup: checkedLookup(refusePrivate),
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
