// The OpenID Connect endpoints beside the token endpoint: the authorization
// endpoint (GET and form POST, response_type=code), the browser session the sign-in page
// opens for it, the consent form's answer, userinfo (GET and POST, bearer)
// and RP-initiated logout. The authorization request itself is read and
// checked in oidc/authorization.ts, the cookie in oidc/browser-session.ts.
// A pushed request (RFC 9126) comes as client_id and request_uri, resolved
// (once) by oidc/pushed-requests.ts, then carried on like any other.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { dpopToken, type Guards } from "../auth/guard.ts";
import type { Sessions } from "../auth/sessions.ts";
import type { TokenService } from "../auth/tokens.ts";
import { type Dpop, DpopRefusal } from "../dpop/dpop.ts";
import { COULD_NOT_VALIDATE_CREDENTIALS, HttpError, NOT_AUTHENTICATED } from "../errors.ts";
import { sendConsentPage, sendErrorPage, sendSignedOutPage, sendSignOutPage } from "../pages/oidc-pages.ts";
import { SIGN_IN_PAGE_PATH } from "../pages/security-pages.ts";
import type { Audit } from "../platform/audit.ts";
import { acceptFormBodies, newFields } from "../platform/forms.ts";
import { BEARER_SECURITY, errorResponse } from "../platform/openapi.ts";
import type { UserStore } from "../store/store.ts";
import {
  type AuthorizationRequest,
  issueCode,
  parseAuthorizationRequest,
  type RequestProblem,
  responseUri,
} from "./authorization.ts";
import type { BrowserSession, BrowserSessions } from "./browser-session.ts";
import { userClaims } from "./claims.ts";
import { type ClientRegistry, usableRedirectUri } from "./clients.ts";
import type { ClientCors } from "./cors.ts";
import { type LiveDelegatedToken, liveDelegatedToken } from "./delegated-tokens.ts";
import { ACR_MULTI_FACTOR, type IdTokens } from "./id-tokens.ts";
import { AUTHORIZE_PATH, BROWSER_SESSION_PATH, CONSENT_PATH, END_SESSION_PATH, USERINFO_PATH } from "./paths.ts";
import { PAR_REQUIRED, type PushedRequests, SEAL_PARAMETER } from "./pushed-requests.ts";
import { type Reauthentication, requestDigest } from "./reauthentication.ts";
import { signedInWithSecondFactor } from "./second-factor-rule.ts";

export interface ProviderRouteOptions {
  store: UserStore;
  guards: Guards;
  tokens: TokenService;
  sessions: Sessions;
  clients: ClientRegistry;
  browserSessions: BrowserSessions;
  reauthentication: Reauthentication;
  idTokens: IdTokens;
  audit: Audit;
  issuer: () => string;
  /** The userinfo endpoint's absolute URL: the audience its tokens must name. */
  userinfoUrl: () => string;
  clock: () => number;
  cors: ClientCors;
  /** Pushed authorization requests (RFC 9126, issue 36). */
  pushedRequests: PushedRequests;
  /** DPoP (RFC 9449): a DPoP-bound token opens userinfo only with `Authorization: DPoP` and its proof. */
  dpop?: Dpop;
  /** ADMIN_CONSOLE_REQUIRE_MFA (issue 35): clients sent to sign in again while the session lacks a second factor. */
  secondFactorRequired?: ReadonlySet<string>;
}

export const APP_NOT_FOUND = "No application has access to your account under this id";
export const NO_BROWSER_SESSION = "Sign in first: this token belongs to no session";
export const INSUFFICIENT_SCOPE = "The token was not granted the openid scope";

const UserInfo = Type.Object(
  {
    sub: Type.String({ description: "The user's stable id (never the e-mail, which can change)." }),
    name: Type.Optional(Type.String({ description: "`profile` scope, when the user gave a name." })),
    updated_at: Type.Optional(Type.Integer({ description: "`profile` scope: seconds since the epoch." })),
    email: Type.Optional(Type.String({ description: "`email` scope." })),
    email_verified: Type.Optional(Type.Boolean({ description: "`email` scope." })),
  },
  { $id: "UserInfo", description: "OpenID Connect Core 5.3.2: the claims the token's scopes grant." },
);

