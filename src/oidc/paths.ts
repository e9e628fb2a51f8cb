// Where the OpenID Connect endpoints live: named once, for the routes, the
// discovery document and the sign-in page's continuation check.
export const AUTHORIZE_PATH = "/oauth/authorize";
export const USERINFO_PATH = "/oauth/userinfo";
export const END_SESSION_PATH = "/oauth/logout";
export const CONSENT_PATH = "/oauth/consent";
/** Where the sign-in page trades its fresh access token for the browser session's cookie. */
export const BROWSER_SESSION_PATH = "/oauth/browser-session";
/** Pushed authorization requests (RFC 9126, issue 36). */
export const PUSHED_AUTHORIZATION_REQUEST_PATH = "/oauth/par";
