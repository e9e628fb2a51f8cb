// How a presented refresh token relates to its session, judged alike by
// both backends inside the rotation's transaction. A refresh token names its
// session and generation, and only the current generation's hash is stored:
// the current generation with the right hash rotates; any older generation
// was spent by an earlier rotation, so presenting it is a reuse (the caller
// decides about the grace window); anything else is invalid. Older
// generations cannot be checked against a hash any more, which is why a
// reuse only ever ends the session it names: whoever knows a session's id
// (its owner, or the holder of one of its access tokens) could end it
// through POST /auth/revoke as well.
import type { PresentedRefreshToken, Rotation } from "../sessions.ts";

/** When a generation was spent but that time is no longer stored: long past any grace window. */
const LONG_AGO = new Date(0).toISOString();

/** A session's columns that judge a token, named as its record's fields are. */
export interface SessionTokenState {
  id: string;
  userId: string;
  refreshGeneration: number;
  refreshTokenHash: string | null;
  /** ISO timestamps, compared as strings. */
  refreshExpiresAt: string;
  rotatedAt: string | null;
}

export function judgePresentedToken(
  state: SessionTokenState,
  presented: PresentedRefreshToken,
  now: string,
): Rotation | "current" {
  const generation = state.refreshGeneration;
  if (presented.generation === generation) {
    if (presented.tokenHash !== state.refreshTokenHash || state.refreshExpiresAt <= now) return { outcome: "invalid" };
    return "current";
  }
  if (presented.generation < generation) {
    const spentAt = presented.generation === generation - 1 ? (state.rotatedAt ?? LONG_AGO) : LONG_AGO;
    return { outcome: "spent", sessionId: state.id, userId: state.userId, spentAt };
  }
  return { outcome: "invalid" };
}

/** A session's stored amr (a JSON array of strings); NULL or anything unreadable means ["pwd"]. */
export function parseAmr(stored: string | null): string[] {
  if (stored === null) return ["pwd"];
  try {
    const value: unknown = JSON.parse(stored);
    if (Array.isArray(value) && value.every((entry) => typeof entry === "string")) return value;
  } catch {}
  return ["pwd"];
}
