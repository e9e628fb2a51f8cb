// What a grant of the token endpoint is: one module per grant_type (as
// node-oidc-provider's lib/actions/grants/), each exporting a factory that
// returns its Grant. The route (core/token-routes.ts) parses the form, looks
// the grant up in the grant table (registry.ts), authenticates the client
// first when the grant takes one, then calls handle(). Also the few steps
// several grants share: a required field, the client's address and agent
// for the session, the refusal of an unverified address, the start of a
// sign-in's session (with its device noticed), and the user's token response.
//
// THE SLOT FOR A NEW GRANT: a new file exporting `(deps: GrantDeps) => Grant`
// in the folder of the capability it belongs to, plus one
// `grants.add(...)` in that capability's install.ts (the always-on grants
// are added in core/install.ts). Its `type` is the grant_type value;
// `parameters` the form fields it reads (they must also be in TokenForm,
// core/schemas.ts); `client: "required"` makes the route authenticate the
// client (oidc/client-auth.ts: Basic, post, or none for a public client)
// before handle() and hand it over in `context.client`; errors thrown as
// OAuthError (oauth-errors.ts) are answered with RFC 6749's `error` whatever
// OAUTH_ERROR_FIELDS says, and any other error of such a grant is answered
// that way too (see core/token-routes.ts). handle() returns the token
// response body; the route adds `Cache-Control: no-store` and `Pragma: no-cache`.
// DPoP (RFC 9449): the route checks a request's proof before handle(); a
// grant that issues tokens binds them to `proofKeyOf(request)`
// (dpop/request-key.ts): userTokens() and signIn() below take it, and a
// grant that builds its own answer passes it to the token service and says
// `token_type: "DPoP"` when it is set.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Static } from "typebox";
import type { Devices } from "../../auth/devices.ts";
import { MALFORMED_WEBAUTHN_RESPONSE, type Passkeys } from "../../auth/passkeys.ts";
import type { PasswordHasher } from "../../auth/passwords.ts";
import type { RateLimits } from "../../auth/rate-limits.ts";
import type { SecondFactorService } from "../../auth/second-factors.ts";
import { clientOf, type Issued, type Sessions } from "../../auth/sessions.ts";
import { ACCESS_TOKEN_LIFETIME_SECONDS, type TokenService } from "../../auth/tokens.ts";
import { proofKeyOf } from "../../dpop/request-key.ts";
import { HttpError } from "../../errors.ts";
import type { Notices } from "../../mail/notices.ts";
import type { Client, ClientRegistry } from "../../oidc/clients.ts";
import type { OidcGrants } from "../../oidc/code-grant.ts";
import type { Audit } from "../../platform/audit.ts";
import type { AuditEntry, UserRecord, UserStore } from "../../store/store.ts";
import type { BindingCookie } from "../../upstream/binding.ts";
import type { Upstream } from "../../upstream/sign-in.ts";
import type { ClientTokenOut, MfaRequired, TokenForm, TokenOut } from "../schemas.ts";

export const EMAIL_NOT_VERIFIED =
  "Your e-mail address is not verified yet: open the link we sent you, or ask for a new one";

/** What the grants are built from: the service's verbs. */
export interface GrantDeps {
  store: UserStore;
  tokens: TokenService;
  passwords: PasswordHasher;
  limits: RateLimits;
  sessions: Sessions;
  audit: Audit;
  factors: SecondFactorService;
  /** EMAIL_VERIFICATION_REQUIRED: a correct password for an unverified address is refused with 403. */
  verificationRequired: boolean;
  passkeys: Passkeys;
  clients: ClientRegistry;
  /** Each sign-in's device, for the new-device notice. */
  devices: Devices;
  notices: Notices;
  /** Sign-in with upstream providers (issue 25); absent when none is configured. */
  upstream?: { upstream: Upstream; binding: BindingCookie };
  /** OpenID Connect's grants (authorization_code, and the refresh of a client's session); absent while it is off. */
  oidc?: OidcGrants;
}

/** What a grant answers: a user's tokens, a client's token, or (password grant) a second-factor challenge. */
export type TokenAnswer = Static<typeof TokenOut> | Static<typeof ClientTokenOut> | Static<typeof MfaRequired>;

export interface GrantContext {
  request: FastifyRequest & { body: TokenForm };
  reply: FastifyReply;
  /** The authenticated client, for a grant with `client: "required"` (or "optional", when named); else undefined. */
  client: Client | undefined;
}

