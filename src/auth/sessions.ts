// Sessions and refresh tokens (RFC 6749 sections 1.5 and 6, RFC 9700
// section 4.14). A refresh token is 256 random bits, handed out once and
// stored only as its SHA-256. Each refresh spends the token and hands out a
// successor in the same session; a session ends after an idle period
// without refreshes or at its absolute lifetime, whichever comes first.
// Presenting a spent token again is a reuse: the whole session is revoked,
// signing out both the thief and the owner, unless it happens within a
// short grace window after the rotation (two tabs refreshing at once), when
// it is refused without revoking anything. Only one of several concurrent
// rotations of one token wins (the store makes that atomic).
import { createHash, randomBytes } from "node:crypto";
import type { Audit } from "../audit.ts";
import { type HttpError, unauthorized } from "../errors.ts";
import type { SessionRecord, UserStore } from "../store/store.ts";

export const INVALID_REFRESH_TOKEN = "Invalid or expired refresh token";

export interface SessionSettings {
  idleSeconds: number;
  absoluteSeconds: number;
  reuseGraceSeconds: number;
}

export interface ClientInfo {
  address: string | null;
  userAgent: string | null;
}

export interface Sessions {
  /** Starts a session for a user who just proved their password; returns the first refresh token. */
  start(userId: string, client: ClientInfo): Promise<{ session: SessionRecord; refreshToken: string }>;
  /** Spends a refresh token and returns its successor, or throws the 401 of an invalid grant. */
  refresh(refreshToken: string, client: ClientInfo): Promise<{ session: SessionRecord; refreshToken: string }>;
  /** Ends the session a refresh token belongs to and returns it; unknown tokens are ignored (RFC 7009 section 2.2). */
  revokeByToken(refreshToken: string): Promise<SessionRecord | undefined>;
  revoke(sessionId: string): Promise<boolean>;
  /**
   * Ends every session of a user and every access token issued to it so far (password change,
   * deactivation): its refresh tokens are revoked and its credentials-changed time moves to now,
   * which the token check compares with each access token's iat.
   */
  endAll(userId: string): Promise<void>;
  list(userId: string): Promise<SessionRecord[]>;
}

export function hashRefreshToken(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

function newRefreshToken(): string {
  return randomBytes(32).toString("base64url");
}

export function invalidGrant(): HttpError {
  return unauthorized(INVALID_REFRESH_TOKEN);
}

export function createSessions(
  store: UserStore,
  settings: SessionSettings,
  clock: () => number,
  audit: Audit,
): Sessions {
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();

  return {
    async start(userId, client) {
      const refreshToken = newRefreshToken();
      const session = await store.createSession({
        userId,
        expiresAt: iso(settings.absoluteSeconds),
        clientAddress: client.address,
        userAgent: client.userAgent,
        tokenHash: hashRefreshToken(refreshToken),
        tokenExpiresAt: iso(Math.min(settings.idleSeconds, settings.absoluteSeconds)),
      });
      return { session, refreshToken };
    },

    async refresh(presented, client) {
      const successor = newRefreshToken();
      const rotation = await store.rotateRefreshToken(
        hashRefreshToken(presented),
        { tokenHash: hashRefreshToken(successor), expiresAt: iso(settings.idleSeconds) },
        iso(),
        client,
      );
      if (rotation.outcome === "rotated") return { session: rotation.session, refreshToken: successor };
      if (rotation.outcome === "spent") {
        const sinceRotation = (clock() - Date.parse(rotation.spentAt)) / 1000;
        if (sinceRotation > settings.reuseGraceSeconds && (await store.revokeSession(rotation.sessionId, iso()))) {
          const session = await store.findSession(rotation.sessionId);
          await audit.record("session_revocation", session?.userId ?? null, "reuse_detected", client.address);
        }
      }
      throw invalidGrant();
    },

    async revokeByToken(refreshToken) {
      const session = await store.findSessionByToken(hashRefreshToken(refreshToken));
      if (session && (await store.revokeSession(session.id, iso()))) return session;
      return undefined;
    },

    revoke: (sessionId) => store.revokeSession(sessionId, iso()),
    async endAll(userId) {
      await store.update(userId, { credentialsChangedAt: iso() });
      await store.revokeUserSessions(userId, iso());
    },
    list: (userId) => store.listSessions(userId, iso()),
  };
}
