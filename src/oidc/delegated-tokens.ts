// Whether a relying party's access token for a user (RFC 9068; tokens.ts's
// delegated kind) is valid now: signed by this service, unexpired, its user
// active and its session live (not ended, not expired) and still the session
// of the client the token names. Such a token carries no credential stamp:
// every credential change ends the user's sessions, and with them its
// tokens. One check for every place that takes such a token: userinfo,
// introspection and revocation. Its audience is each caller's to check.
import { type DelegatedClaims, InvalidToken, type TokenService } from "../auth/tokens.ts";
import type { UserRecord, UserStore } from "../store/store.ts";

export interface LiveDelegatedToken {
  claims: DelegatedClaims;
  user: UserRecord;
}

export async function liveDelegatedToken(
  token: string,
  { tokens, store, clock }: { tokens: TokenService; store: UserStore; clock: () => number },
): Promise<LiveDelegatedToken | undefined> {
  let claims: DelegatedClaims;
  try {
    claims = tokens.verifyDelegatedAccessToken(token);
  } catch (error) {
    if (error instanceof InvalidToken) return undefined;
    throw error;
  }
  const [user, session, binding] = await Promise.all([
    store.findById(claims.sub),
    store.findSession(claims.sid),
    store.findClientSession(claims.sid),
  ]);
  const live =
    user?.isActive === true &&
    session !== undefined &&
    session.userId === user.id &&
    session.revokedAt === null &&
    Date.parse(session.expiresAt) > clock() &&
    binding?.clientId === claims.clientId;
  return live ? { claims, user } : undefined;
}
