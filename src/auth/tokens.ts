// Access tokens: the only module that touches the JWT library. HS256 with a
// shared secret is the default (spec, Authentication); EdDSA or ES256 with
// private keys is opt-in (keys.ts). Verify is pinned to the one configured
// algorithm and never trusts the token header's own choice (RFC 8725 section
// 3.1). Tokens carry typ "at+jwt" (RFC 8725 section 3.11, RFC 9068) and the
// kid of the key that signed them, so keys can rotate: the first signs, all
// of them verify. Every token names its issuer (iss) and audience (aud);
// both are checked here when the operator declared them (PUBLIC_URL,
// TOKEN_ISSUER, TOKEN_AUDIENCE). Undeclared, the issuer is only the issuing
// instance's own address, which another instance of the deployment, or
// this one restarted on another port, does not share: the spec's token
// check (signing secret, expiry, sub, user) decides alone. Time comes from an injected clock so tests can move
// it instead of sleeping.
// Every first-party token also carries its user's credential stamp
// (store/ids.ts), which the token check compares with the stored one: a
// credential change ends every token issued before it, exactly, whatever the
// clocks and however close.
// Three kinds of access token, told apart by their claims and their audience
// (RFC 9068, RFC 8707; docs/security.md says who may present
// which where): the first-party user token of the spec (aud: the service's
// own audience, sub: the e-mail, the stamp), the token a relying party gets
// for a user (aud: the userinfo endpoint and the resources registered for the
// client; sub: the user's id; client_id, scope, sid; never the stamp), and a
// client's token for itself (client_credentials: sub and client_id the
// client's id; aud: its registered resources, or its own id). Each kind has
// its own verify, and no verify accepts another kind.
// Any kind may be bound to a DPoP key (RFC 9449, issue 36): it then carries
// `cnf: {jkt}`, which its verify answers as `jkt`; the token check asks for
// a proof by that key (dpop/dpop.ts) and refuses such a token as a bearer one.
import { createSigner, createVerifier } from "fast-jwt";
import { withoutStackTraces } from "../errors.ts";
import { randomBase64url } from "../random-pool.ts";
import { type KeySet, keySetFromSecrets, secretKeyId } from "./keys.ts";

/** Spec, Limits: access tokens live 30 minutes from issuance. */
export const ACCESS_TOKEN_LIFETIME_SECONDS = 30 * 60;
export const ACCESS_TOKEN_TYP = "at+jwt";
/** Longer tokens are refused before any decoding work; ours are about 400 bytes. */
export const MAX_TOKEN_LENGTH = 4096;

export interface AccessClaims {
  sub: string;
  iat: number;
  exp: number;
  iss: string;
  aud: string;
  /** The user's credential stamp when the token was issued. */
  stamp: string;
  /** The session the token was issued in, when there is one. */
  sid?: string;
  /** How the user authenticated (RFC 8176), when the token says. */
  amr?: string[];
  /** The thumbprint of the DPoP key the token is bound to (cnf.jkt, RFC 9449 section 6). */
  jkt?: string;
}

/**
 * A user's token for a relying party (OpenID Connect, RFC 9068): its sub is the user's stable id,
 * not the e-mail, it carries client_id, scope and sid, and its audience is the relying party's own
 * (userinfo, its registered resources): never the service's first-party audience. The token check
 * (guard.ts) refuses it, so a client's token opens userinfo, never the account's own API. No internal
 * claim (the credential stamp) leaves the service in it; its validity is its session's.
 */
export interface DelegatedTokenSubject {
  userId: string;
  clientId: string;
  scope: string;
  sessionId: string;
  amr: readonly string[];
  /** The token's aud: at least one absolute URI (oidc/audiences.ts decides which). */
  audience: readonly string[];
  /** The DPoP key's thumbprint, when the token is bound to one (cnf.jkt). */
  jkt?: string | undefined;
}

/** The claims of a relying party's token for a user, verified. */
export interface DelegatedClaims {
  /** The user's id. */
  sub: string;
  clientId: string;
  /** Space-separated. */
  scope: string;
  sid: string;
  amr?: string[];
  iss: string;
  /** Every audience the token names. */
  aud: string[];
  iat: number;
  exp: number;
  jti: string;
  /** cnf.jkt, when bound to a DPoP key. */
  jkt?: string;
}

/** Whom a token is issued to: the spec's subject, and the stamp the token check compares. */
export interface TokenSubject {
  email: string;
  credentialStamp: string;
}

/**
 * The claims of a token issued to a client for itself (client_credentials), RFC 9068: no user, so
 * no credential stamp; `sub` and `client_id` are the client's id. Such a token opens no user route:
 * the user check refuses a token without a stamp.
 */
