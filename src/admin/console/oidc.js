// The console as an OpenID Connect client of its own service: authorization
// code with PKCE (S256) through the hosted sign-in page, tokens kept in this
// module's memory only, refreshed before they expire, and RP-initiated logout.
// Only the PKCE verifier, state and nonce cross the redirect, in
// sessionStorage, and are removed as soon as the browser comes back: they are
// worthless once the code is redeemed, and no token is ever stored.

const PENDING_KEY = "admin-console-pending-sign-in";
const REFRESH_MARGIN_MS = 30_000;

function base64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

async function challengeOf(verifier) {
  return base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
}

/** The payload of a JWT, unverified: only to read `exp` and `nonce` of tokens the token endpoint just gave. */
function claimsOf(jwt) {
  try {
    const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part));
  } catch {
    return {};
  }
}

/**
 * @param {{ clientId: string, redirectUri: string }} options
 */
export async function createSession({ clientId, redirectUri }) {
  const answer = await fetch("/.well-known/openid-configuration", { cache: "no-store", credentials: "omit" });
  if (!answer.ok) throw new Error("OpenID Connect is off on this service, so the console cannot sign in.");
  const provider = await answer.json();
  /** @type {{ access: string, refresh?: string, idToken?: string, expiresAt: number } | undefined} */
  let tokens;
  let timer;

  function keep(answered) {
    tokens = {
      access: answered.access_token,
      refresh: answered.refresh_token ?? tokens?.refresh,
      idToken: answered.id_token ?? tokens?.idToken,
      expiresAt: Date.now() + (answered.expires_in ?? 300) * 1000,
    };
    clearTimeout(timer);
    if (tokens.refresh) timer = setTimeout(refresh, Math.max(5_000, tokens.expiresAt - Date.now() - REFRESH_MARGIN_MS));
  }

  async function tokenRequest(fields) {
    const response = await fetch(provider.token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ ...fields, client_id: clientId }),
      cache: "no-store",
      credentials: "omit",
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(body.error_description ?? body.detail ?? "The sign-in could not be completed.");
      // RFC 6749 5.2's code (console.js tells ADMIN_CONSOLE_REQUIRE_MFA's invalid_grant by it).
      throw Object.assign(error, { oauthError: body.error });
    }
    return body;
  }

  /** A new access token from the refresh token; false when there is none or it no longer works. */
  async function refresh() {
    if (!tokens?.refresh) return false;
    try {
      keep(await tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh }));
      return true;
    } catch {
      tokens = undefined;
      return false;
    }
  }

  return {
    accessToken: () => tokens?.access,
    refresh,

    /** Sends the browser to the sign-in page; `back` is the console's route to return to. */
    async signIn(back = "") {
      const verifier = randomText();
      const state = randomText();
      const nonce = randomText();
      sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, nonce, back }));
      const url = new URL(provider.authorization_endpoint);
      url.search = new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: redirectUri,
        scope: "openid profile email",
        state,
        nonce,
        code_challenge: await challengeOf(verifier),
        code_challenge_method: "S256",
      }).toString();
      location.assign(url.toString());
    },

    /**
     * After the redirect back: the code redeemed with the verifier. Returns the route to show, or
     * undefined when this load is no callback.
     */
    async completeSignIn() {
      const params = new URLSearchParams(location.search);
      const pendingText = sessionStorage.getItem(PENDING_KEY);
      if (!params.has("code") && !params.has("error")) return undefined;
      sessionStorage.removeItem(PENDING_KEY);
      history.replaceState(null, "", redirectUri);
      const pending = pendingText ? JSON.parse(pendingText) : undefined;
      if (params.has("error")) throw new Error(params.get("error_description") ?? "The sign-in was refused.");
      if (!pending || pending.state !== params.get("state"))
        throw new Error("This sign-in answer was not asked for by this browser tab; sign in again.");
      if (params.has("iss") && params.get("iss") !== provider.issuer)
        throw new Error("The sign-in answer came from another issuer.");
      const answered = await tokenRequest({
        grant_type: "authorization_code",
        code: params.get("code") ?? "",
        redirect_uri: redirectUri,
        code_verifier: pending.verifier,
      });
      if (answered.id_token && claimsOf(answered.id_token).nonce !== pending.nonce)
        throw new Error("The ID token does not answer this sign-in (nonce).");
      keep(answered);
      return pending.back ?? "";
    },

    /** RP-initiated logout: the service ends the browser's session and sends it back here. */
    signOut() {
      const idToken = tokens?.idToken;
      tokens = undefined;
      clearTimeout(timer);
      if (!provider.end_session_endpoint) {
        location.assign(redirectUri);
        return;
      }
      const url = new URL(provider.end_session_endpoint);
      url.search = new URLSearchParams({
        client_id: clientId,
        post_logout_redirect_uri: redirectUri,
        state: "signed-out",
        ...(idToken ? { id_token_hint: idToken } : {}),
      }).toString();
      location.assign(url.toString());
    },
  };
}
