// Sessions and refresh tokens (RFC 6749 sections 1.5 and 6, RFC 9700
// section 4.14). A refresh token is 256 random bits, handed out once and
// stored only as its SHA-256. Each refresh spends the token and hands out a
// successor in the same session; a session ends after an idle period
// without refreshes or at its absolute lifetime, whichever comes first.
// Presenting a spent token again is a reuse: the whole session is revoked,
// signing out both the thief and the owner, unless it happens within a
// short grace window after the rotation (two tabs refreshing at once), when
// it is refused without revoking anything. Only one of several concurrent
// rotations of one token wins (the store makes that atomic). Ending every
// session of a user (password change, deactivation) is the store's
// update(..., { endSessions: true }), in the same transaction as the change.

import { hash } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { type HttpError, unauthorized } from "../errors.ts";
import type { Locale } from "../i18n/locales.ts";
import { askedLocale } from "../mail/asked-locale.ts";
import { OAuthError } from "../oauth-errors.ts";
import { randomBase64url } from "../random-pool.ts";
import { newId } from "../store/ids.ts";
import type {
  AuditEntry,
  ClientBinding,
  DeviceSighting,
  PresentedRefreshToken,
  SessionRecord,
  UserRecord,
  UserStore,
} from "../store/store.ts";

export const INVALID_REFRESH_TOKEN = "Invalid or expired refresh token";
/** RFC 9449 section 5: a refresh token bound to a DPoP key, presented without a proof by that key. */
export const REFRESH_TOKEN_NEEDS_PROOF = "This refresh token is bound to a DPoP key: send a DPoP proof by that key";
export const REFRESH_TOKEN_OF_ANOTHER_KEY = "This refresh token is bound to another DPoP key";

/** RFC 8176 authentication method references of the sessions this service starts. */
export const PASSWORD_ONLY: readonly string[] = ["pwd"];
export const PASSWORD_AND_OTP: readonly string[] = ["pwd", "otp", "mfa"];
/** A recovery code has no RFC 8176 value of its own; "mfa" says two factors were checked. */
export const PASSWORD_AND_RECOVERY_CODE: readonly string[] = ["pwd", "mfa"];
/** The contract's value for a passkey as the second factor; the passkeys branch may refine it. */
export const PASSWORD_AND_PASSKEY: readonly string[] = ["pwd", "hwk", "mfa"];

/** The amr of a session started by the password and then this second factor. */
export const SECOND_FACTOR_AMR: Readonly<Record<"otp" | "recovery_code" | "webauthn", readonly string[]>> = {
  otp: PASSWORD_AND_OTP,
  recovery_code: PASSWORD_AND_RECOVERY_CODE,
  webauthn: PASSWORD_AND_PASSKEY,
};

export interface SessionSettings {
  idleSeconds: number;
  absoluteSeconds: number;
  reuseGraceSeconds: number;
  /** Live sessions one user may hold; a new login ends the oldest past it. */
  maxPerUser: number;
}

export interface ClientInfo {
  address: string | null;
  userAgent: string | null;
  /** The language the request asked for, if any: a mail it causes speaks it unless the reader chose one. */
  locale?: Locale | undefined;
}

/**
 * Who sent the request: its address as Fastify sees it (honouring TRUST_PROXY), its User-Agent and
 * the language it asks for.
 */
export function clientOf(request: FastifyRequest): ClientInfo {
  const agent = request.headers["user-agent"];
  return {
    address: request.ip,
    userAgent: typeof agent === "string" ? agent.slice(0, 512) : null,
    locale: askedLocale(request),
  };
}

export interface Issued {
  session: SessionRecord;
  refreshToken: string;
  /** A sign-in from a new device queued its notice (start with a device only). */
  newDeviceNoticed?: boolean;
}

export interface Sessions {
  /**
   * Starts a session for a user who just proved their password (and second factor), recording
   * `events` (the login) in the same transaction; returns the first refresh token. `amr` says how
   * the user authenticated (RFC 8176); every refresh of the session keeps it. With `device`, the
   * sign-in's device is checked and remembered in the same transaction (auth/devices.ts).
   */
  start(
    userId: string,
    client: ClientInfo,
    events?: readonly AuditEntry[],
    amr?: readonly string[],
    device?: DeviceSighting,
    dpopJkt?: string,
  ): Promise<Issued>;
  /**
   * Starts an OpenID Connect client's session (authorization_code), bound to the client in the same
   * transaction, in which the code that started it (`binding.fromCodeHash`) records it for a replay to
   * revoke: no crash between the two can leave a replayed code unable to end what it issued. It counts
   * against that client's own cap of `maxPerUser` sessions of the user, never against the user's own
   * sessions (the password flow, the sign-in page): an app that signs in often cannot sign the user out
   * of the account, nor of another app.
   */
  startForClient(
    userId: string,
    client: ClientInfo,
    binding: ClientBinding,
    events: readonly AuditEntry[],
    amr: readonly string[],
    dpopJkt?: string,
  ): Promise<Issued>;
  /**
   * Spends a refresh token and returns its successor with the session's owner, or throws the 401 of an
   * invalid grant. A session bound to a DPoP key needs `proofKey` to be that key: otherwise the token
   * is left as it is and the refusal is RFC 9449's (400 invalid_dpop_proof without a proof,
   * invalid_grant with another key's).
   */
  refresh(refreshToken: string, client: ClientInfo, proofKey?: string): Promise<Issued & { user: UserRecord }>;
  /**
   * Ends the session whose current refresh token this is, recording the revocation; answers its
   * owner's id. Unknown and spent tokens are ignored (RFC 7009 section 2.2).
   */
  revokeByToken(refreshToken: string, client: ClientInfo): Promise<string | undefined>;
  revoke(sessionId: string, events?: readonly AuditEntry[]): Promise<boolean>;
  /** Live sessions, newest first, a page at a time. */
  list(userId: string, page: { limit: number; before?: string }): Promise<SessionRecord[]>;
}