export interface ClientAccessClaims {
  sub: string;
  client_id: string;
  /** Space-separated; "" when the client has no scope. */
  scope: string;
  iat: number;
  exp: number;
  iss: string;
  /** Every audience the token names. */
  aud: string[];
  jti: string;
  /** cnf.jkt, when bound to a DPoP key. */
  jkt?: string;
}

/** Which kind of access token a text claims to be (read without verifying: only to pick the verify). */
export type TokenKind = "user" | "delegated" | "client" | "unknown";

export type Clock = () => number;

/** Why a token was refused: logged at debug level, never sent to the client. */
export class InvalidToken extends Error {
  constructor(reason: string) {
    // Every refused token makes one, and it is always caught and answered (a 401, or inactive): no stack.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(reason);
    Error.stackTraceLimit = limit;
    this.name = "InvalidToken";
  }
}

export interface TokenService {
  /** `amr` (RFC 8176): how the user authenticated in the session, e.g. ["pwd"] or ["pwd", "otp", "mfa"]. */
  issueAccessToken(subject: TokenSubject, sessionId?: string, amr?: readonly string[], jkt?: string): string;
  /** A first-party user token's claims (never a relying party's or a client's token), or throws InvalidToken. */
  verifyAccessToken(token: string): AccessClaims;
  /** An RFC 9068 access token for a client acting for a user (authorization_code), with its jti. */
  issueDelegatedAccessToken(subject: DelegatedTokenSubject): string;
  /** A relying party's user token's claims (never another kind), or throws InvalidToken; aud is the caller's to check. */
  verifyDelegatedAccessToken(token: string): DelegatedClaims;
  /**
   * An RFC 9068 access token for a client itself (client_credentials): `sub` and `client_id` the
   * client's id, `aud` the audience given (at least one).
   */
  issueClientAccessToken(clientId: string, scope: string, audience: readonly string[], jkt?: string): string;
  /** A client token's claims (never a user's token), or throws InvalidToken; aud is the caller's to check. */
  verifyClientAccessToken(token: string): ClientAccessClaims;
}

export interface TokenOptions {
  /** The keys (the first signs, every one verifies). */
  keys?: KeySet;
  /** HS256 secrets, a shorthand for keys: each at least 32 bytes (checked by config). */
  secrets?: readonly string[];
  /**
   * The iss and aud written into issued tokens. Functions, because without a setting the issuer is
   * the listen address, known only once the server listens.
   */
  issuer: () => string;
  audience: () => string;
  /** The iss a token must carry, when the operator declared one; else iss is not compared. */
  expectedIssuer?: string | undefined;
  /** The aud a token must carry (one string, or within an array), when declared; else not compared. */
  expectedAudience?: string | undefined;
  clock?: Clock;
  leewaySeconds?: number;
}

/** A key id that names a secret without revealing anything usable about it. */
export function keyId(secret: string): string {
  return secretKeyId(secret);
}

