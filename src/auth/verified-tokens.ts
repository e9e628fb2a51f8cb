// Remembers the claims of access tokens whose signature and claims have been
// verified once, keyed by the exact token text, so that a client calling
// again with the same token (every page, every few seconds) skips the header
// parse, the key choice and the HMAC. Only what cannot change is
// remembered: on every call the expiry is checked again against the clock,
// and a token that failed is never remembered (it is verified in full each
// time). The token check after it (guard.ts) still looks the user up and
// compares the credential stamp on every request. Bounded; the oldest entry
// goes first.
import type { AccessClaims, Clock, TokenService } from "./tokens.ts";
import { InvalidToken } from "./tokens.ts";

export function withVerifiedTokenCache(
  tokens: TokenService,
  { clock, leewaySeconds, maxEntries = 10_000 }: { clock: Clock; leewaySeconds: number; maxEntries?: number },
): TokenService {
  const verified = new Map<string, AccessClaims>();
  return {
    ...tokens,
    verifyAccessToken(token) {
      const known = verified.get(token);
      if (known !== undefined) {
        if (known.exp + leewaySeconds <= Math.floor(clock() / 1000)) {
          verified.delete(token);
          throw new InvalidToken("expired");
        }
        return known;
      }
      const claims = tokens.verifyAccessToken(token);
      if (verified.size >= maxEntries) verified.delete(verified.keys().next().value as string);
      verified.set(token, claims);
      return claims;
    },
  };
}