/**
 * A refresh token is `<session id>.<generation>.<256 random bits>`: it names its session and
 * generation, so only the current generation's hash is stored and an older one is still known as a
 * reuse (store/sql/rotation.ts). Only its SHA-256 is ever stored.
 */
const REFRESH_TOKEN = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(0|[1-9]\d{0,8})\.[\w-]{43}$/;

export function hashRefreshToken(token: string): string {
  // The one-shot form: a Hash object per login or refresh buys nothing for one short input.
  return hash("sha256", token, "base64url");
}

function newRefreshToken(sessionId: string, generation: number): string {
  return `${sessionId}.${generation}.${randomBase64url(32)}`;
}

/** What the token says it is, or undefined when it is not shaped like one of ours. */
export function parseRefreshToken(token: string): PresentedRefreshToken | undefined {
  const match = REFRESH_TOKEN.exec(token);
  if (match === null) return undefined;
  return { sessionId: match[1] as string, generation: Number(match[2]), tokenHash: hashRefreshToken(token) };
}

export function invalidGrant(): HttpError {
  return unauthorized(INVALID_REFRESH_TOKEN);
}

export function createSessions(store: UserStore, settings: SessionSettings, clock: () => number): Sessions {
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();

  async function begin(
    userId: string,
    client: ClientInfo,
    events: readonly AuditEntry[],
    amr: readonly string[],
    bound: { device?: DeviceSighting; client?: ClientBinding },
    dpopJkt?: string,
  ): Promise<Issued> {
    const sessionId = newId(clock());
    const refreshToken = newRefreshToken(sessionId, 0);
    const session = await store.createSession(
      {
        id: sessionId,
        userId,
        expiresAt: iso(settings.absoluteSeconds),
        clientAddress: client.address,
        userAgent: client.userAgent,
        tokenHash: hashRefreshToken(refreshToken),
        tokenExpiresAt: iso(Math.min(settings.idleSeconds, settings.absoluteSeconds)),
        amr,
        dpopJkt,
      },
      { maxPerUser: settings.maxPerUser, events, ...bound },
    );
    return { session, refreshToken, newDeviceNoticed: session.newDeviceNoticed === true };
  }

  return {
    start: (userId, client, events = [], amr = PASSWORD_ONLY, device, dpopJkt) =>
      begin(userId, client, events, amr, device ? { device } : {}, dpopJkt),
    startForClient: (userId, client, binding, events, amr, dpopJkt) =>
      begin(userId, client, events, amr, { client: binding }, dpopJkt),

    async refresh(presented, client, proofKey) {
      const parsed = parseRefreshToken(presented);
      if (parsed === undefined) throw invalidGrant();
      const successor = newRefreshToken(parsed.sessionId, parsed.generation + 1);
      const rotation = await store.rotateRefreshToken(
        parsed,
        { tokenHash: hashRefreshToken(successor), expiresAt: iso(settings.idleSeconds) },
        iso(),
        client,
        proofKey,
      );
      if (rotation.outcome === "rotated") {
        return { session: rotation.session, refreshToken: successor, user: rotation.user };
      }
      if (rotation.outcome === "spent") {
        const sinceRotation = (clock() - Date.parse(rotation.spentAt)) / 1000;
        if (sinceRotation > settings.reuseGraceSeconds) {
          await store.revokeSession(rotation.sessionId, iso(), [
            { type: "session_revocation", outcome: "reuse_detected", clientAddress: client.address },
          ]);
        }
      }
      if (rotation.outcome === "unproven")
        throw rotation.proofSent
          ? new OAuthError(400, "invalid_grant", REFRESH_TOKEN_OF_ANOTHER_KEY)
          : new OAuthError(400, "invalid_dpop_proof", REFRESH_TOKEN_NEEDS_PROOF);
      throw invalidGrant();
    },

    async revokeByToken(refreshToken, client) {
      const parsed = parseRefreshToken(refreshToken);
      if (parsed === undefined) return undefined;
      return store.revokeSessionByToken(parsed, iso(), [
        { type: "session_revocation", outcome: "revoked", clientAddress: client.address },
      ]);
    },

    revoke: (sessionId, events) => store.revokeSession(sessionId, iso(), events),
    list: (userId, page) => store.listSessions(userId, iso(), page),
  };
}