export function createTokenService({
  keys,
  secrets = [],
  issuer,
  audience,
  expectedIssuer,
  expectedAudience,
  clock = Date.now,
  leewaySeconds = 0,
}: TokenOptions): TokenService {
  const keySet = keys ?? keySetFromSecrets(secrets);
  const { algorithm } = keySet;
  const [current] = keySet.keys;
  if (current === undefined) throw new Error("at least one signing key is required");
  const sign = createSigner({
    algorithm,
    key: current.signingKey,
    header: { alg: algorithm, typ: ACCESS_TOKEN_TYP, kid: current.kid },
  });
  // One verifier per key, chosen by kid. Expiry, iss and aud are checked below against the
  // injected clock and the current settings; signature, algorithm, typ and crit stay the library's job.
  // (Verified tokens are remembered one level up, in verified-tokens.ts.)
  const verifiers = new Map(
    keySet.keys.map((key) => [
      key.kid,
      createVerifier({
        algorithms: [algorithm],
        key: key.verifyingKey,
        checkTyp: ACCESS_TOKEN_TYP,
        ignoreExpiration: true,
        ignoreNotBefore: true,
      }),
    ]),
  );

  return {
    issueAccessToken(subject, sessionId, amr, jkt) {
      const iat = Math.floor(clock() / 1000);
      const claims: Record<string, unknown> = {
        iss: issuer(),
        sub: subject.email,
        aud: audience(),
        iat,
        exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS,
        stamp: subject.credentialStamp,
      };
      if (sessionId) claims.sid = sessionId;
      if (amr) claims.amr = [...amr];
      if (jkt !== undefined) claims.cnf = { jkt };
      return sign(claims);
    },

    verifyAccessToken(token) {
      const { payload, sub, exp, iat, iss, aud } = verified(token, true);
      const { stamp } = payload;
      if (typeof stamp !== "string") throw new InvalidToken("credential stamp missing");
      // A relying party's or a client's token is never a first-party one, whatever else it says.
      if (payload.client_id !== undefined) throw new InvalidToken("a client's token");
      const claims: AccessClaims = { sub, exp, iat, iss, aud: firstAudience(aud), stamp };
      if (typeof payload.sid === "string") claims.sid = payload.sid;
      const amr = stringList(payload.amr);
      if (amr !== undefined) claims.amr = amr;
      // The one check a bearer token pays for DPoP: whether it names a key.
      if (payload.cnf !== undefined) claims.jkt = boundKey(payload.cnf);
      return claims;
    },

    issueDelegatedAccessToken({ userId, clientId, scope, sessionId, amr, audience: aud, jkt }) {
      const iat = Math.floor(clock() / 1000);
      return sign({
        iss: issuer(),
        sub: userId,
        aud: audienceClaim(aud),
        iat,
        exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS,
        jti: randomBase64url(16),
        client_id: clientId,
        scope,
        sid: sessionId,
        amr: [...amr],
        ...(jkt === undefined ? {} : { cnf: { jkt } }),
      });
    },

    verifyDelegatedAccessToken(token) {
      const { payload, sub, exp, iat, iss, aud } = verified(token, false);
      const { client_id, scope, sid, jti, stamp } = payload;
      if (stamp !== undefined || typeof client_id !== "string" || client_id === sub)
        throw new InvalidToken("not a relying party's token");
      if (typeof scope !== "string" || typeof sid !== "string" || typeof jti !== "string")
        throw new InvalidToken("scope, sid or jti missing");
      const claims: DelegatedClaims = { sub, clientId: client_id, scope, sid, iss, aud, iat, exp, jti };
      const amr = stringList(payload.amr);
      if (amr !== undefined) claims.amr = amr;
      if (payload.cnf !== undefined) claims.jkt = boundKey(payload.cnf);
      return claims;
    },

    issueClientAccessToken(clientId, scope, aud, jkt) {
      const iat = Math.floor(clock() / 1000);
      const claims: Record<string, unknown> = {
        iss: issuer(),
        sub: clientId,
        aud: audienceClaim(aud),
        iat,
        exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS,
        client_id: clientId,
        jti: randomBase64url(16),
      };
      if (scope !== "") claims.scope = scope;
      if (jkt !== undefined) claims.cnf = { jkt };
      return sign(claims);
    },

    verifyClientAccessToken(token) {
      const { payload, sub, exp, iat, iss, aud } = verified(token, false);
      const { client_id, scope, jti, stamp } = payload;
      // A user's token (it has a stamp, or a client_id other than its sub) is never a client's.
      if (stamp !== undefined || client_id !== sub) throw new InvalidToken("not a client token");
      if (scope !== undefined && typeof scope !== "string") throw new InvalidToken("scope not a string");
      if (typeof jti !== "string") throw new InvalidToken("jti missing");
      const claims: ClientAccessClaims = { sub, client_id: sub, scope: scope ?? "", iat, exp, iss, aud, jti };
      if (payload.cnf !== undefined) claims.jkt = boundKey(payload.cnf);
      return claims;
    },
  };

  /**
   * The checks every token passes (signature, algorithm, typ, times, sub, iss), or throws InvalidToken;
   * `firstParty`: aud must also be the service's own declared audience (the other kinds' audiences are
   * their verifiers' callers' to check).
   */
  function verified(token: string, firstParty: boolean) {
    if (token.length > MAX_TOKEN_LENGTH) throw new InvalidToken("token too long");
    const decode = verifiers.get(readKeyId(token));
    if (decode === undefined) throw new InvalidToken("unknown kid");
    let payload: Record<string, unknown>;
    try {
      // The library's refusal (a forged signature, say) is an Error whose stack is never read.
      payload = withoutStackTraces(() => decode(token));
    } catch (error) {
      throw new InvalidToken((error as { code?: string }).code ?? "undecodable");
    }
    const now = Math.floor(clock() / 1000);
    const { sub, exp, iat, nbf, iss, aud } = payload;
    if (typeof exp !== "number" || !Number.isFinite(exp)) throw new InvalidToken("exp missing");
    if (exp + leewaySeconds <= now) throw new InvalidToken("expired");
    if (nbf !== undefined && (typeof nbf !== "number" || nbf > now + leewaySeconds))
      throw new InvalidToken("not yet valid");
    if (typeof iat !== "number" || !Number.isFinite(iat)) throw new InvalidToken("iat missing");
    if (iat > now + leewaySeconds) throw new InvalidToken("issued in the future");
    if (typeof sub !== "string" || sub === "") throw new InvalidToken("sub missing");
    if (expectedIssuer !== undefined && iss !== expectedIssuer) throw new InvalidToken("wrong issuer");
    // RFC 7519 section 4.1.3: aud may be one string or an array of them.
    const audiences = typeof aud === "string" ? [aud] : (stringList(aud) ?? []);
    if (firstParty && expectedAudience !== undefined && !audiences.includes(expectedAudience))
      throw new InvalidToken("wrong audience");
    if (!firstParty && audiences.length === 0) throw new InvalidToken("aud missing");
    return { payload, sub, exp, iat, iss: typeof iss === "string" ? iss : "", aud: audiences };
  }

  /** The aud a first-party token is answered with: the declared audience, else the one it names. */
  function firstAudience(audiences: readonly string[]): string {
    return expectedAudience ?? audiences[0] ?? "";
  }
}