export const GrantedApp = Type.Object(
  {
    client_id: Type.String(),
    client_name: Type.String({ description: "The application's registered name." }),
    scope: Type.String({ description: "The scopes the user allowed, space-separated." }),
    granted_at: Type.String({ format: "date-time" }),
  },
  { $id: "GrantedApp", description: "An application the user allowed to use the account (its consent)." },
);

// The metrics' names of these routes' actions (operations/observed-actions.ts).
const AUTHORIZATION = { observed: "authorization" } as const;
const CONSENT = { observed: "consent" } as const;
const USERINFO = { observed: "userinfo" } as const;
const LOGOUT = { observed: "logout" } as const;

/** The query or form as a plain object; a repeated name keeps all its values (then refused as repeated). */
function paramsOf(search: URLSearchParams): Record<string, string | string[]> {
  const params = newFields<string | string[]>();
  for (const [name, value] of search) {
    const seen = params[name];
    params[name] = seen === undefined ? value : ([] as string[]).concat(seen, value);
  }
  return params;
}

function queryOf(request: FastifyRequest): URLSearchParams {
  const at = request.url.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : request.url.slice(at + 1));
}

/** The bearer token of RFC 6750 2.1, or undefined. */
function bearer(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^bearer +([^ ]+) *$/i.exec(header);
  return match?.[1];
}

function invalidToken(detail: string = COULD_NOT_VALIDATE_CREDENTIALS): HttpError {
  return new HttpError(401, detail, { "www-authenticate": 'Bearer error="invalid_token"' });
}

