// Remembers the claims of access tokens whose signature and claims have been
// verified once, keyed by the exact token text, so that a client calling
// again with the same token (every page, every few seconds) skips the header
// parse, the key choice and the HMAC. Only what cannot change is
// remembered: on every call the expiry is checked again against the clock,
// and a token that failed is never remembered (it is verified in full each
// time). The token check after it (guard.ts) still looks the user up and
// compares the credential stamp on every request. Bounded; the oldest entry
// goes first.
//
// Entries are found by the token's signature segment and then compared in
// full: a lookup hashes the key, and hashing the 43 to 86 characters of a
// signature instead of the whole token (several hundred, arriving as a new
// string with every request) was most of the cost of a hit. A token that
// reuses a remembered signature with any other header or payload is not
// equal, so it is verified in full like any unknown token.
//
// A client's own tokens (client_credentials, RFC 9068) are remembered the
// same way, in a map of their own: introspection verifies the same client
// token again and again, and its HMAC and claim checks were a tenth of that
// request's time. Whether the client is still registered is asked on every
// call all the same (oidc/introspection-routes.ts). A relying party's tokens for users
// too, for userinfo; their session is looked up on every call
// (oidc/delegated-tokens.ts).
import type { AccessClaims, ClientAccessClaims, Clock, DelegatedClaims, TokenService } from "./tokens.ts";
import { InvalidToken } from "./tokens.ts";

export function withVerifiedTokenCache(
  tokens: TokenService,
  { clock, leewaySeconds, maxEntries = 10_000 }: { clock: Clock; leewaySeconds: number; maxEntries?: number },
): TokenService {
  const remembered = <Claims extends { exp: number }>(verify: (token: string) => Claims) => {
    const verified = new Map<string, { token: string; claims: Claims }>();
    return (token: string): Claims => {
      const signature = token.slice(token.lastIndexOf(".") + 1);
      const known = verified.get(signature);
      if (known !== undefined && known.token === token) {
        if (known.claims.exp + leewaySeconds <= Math.floor(clock() / 1000)) {
          verified.delete(signature);
          throw new InvalidToken("expired");
        }
        return known.claims;
      }
      const claims = verify(token);
      if (verified.size >= maxEntries) verified.delete(verified.keys().next().value as string);
      verified.set(signature, { token, claims });
      return claims;
    };
  };
  return {
    ...tokens,
    verifyAccessToken: remembered<AccessClaims>(tokens.verifyAccessToken),
    verifyClientAccessToken: remembered<ClientAccessClaims>(tokens.verifyClientAccessToken),
    verifyDelegatedAccessToken: remembered<DelegatedClaims>(tokens.verifyDelegatedAccessToken),
  };
}