/** RFC 7519 section 4.1.3: one audience as a string, several as an array. */
function audienceClaim(audience: readonly string[]): string | string[] {
  if (audience.length === 0) throw new Error("a token needs an audience");
  return audience.length === 1 ? (audience[0] as string) : [...audience];
}

/** The jkt of a token's cnf claim (RFC 9449 section 6.1); a cnf without one makes the token invalid. */
function boundKey(cnf: unknown): string {
  const jkt = typeof cnf === "object" && cnf !== null ? (cnf as { jkt?: unknown }).jkt : undefined;
  if (typeof jkt !== "string" || jkt === "") throw new InvalidToken("cnf without jkt");
  return jkt;
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((entry) => typeof entry === "string") ? value : undefined;
}

/**
 * Which verify a token is for, from its claims read without verifying them (the verify then decides):
 * a stamp is a first-party user token's; a client_id equal to sub, a client's own token; any other
 * client_id, a relying party's token for a user.
 */
export function tokenKind(token: string): TokenKind {
  // Found by the signature and compared in full, as verified-tokens.ts finds verified tokens: a resource
  // server introspects the same token again and again, and decoding its payload was a part of each call.
  const signature = token.slice(token.lastIndexOf(".") + 1);
  const known = kindsSeen.get(signature);
  if (known !== undefined && known.token === token) return known.kind;
  const kind = kindOf(token);
  if (token.length > KIND_TOKEN_MAX_LENGTH) return kind;
  if (kindsSeen.size >= KINDS_REMEMBERED) kindsSeen.delete(kindsSeen.keys().next().value as string);
  kindsSeen.set(signature, { token, kind });
  return kind;
}

/**
 * The kinds of the last tokens asked about, by signature; the oldest goes first. Unverified, so
 * bounded by size as well as number (at most about 2 MB), and a flood of made-up tokens only pushes
 * real ones out: they are then decoded again.
 */
const KINDS_REMEMBERED = 1000;
const KIND_TOKEN_MAX_LENGTH = 1024;
const kindsSeen = new Map<string, { token: string; kind: TokenKind }>();

function kindOf(token: string): TokenKind {
  const start = token.indexOf(".");
  const end = token.indexOf(".", start + 1);
  if (start < 0 || end < 0) return "unknown";
  const payload = jsonSegment(token.slice(start + 1, end));
  if (payload === undefined) return "unknown";
  if (payload.stamp !== undefined) return "user";
  if (typeof payload.client_id !== "string") return "unknown";
  return payload.client_id === payload.sub ? "client" : "delegated";
}

/**
 * A token segment's JSON object (base64url-decoded), or undefined for anything else, without throwing:
 * junk tokens are what an attacker sends by the thousand, and the SyntaxError of JSON.parse (with its
 * stack trace) was most of what refusing one cost. Only this service's own compact JSON is looked for.
 */
export function jsonSegment(segment: string): Record<string, unknown> | undefined {
  const text = Buffer.from(segment, "base64url").toString("utf8");
  if (text.charCodeAt(0) !== 0x7b || text.charCodeAt(text.length - 1) !== 0x7d) return undefined;
  try {
    const value: unknown = withoutStackTraces(() => JSON.parse(text));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The kid of the protected header, or "" when there is none or the header is not JSON. */
function readKeyId(token: string): string {
  const end = token.indexOf(".");
  if (end <= 0) return "";
  const kid = jsonSegment(token.slice(0, end))?.kid;
  return typeof kid === "string" ? kid : "";
}