export const providerRoutes: FastifyPluginAsyncTypebox<ProviderRouteOptions> = async (
  app,
  {
    store,
    guards,
    tokens,
    sessions,
    clients,
    browserSessions,
    reauthentication,
    idTokens,
    audit,
    issuer,
    userinfoUrl,
    clock,
    cors,
    pushedRequests,
    dpop,
    secondFactorRequired = new Set<string>(),
  },
) => {
  acceptFormBodies(app);
  const seconds = () => Math.floor(clock() / 1000);

  function answerProblem(reply: FastifyReply, problem: RequestProblem, uiLocales?: string): FastifyReply {
    // The first outcome set is the one counted: the consent form's (denied) over the redirect's.
    reply.request.actionOutcome ??= problem.show === "page" ? "error_page" : problem.error;
    if (problem.show === "page") return sendErrorPage(reply, { key: problem.key }, uiLocales);
    // RFC 6749 4.1.2.1, with iss (RFC 9207) so the client can tell which server answered.
    const { redirectUri, state, error, description } = problem;
    return reply.redirect(
      responseUri(redirectUri, { error, error_description: description, state, iss: issuer() }),
      303,
    );
  }

  function refuse(reply: FastifyReply, request: AuthorizationRequest, error: string, description: string) {
    return answerProblem(reply, {
      show: "redirect",
      redirectUri: request.redirectUri,
      state: request.state,
      error,
      description,
    });
  }

  /** The code, back to the client's redirect URI with state and iss. */
  async function grant(reply: FastifyReply, request: AuthorizationRequest, browser: BrowserSession, ip: string) {
    const code = await issueCode(store, request, browser.user.id, browser.session.id, clock, [
      { type: "oidc", outcome: "code_issued", clientAddress: ip },
    ]);
    reply.request.actionOutcome ??= "code";
    return reply.redirect(responseUri(request.redirectUri, { code, state: request.state, iss: issuer() }), 303);
  }

  /** Whether the request asks for a sign-in that a browser session may not meet by merely existing. */
  function asksFreshSignIn(request: AuthorizationRequest): boolean {
    return (
      request.prompt.has("login") ||
      request.maxAge !== undefined ||
      request.acrValues.includes(ACR_MULTI_FACTOR) ||
      secondFactorRequired.has(request.client.id)
    );
  }

  /**
   * Whether the browser session may answer this request without a new sign-in. `signedInSince`: when
   * this service sent this browser to sign in for this very request (oidc/reauthentication.ts); a
   * sign-in since then satisfies prompt=login, max_age and acr_values, so the request does not loop.
   */
  function needsSignIn(
    request: AuthorizationRequest,
    browser: BrowserSession | undefined,
    signedInSince: number | undefined,
  ): boolean {
    if (browser === undefined) return true;
    if (signedInSince !== undefined && browser.authTime >= signedInSince) return false;
    if (request.prompt.has("login")) return true;
    if (request.maxAge !== undefined && seconds() - browser.authTime > request.maxAge) return true;
    // A session without a second factor signs in again (its token request would be refused), once.
    if (secondFactorRequired.has(request.client.id) && !signedInWithSecondFactor(browser.session.amr)) return true;
    return request.acrValues.includes(ACR_MULTI_FACTOR) && !browser.session.amr.includes("mfa");
  }

  /**
   * The sign-in page, told to come back to this very request, every parameter as it came (prompt
   * included: prompt=consent must still show the consent page after the sign-in).
   */
  function signInLocation(search: URLSearchParams, request: AuthorizationRequest): string {
    const page = new URLSearchParams({ continue: `${AUTHORIZE_PATH}?${search}` });
    if (request.loginHint !== undefined) page.set("login_hint", request.loginHint);
    return `${SIGN_IN_PAGE_PATH}?${page}`;
  }

  /**
   * The consent form's token: bound to the browser session and to the request the page was shown for,
   * so the form cannot be edited into an answer to another request (one that would have asked for a
   * fresh sign-in, or for another client).
   */
  function consentFormToken(browser: BrowserSession, digest: string): string {
    return browserSessions.formToken(`${browser.session.id}:${digest}`, "consent");
  }

  async function consentCovers(request: AuthorizationRequest, userId: string): Promise<boolean> {
    if (request.client.firstParty) return true;
    const consent = await store.findConsent(userId, request.client.id);
    const granted = new Set(consent?.scope.split(" ") ?? []);
    return request.scopes.every((scope) => granted.has(scope));
  }

  /**
   * The request to authorize, and whether it was pushed: a request_uri (RFC 9126 section 4) used now and
   * resolved into its parameters, sealed for their way through the sign-in and consent pages; a sealed
   * one, brought back, checked; else the request as it came. A request_uri or seal refused is an error
   * page: nothing says where the client could safely be told.
   */
  async function pushedOrPlain(
    search: URLSearchParams,
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<{ search: URLSearchParams; pushed: boolean } | { answered: FastifyReply }> {
    const params = paramsOf(search);
    if (params.request_uri !== undefined) {
      const resolution = await pushedRequests.resolve(params);
      if ("refused" in resolution) {
        await audit.record("oidc", null, "par_refused", request.ip);
        request.actionOutcome = "invalid_request_uri";
        const key =
          resolution.refused === "malformed"
            ? "pages.oidcError.requestUriMalformed"
            : "pages.oidcError.requestUriUnknown";
        return { answered: sendErrorPage(reply, { key }) };
      }
      await audit.record("oidc", null, "par_used", request.ip);
      return { search: pushedRequests.seal(resolution.ok), pushed: true };
    }
    if (params[SEAL_PARAMETER] === undefined) return { search, pushed: false };
    if (pushedRequests.sealed(params)) return { search, pushed: true };
    request.actionOutcome = "invalid_request_uri";
    return { answered: sendErrorPage(reply, { key: "pages.oidcError.sealBroken" }) };
  }

  /** The authorization request of a GET's query or a POST's form (OpenID Connect Core 3.1.2.1: both). */
  async function authorize(presented: URLSearchParams, request: FastifyRequest, reply: FastifyReply) {
    const resolved = await pushedOrPlain(presented, request, reply);
    if ("answered" in resolved) return resolved.answered;
    const { search } = resolved;
    const params = paramsOf(search);
    const parsed = await parseAuthorizationRequest(params, clients);
    const uiLocales = typeof params.ui_locales === "string" ? params.ui_locales : undefined;
    if ("problem" in parsed) return answerProblem(reply, parsed.problem, uiLocales);
    const authorization = parsed.ok;
    // RFC 9126 section 5: a client that must push (or every client, by the setting) is refused a plain request.
    if (!resolved.pushed && pushedRequests.required(authorization.client))
      return refuse(reply, authorization, "invalid_request", PAR_REQUIRED);
    const browser = await browserSessions.read(request);
    if (request.method === "POST" && browser === undefined) {
      // A relying party's auto-submitted form is a cross-site POST, which carries no SameSite=Lax
      // cookie: the same request as a GET (a top-level navigation, which does) tells whether the
      // user is signed in, rather than asking for a sign-in, or answering login_required, wrongly.
      request.actionOutcome = "retry_as_get";
      return reply.redirect(`${AUTHORIZE_PATH}?${search}`, 303);
    }
    const digest = requestDigest(params);
    const signedInSince = asksFreshSignIn(authorization) ? reauthentication.since(request, digest) : undefined;
    if (needsSignIn(authorization, browser, signedInSince) || browser === undefined) {
      if (authorization.prompt.has("none")) return refuse(reply, authorization, "login_required", "Sign-in required");
      if (asksFreshSignIn(authorization)) reauthentication.require(request, reply, digest);
      request.actionOutcome = "sign_in";
      return reply.redirect(signInLocation(search, authorization), 303);
    }
    // The proof has served: the same request again asks for a sign-in again.
    if (signedInSince !== undefined) reauthentication.spend(request, reply, digest);
    if (authorization.prompt.has("consent") || !(await consentCovers(authorization, browser.user.id))) {
      if (authorization.prompt.has("none"))
        return refuse(reply, authorization, "consent_required", "The user has not allowed this application");
      request.actionOutcome = "consent_page";
      return sendConsentPage(reply, {
        clientName: authorization.client.name,
        scopes: authorization.scopes,
        email: browser.user.email,
        request: search.toString(),
        formToken: consentFormToken(browser, digest),
        action: CONSENT_PATH,
        redirectOrigin: new URL(authorization.redirectUri).origin,
        uiLocales,
        back: `${AUTHORIZE_PATH}?${search}`,
      });
    }
    return grant(reply, authorization, browser, request.ip);
  }

  app.get(
    AUTHORIZE_PATH,
    { schema: { hide: true }, config: AUTHORIZATION },
    async function authorizeByQuery(request, reply) {
      return authorize(queryOf(request), request, reply);
    },
  );
  await app.register(async function authorizeByFormRoute(scope) {
    // The form as it came: repeated or empty parameters are judged as in a query (an error for the
    // client), not by the form parser's JSON 400.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
      done(null, body),
    );
    scope.post(
      AUTHORIZE_PATH,
      { schema: { hide: true }, config: AUTHORIZATION },
      async function authorizeByForm(request, reply) {
        return authorize(new URLSearchParams(typeof request.body === "string" ? request.body : ""), request, reply);
      },
    );
  });

  app.post(CONSENT_PATH, { schema: { hide: true }, config: CONSENT }, async function answerConsent(request, reply) {
    const form = request.body as Record<string, string | undefined>;
    const params = paramsOf(new URLSearchParams(form.request ?? ""));
    const parsed = await parseAuthorizationRequest(params, clients);
    const uiLocales = typeof params.ui_locales === "string" ? params.ui_locales : undefined;
    if ("problem" in parsed) return answerProblem(reply, parsed.problem, uiLocales);
    const authorization = parsed.ok;
    const browser = await browserSessions.read(request);
    if (browser === undefined) return refuse(reply, authorization, "login_required", "Sign-in required");
    const formToken = `${browser.session.id}:${requestDigest(params)}`;
    if (!browserSessions.checkFormToken(formToken, "consent", form.form_token)) {
      request.actionOutcome = "expired_form";
      return sendErrorPage(reply, { key: "pages.oidcError.formExpired" }, uiLocales);
    }
    if (form.decision !== "allow") {
      await audit.record("oidc", browser.user.id, "consent_denied", request.ip);
      request.actionOutcome = "denied";
      return refuse(reply, authorization, "access_denied", "The user did not allow this application");
    }
    const earlier = await store.findConsent(browser.user.id, authorization.client.id);
    const scopes = new Set([...(earlier?.scope.split(" ") ?? []), ...authorization.scopes]);
    await store.grantConsent(
      browser.user.id,
      authorization.client.id,
      [...scopes].join(" "),
      new Date(clock()).toISOString(),
    );
    await audit.record("oidc", browser.user.id, "consent_granted", request.ip);
    request.actionOutcome = "granted";
    return grant(reply, authorization, browser, request.ip);
  });

  app.post(
    BROWSER_SESSION_PATH,
    {
      preHandler: [guards.authenticate],
      schema: {
        operationId: "openBrowserSession",
        security: BEARER_SECURITY,
        tags: ["auth"],
        summary: "Open the browser session of the authorization endpoint (sign-in page)",
        description:
          "The hosted sign-in page calls this with the access token it has just obtained: the answer sets the " +
          "browser session's cookie (HttpOnly, SameSite=Lax, Secure and `__Host-` under https), bound to the " +
          "token's session, so that the authorization endpoint knows the user. Ending that session by any route " +
          "ends the cookie. A bearer token is required (a cross-site form cannot send one), so it cannot be " +
          "forged from another site.",
        response: {
          204: { type: "null", description: "The cookie is set." },
          400: errorResponse("The token was issued in no session.", NO_BROWSER_SESSION),
          401: errorResponse("No token, or the token check failed.", NOT_AUTHENTICATED),
        },
      },
    },
    async function openBrowserSession(request, reply) {
      if (request.sessionId === null) throw new HttpError(400, NO_BROWSER_SESSION);
      browserSessions.set(reply, request.sessionId);
      return reply.code(204).send(null);
    },
  );

  const userinfoSchema = (method: string) => ({
    operationId: `userinfo${method}`,
    security: BEARER_SECURITY,
    tags: ["auth"],
    summary: "OpenID Connect userinfo",
    description:
      "OpenID Connect Core 5.3: the claims of the user of a client's access token (from the authorization_code " +
      "grant) for its scopes: `sub` always; `name` and `updated_at` with `profile`; `email` and `email_verified` " +
      "with `email`. The spec's own access tokens are refused here, and clients' tokens everywhere else.",
    response: {
      200: UserInfo,
      401: errorResponse(
        "No token, an invalid or expired one, not a client's, or its session has ended (`WWW-Authenticate: " +
          'Bearer error="invalid_token"`).',
        COULD_NOT_VALIDATE_CREDENTIALS,
      ),
      403: errorResponse("The token lacks the openid scope.", INSUFFICIENT_SCOPE),
    },
  });

  /**
   * The live token of a userinfo request for this endpoint: a bearer token that is not DPoP-bound, or
   * (RFC 9449 section 7) a DPoP-bound one with `Authorization: DPoP` and a proof by its key.
   */
  async function userinfoToken(request: FastifyRequest, reply: FastifyReply): Promise<LiveDelegatedToken> {
    const header = request.headers.authorization;
    const token = bearer(header);
    const proven = token === undefined && dpop !== undefined ? dpopToken(header) : undefined;
    if (token === undefined && proven === undefined)
      throw new HttpError(401, NOT_AUTHENTICATED, { "www-authenticate": "Bearer" });
    const live = await liveDelegatedToken((token ?? proven) as string, { tokens, store, clock });
    // A relying party's token for this endpoint only: its audience names userinfo (RFC 9068 section 4).
    if (live === undefined || !live.claims.aud.includes(userinfoUrl())) throw invalidToken();
    const { jkt } = live.claims;
    if (dpop === undefined) return live;
    if (proven === undefined) {
      if (jkt !== undefined) throw dpop.boundTokenAsBearer(COULD_NOT_VALIDATE_CREDENTIALS);
      return live;
    }
    try {
      if (jkt === undefined)
        throw new DpopRefusal("invalid_token", "invalid_token", "The access token is not DPoP-bound");
      await dpop.checkResourceProof(request, reply, proven, jkt);
    } catch (error) {
      if (error instanceof DpopRefusal) throw dpop.resourceRefusal(error, reply, COULD_NOT_VALIDATE_CREDENTIALS);
      throw error;
    }
    return live;
  }

  async function userinfo(request: FastifyRequest, reply: FastifyReply) {
    const live = await userinfoToken(request, reply);
    const scopes = live.claims.scope.split(" ");
    if (!scopes.includes("openid"))
      throw new HttpError(403, INSUFFICIENT_SCOPE, { "www-authenticate": 'Bearer error="insufficient_scope"' });
    return userClaims(live.user, scopes);
  }

  // Browser apps of public clients call userinfo cross-origin (oidc-client-ts): CORS for their origins.
  await app.register(async function userinfoRoutes(scope) {
    cors.apply(scope, { [USERINFO_PATH]: ["GET", "POST"] });
    scope.get(USERINFO_PATH, { schema: userinfoSchema("Get"), config: USERINFO }, userinfo);
    scope.post(
      USERINFO_PATH,
      { schema: { ...userinfoSchema("Post"), consumes: ["application/x-www-form-urlencoded"] }, config: USERINFO },
      userinfo,
    );
  });

  /** RP-initiated logout 1.0: the client a hint or client_id names, and its registered return address. */
  async function logout(request: FastifyRequest, reply: FastifyReply, params: Record<string, string | string[]>) {
    const text = (name: string) => (typeof params[name] === "string" ? (params[name] as string) : undefined);
    const hintText = text("id_token_hint");
    const hint = hintText === undefined ? undefined : idTokens.readHint(hintText);
    if (hintText !== undefined && hint === undefined) {
      request.actionOutcome = "error_page";
      return sendErrorPage(reply, { key: "pages.oidcError.foreignHint" });
    }
    // RP-initiated logout 1.0 section 2: client_id, when sent beside a hint, is the hint's audience.
    const named = text("client_id");
    if (hint !== undefined && named !== undefined && named !== hint.aud) {
      request.actionOutcome = "error_page";
      return sendErrorPage(reply, { key: "pages.oidcError.otherClient" });
    }
    const clientId = hint?.aud ?? named;
    const client = clientId === undefined ? undefined : await clients.find(clientId);
    const returnTo = text("post_logout_redirect_uri");
    if (returnTo !== undefined && !client?.postLogoutRedirectUris.includes(returnTo)) {
      request.actionOutcome = "error_page";
      return sendErrorPage(reply, { key: "pages.oidcError.unregisteredReturn" });
    }
    // Registered, yet not an address a browser can be sent to (stored by an older release): never a 500.
    if (returnTo !== undefined && !usableRedirectUri(returnTo)) {
      request.actionOutcome = "error_page";
      return sendErrorPage(reply, { key: "pages.oidcError.unusableReturn" });
    }
    const browser = await browserSessions.read(request);
    // Without an ID token of this user, a page of another site could sign the user out: ask first.
    const confirmed =
      (hint !== undefined && browser !== undefined && hint.sub === browser.user.id) ||
      (browser !== undefined && browserSessions.checkFormToken(browser.session.id, "logout", text("form_token")));
    if (browser !== undefined && !confirmed) {
      const fields: Record<string, string> = { form_token: browserSessions.formToken(browser.session.id, "logout") };
      // The client as the request named it, by client_id or only by the hint (whose ID token the
      // form does not carry): its registered return address is checked against it again.
      if (clientId !== undefined) fields.client_id = clientId;
      for (const name of ["post_logout_redirect_uri", "state"]) {
        const value = text(name);
        if (value !== undefined) fields[name] = value;
      }
      request.actionOutcome = "confirmation_page";
      return sendSignOutPage(reply, {
        action: END_SESSION_PATH,
        fields,
        redirectOrigin: returnTo === undefined ? undefined : new URL(returnTo).origin,
      });
    }
    if (browser !== undefined) {
      // One transaction: the browser session, the client sessions begun in it, and their logout tokens.
      await sessions.revoke(browser.session.id, [
        { type: "session_revocation", outcome: "revoked", clientAddress: request.ip },
        { type: "oidc", outcome: "logout", clientAddress: request.ip },
      ]);
    }
    browserSessions.clear(reply);
    request.actionOutcome = "signed_out";
    if (returnTo === undefined) return sendSignedOutPage(reply);
    return reply.redirect(responseUri(returnTo, { state: text("state") }), 303);
  }

  app.get(
    "/me/apps",
    {
      preHandler: [guards.authenticate],
      schema: {
        operationId: "listGrantedApps",
        tags: ["me"],
        summary: "Applications you allowed to use your account",
        description:
          "The third-party applications (OpenID Connect clients) you gave consent to, with the scopes, newest " +
          "first. First-party applications need no consent and are not listed.",
        security: BEARER_SECURITY,
        response: {
          200: Type.Object({ items: Type.Array(GrantedApp) }),
          401: errorResponse("No token, or the token check failed.", COULD_NOT_VALIDATE_CREDENTIALS),
        },
      },
    },
    async function listGrantedApps(request) {
      const consents = await store.listConsents(request.user!.id);
      const items = await Promise.all(
        consents.map(async (consent) => ({
          client_id: consent.clientId,
          client_name: (await clients.find(consent.clientId))?.name ?? "A removed application",
          scope: consent.scope,
          granted_at: consent.grantedAt,
        })),
      );
      return { items };
    },
  );

  app.delete(
    "/me/apps/:client_id",
    {
      config: CONSENT,
      preHandler: [guards.authenticate],
      schema: {
        operationId: "revokeGrantedApp",
        tags: ["me"],
        summary: "Take back an application's access",
        description:
          "204 with no body. Forgets the consent (the application asks again next time) and ends the " +
          "application's sessions of your account: its refresh tokens stop working at once, and an application " +
          "with a back-channel logout URI is told.",
        security: BEARER_SECURITY,
        params: Type.Object({ client_id: Type.String({ maxLength: 200 }) }),
        response: {
          204: { type: "null", description: "Taken back." },
          401: errorResponse("No token, or the token check failed.", COULD_NOT_VALIDATE_CREDENTIALS),
          404: errorResponse("No consent of yours for this client.", APP_NOT_FOUND),
        },
      },
    },
    async function revokeGrantedApp(request, reply) {
      const userId = request.user!.id;
      const at = new Date(clock()).toISOString();
      const event = { type: "oidc", outcome: "consent_revoked", clientAddress: request.ip } as const;
      if (!(await store.revokeConsent(userId, request.params.client_id, at, [event]))) {
        request.actionOutcome = "not_found";
        throw new HttpError(404, APP_NOT_FOUND);
      }
      request.actionOutcome = "revoked";
      reply.code(204).send(null);
    },
  );

  app.get(END_SESSION_PATH, { schema: { hide: true }, config: LOGOUT }, async function endSession(request, reply) {
    return logout(request, reply, paramsOf(queryOf(request)));
  });
  app.post(
    END_SESSION_PATH,
    { schema: { hide: true }, config: LOGOUT },
    async function endSessionByForm(request, reply) {
      const form = (request.body ?? {}) as Record<string, string>;
      return logout(request, reply, form);
    },
  );
};
