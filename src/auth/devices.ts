// What "a device the account has not used before" means, for the new-device
// notice. A browser that signs in on the hosted sign-in page gets a long-lived,
// signed, HttpOnly, SameSite=Strict device cookie (random, no meaning of its own),
// which the page's script asks for just before its first sign-in (POST
// /sign-in/device, pages/security-pages.ts; a mere view of the page sets none):
// its sign-ins there are that device. Any other caller of the token endpoint
// (an app, a script, a browser app on another origin, a browser without the
// cookie) is known by its browser family and system from the User-Agent
// (user-agent.ts): "Firefox on Windows" is one device whatever its version. A
// user's devices are stored as keyed hashes (HMAC-SHA-256 under a key derived
// from the signing material), never the raw cookie or User-Agent; with several
// secrets or keys (rotation) each gives a candidate hash and the first is the
// one stored. The token endpoint's answers are the same whether or not a
// device is new (the notice is only queued, in the login's transaction); the
// cookie is set for the sign-in page, never by the token endpoint.
import { createHmac, createSecretKey, hkdfSync, type KeyObject, timingSafeEqual } from "node:crypto";
import type { NoticeClient, Notices } from "../mail/notices.ts";
import { cookieValue } from "../platform/cookies.ts";
import { randomBase64url } from "../random-pool.ts";
import type { DeviceSighting } from "../store/store.ts";
import { parseUserAgent } from "./user-agent.ts";

export const DEVICE_COOKIE = "uts_device";
/** The browsers' longest allowed lifetime for a cookie (400 days, RFC 6265bis). */
const DEVICE_COOKIE_MAX_AGE_SECONDS = 400 * 86_400;
/**
 * The token endpoint reads it and the sign-in page must see it too (or it would hand out a new one on
 * every visit, making every sign-in a new device): the one path both share is the root.
 */
const DEVICE_COOKIE_PATH = "/";
/** Devices remembered per user; the least recently seen are forgotten past it. */
export const KNOWN_DEVICES_PER_USER = 30;
/** A known device's last-seen time is written again at most this often, so that a login rarely writes. */
const LAST_SEEN_GRANULARITY_MS = 86_400_000;

const COOKIE_VALUE = /^([\w-]{22})\.([\w-]{22})$/;

export interface DeviceClient extends NoticeClient {
  /** The request's Cookie header, if any. */
  cookies: string | undefined;
}

export interface DeviceCookie {
  /** The Set-Cookie value for a browser about to sign in on the sign-in page without a valid device cookie; else undefined. */
  issueFor(cookies: string | undefined): string | undefined;
  /** The random id of a valid device cookie (signed by any key in use) in a Cookie header, or undefined. */
  idIn(cookies: string | undefined): string | undefined;
}

export interface Devices {
  /** This sign-in's device, for the store to check, with the new-device notice unless it is switched off. */
  sighting(user: { id: string; email: string }, client: DeviceClient): DeviceSighting;
}

export interface DeviceOptions {
  /** The signing secrets or private keys, the current first. */
  signingMaterial: readonly string[];
  cookie: DeviceCookie;
  notices: Notices;
  clock: () => number;
}

// Keys as KeyObjects, made once: Node 24's createHmac spends about 20 us checking a Buffer key on every
// call (isKeyObject), several times what the MAC itself costs (docs/performance.md, issue 34).
const keyFor = (secret: string, info: string) =>
  createSecretKey(Buffer.from(hkdfSync("sha256", secret, "user-token-service", info, 32)));
const mac = (key: KeyObject, value: string) => createHmac("sha256", key).update(value).digest();

/** `secure`: the cookie is marked Secure, for a service reached over HTTPS. */
export function createDeviceCookie(signingMaterial: readonly string[], secure: boolean): DeviceCookie {
  const keys = signingMaterial.map((secret) => keyFor(secret, "device-cookie"));
  const signature = (key: KeyObject, id: string) => mac(key, id).subarray(0, 16);
  const cookie: DeviceCookie = {
    issueFor(cookies) {
      if (cookie.idIn(cookies) !== undefined || keys.length === 0) return undefined;
      // From the pool (random-pool.ts): a CSPRNG call per sign-in page would cost more than the page.
      const id = randomBase64url(16);
      const value = `${id}.${signature(keys[0] as KeyObject, id).toString("base64url")}`;
      return (
        `${DEVICE_COOKIE}=${value}; Path=${DEVICE_COOKIE_PATH}; Max-Age=${DEVICE_COOKIE_MAX_AGE_SECONDS}; ` +
        `HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`
      );
    },
    idIn(cookies) {
      const match = COOKIE_VALUE.exec(cookieValue(cookies, DEVICE_COOKIE) ?? "");
      if (match === null) return undefined;
      const [, id, signed] = match as unknown as [string, string, string];
      const presented = Buffer.from(signed, "base64url");
      return keys.some((key) => timingSafeEqual(signature(key, id), presented)) ? id : undefined;
    },
  };
  return cookie;
}

/**
 * Device hashes remembered per cookie id or User-Agent header, so that a login does not parse the
 * header and compute its MACs again (about 12 us a login, about 1 % of its event-loop work;
 * docs/performance.md, issue 34). Emptied when full: at most a thousand short strings.
 */
const REMEMBERED_DEVICE_HASHES = 1024;

export function createDevices({ signingMaterial, cookie, notices, clock }: DeviceOptions): Devices {
  const hashKeys = signingMaterial.map((secret) => keyFor(secret, "known-device-hash"));
  const remembered = new Map<string, readonly string[]>();

  /** The keyed hashes of a device named by its cookie id, or (without one) by its User-Agent's family. */
  function hashesOf(id: string | undefined, userAgent: string | null): readonly string[] {
    const seen = id === undefined ? `agent\n${userAgent ?? ""}` : `cookie\n${id}`;
    let hashes = remembered.get(seen);
    if (hashes === undefined) {
      const { browser, system } = parseUserAgent(userAgent);
      // Prefixed, so that no User-Agent can name the same device as a cookie.
      const identity = id === undefined ? `agent\n${browser}\n${system}` : `cookie\n${id}`;
      hashes = hashKeys.map((key) => mac(key, identity).toString("base64url"));
      if (remembered.size >= REMEMBERED_DEVICE_HASHES) remembered.clear();
      remembered.set(seen, hashes);
    }
    return hashes;
  }

  return {
    sighting(user, client) {
      const notice = notices.about("new_device", user, client);
      return {
        hashes: hashesOf(cookie.idIn(client.cookies), client.userAgent),
        refreshBefore: new Date(clock() - LAST_SEEN_GRANULARITY_MS).toISOString(),
        maxPerUser: KNOWN_DEVICES_PER_USER,
        ...(notice === undefined ? {} : { notice }),
      };
    },
  };
}
