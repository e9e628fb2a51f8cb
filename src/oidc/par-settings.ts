// The settings of pushed authorization requests (RFC 9126, issue 36): whether
// every client must push its authorization requests first, and how long a
// pushed request may wait to be used. Declared here, beside the endpoint;
// config.ts composes them.
import { type Env, flag, integer, section } from "../settings/declare.ts";

/** RFC 9126 section 2.2 asks for a short lifetime; the issue names 60 seconds. */
export const DEFAULT_PUSHED_REQUEST_LIFETIME_SECONDS = 60;

export interface PushedRequestSettings {
  /** REQUIRE_PUSHED_AUTHORIZATION_REQUESTS: every client's authorization requests must be pushed. */
  required: boolean;
  /** How long a request_uri may wait for the browser to bring it, in seconds. */
  lifetimeSeconds: number;
}

const REQUIRE_PUSHED_AUTHORIZATION_REQUESTS = flag({
  name: "REQUIRE_PUSHED_AUTHORIZATION_REQUESTS",
  fallback: "off",
  meaning:
    "`on`: every client must push its authorization requests first (`POST /oauth/par`, RFC 9126) and send the " +
    "browser with the `request_uri` alone; a plain authorization request is refused (`invalid_request`), as for " +
    "a client registered with `require_pushed_authorization_requests`. Discovery says so. See " +
    "[OpenID Connect](../your-app/openid-connect.md#pushed-authorization-requests).",
});

const PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS = integer({
  name: "PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS",
  fallback: DEFAULT_PUSHED_REQUEST_LIFETIME_SECONDS,
  min: 5,
  max: 600,
  meaning: "How long a pushed authorization request's `request_uri` can be used (once), in seconds (`expires_in`).",
});

export const PAR_SETTINGS = section("Pushed authorization requests", "src/oidc/par-settings.ts", [
  REQUIRE_PUSHED_AUTHORIZATION_REQUESTS,
  PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS,
]);

export function readPushedRequestSettings(env: Env): PushedRequestSettings {
  return {
    required: REQUIRE_PUSHED_AUTHORIZATION_REQUESTS.read(env),
    lifetimeSeconds: PUSHED_AUTHORIZATION_REQUEST_LIFETIME_SECONDS.read(env),
  };
}