export interface Grant {
  /** The grant_type value it answers. */
  readonly type: string;
  /** The form fields it reads besides grant_type (and the client's own). */
  readonly parameters: readonly string[];
  /**
   * "ignored": the spec's first-party grants, whose answers stay exactly as they were: client
   * credentials in the request are not looked at (Swagger UI sends an empty Basic header).
   * "required": the route authenticates the client before handle(), and every error carries `error`.
   * "optional": a request that names a registered client (its id, in the form or HTTP Basic) is
   * authenticated as "required" does; one that names none registered is a first-party request,
   * answered as "ignored" would be (the refresh grant, shared by both).
   */
  readonly client: "ignored" | "required" | "optional";
  /** The token response body (the route adds the no-store headers), or an answer set on `reply`. */
  handle(context: GrantContext): Promise<TokenAnswer>;
}

/** The same words as a schema failure, for the fields each grant requires. */
export function required(field: string): HttpError {
  return new HttpError(422, `body.${field}: field required`);
}

/** The audit event of a successful sign-in. */
export const LOGIN = (request: FastifyRequest): AuditEntry => ({
  type: "login",
  outcome: "success",
  clientAddress: request.ip,
});

/**
 * Starts the session of a sign-in, its device checked in the same transaction: a new device (for a
 * user who has known ones) queues its notice. The answer is the same either way; only the sender is
 * woken.
 */
export async function signIn(
  { devices, sessions, notices }: GrantDeps,
  request: FastifyRequest,
  user: UserRecord,
  amr?: readonly string[],
  events: readonly AuditEntry[] = [LOGIN(request)],
): Promise<Issued> {
  const client = clientOf(request);
  const device = devices.sighting(user, { ...client, cookies: request.headers.cookie });
  // A first-party app is a public client: with a DPoP proof, its refresh tokens are bound to the key.
  const issued = await sessions.start(user.id, client, events, amr, device, proofKeyOf(request));
  if (issued.newDeviceNoticed) notices.wake();
  return issued;
}

/** The assertion in the form field, parsed; its shape is the passkey verifier's to check. */
export function webauthnResponse(text: string | undefined): unknown {
  if (text === undefined) throw required("webauthn_response");
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, MALFORMED_WEBAUTHN_RESPONSE);
  }
}

/** Same rule as the password grant: an unverified address may not log in while verification is required. */
export async function refuseUnverified(deps: GrantDeps, request: FastifyRequest, user: UserRecord): Promise<void> {
  if (deps.verificationRequired && user.emailVerifiedAt === null) {
    await deps.audit.record("login", user.id, "refused_unverified", request.ip);
    throw new HttpError(403, EMAIL_NOT_VERIFIED);
  }
}

export const MFA_REQUIRED = "A second factor is required";

/**
 * For an account with a second factor, the first step opens nothing: 403 `mfa_required` with a
 * single-use challenge for the second step (password and upstream grants); undefined otherwise.
 */
export async function secondFactorChallenge(
  { factors, audit }: GrantDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  user: UserRecord,
  firstFactor = "pwd",
) {
  const offer = await factors.factorsOnOffer(user.id);
  if (offer.length === 0) return undefined;
  const challenge = await factors.challenge(user.id, firstFactor);
  await audit.record("login", user.id, "mfa_required", request.ip);
  request.loginStep = "mfa_required";
  // RFC 6749 section 5.1: the mfa_token is a credential too; never cached (the route says so).
  reply.code(403);
  return {
    error: "mfa_required" as const,
    detail: MFA_REQUIRED,
    error_description: MFA_REQUIRED,
    mfa_token: challenge.token,
    mfa_factors: offer,
    expires_in: challenge.expiresIn,
  };
}

/**
 * The spec's token response for a user's session (plus the refresh token and its lifetime). With
 * `jkt` (the request's DPoP proof key), the access token is bound to it and `token_type` is `DPoP`
 * (RFC 9449 section 5); without, the answer is the spec's to the byte.
 */
export function userTokens(tokens: TokenService, user: UserRecord, issued: Issued, jkt?: string) {
  return {
    access_token: tokens.issueAccessToken(user, issued.session.id, issued.session.amr, jkt),
    token_type: jkt === undefined ? ("bearer" as const) : ("DPoP" as const),
    expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
    refresh_token: issued.refreshToken,
  };
}
