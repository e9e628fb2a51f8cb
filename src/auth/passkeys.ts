// Passkeys (WebAuthn): the only module that touches @simplewebauthn/server.
// Four verbs: registration options, register, authentication options, and
// verify an assertion (for a sign-in with the passkey alone, or as the second
// factor after a password). The relying party is PUBLIC_URL's host and its
// origin is PUBLIC_URL's origin; a response made for another origin or RP id
// is refused by the library. Every ceremony's challenge is random, stored
// (as its SHA-256) in the store so that any instance can finish it, spent by
// its first use whatever the outcome, and lives WEBAUTHN_CHALLENGE_TTL_SECONDS.
// Sign counters are kept: a counter that does not move forward (when either
// side is non-zero) is refused by the library, and the store writes the new
// one only if nobody wrote another meanwhile (compare and set), so of two
// uses of one counter value only one wins. A passkey alone must prove user
// verification (PIN, biometrics): it is the whole login; as a second factor,
// user presence is enough (the password was the other factor), as the
// library's and WebAuthn's guidance has it.
import { createHash, randomBytes } from "node:crypto";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { HttpError, unauthorized } from "../errors.ts";
import type { Audit } from "../platform/audit.ts";
import { newId } from "../store/ids.ts";
import type {
  AuditEntry,
  NewOutboxMessage,
  PasskeyRecord,
  UserRecord,
  UserStore,
  WebAuthnPurpose,
} from "../store/store.ts";

/**
 * The WebAuthn library (and the CBOR and ASN.1 code it brings) is loaded on the first ceremony, not at
 * start-up: most instances serve token checks long before anyone registers or uses a passkey.
 */
let webauthnLibrary: Promise<typeof import("@simplewebauthn/server")> | undefined;
const webauthn = () => {
  webauthnLibrary ??= import("@simplewebauthn/server");
  return webauthnLibrary;
};

import { INVALID_PASSKEY } from "./second-factors.ts";

/** How long a ceremony may take, from its options to its answer. */
export const WEBAUTHN_CHALLENGE_TTL_SECONDS = 300;
/** The relying party's name, shown by some authenticators beside the account. */
export const RELYING_PARTY_NAME = "User service";
/**
 * COSE algorithms accepted: EdDSA, ES256, RS256 (the library's classic default, named here so that it
 * does not probe the runtime for post-quantum ones, which prints an experimental-feature warning).
 */
const SUPPORTED_ALGORITHMS = [-8, -7, -257];

/**
 * A passkey alone at the token endpoint; a passkey as the second factor is schemas.ts's
 * MFA_WEBAUTHN_GRANT, beside the other answers to the password grant's 403 mfa_required.
 */
export const WEBAUTHN_GRANT = "urn:user-token-service:grant-type:webauthn";
/**
 * RFC 8176 amr of a session started by a passkey alone: a key held by the device ("hwk") whose
 * authenticator verified the user ("user": PIN or biometrics). After a password it is
 * sessions.ts's PASSWORD_AND_PASSKEY, ["pwd", "hwk", "mfa"].
 */
export const AMR_PASSKEY: readonly string[] = ["hwk", "user"];

/** The one answer to an assertion refused for any reason (the second-factor grant says the same). */
export const PASSKEY_NOT_VERIFIED = INVALID_PASSKEY;
export const WEBAUTHN_CHALLENGE_SPENT = "The passkey request expired or was already used: start again";
export const PASSKEY_ALREADY_REGISTERED = "This passkey is registered already";
export const MALFORMED_WEBAUTHN_RESPONSE = "webauthn_response is not a WebAuthn credential in JSON";

export interface RelyingParty {
  /** The RP id: a registrable domain, the host of the origin. */
  id: string;
  /** The one origin ceremonies may come from. */
  origin: string;
  name: string;
}

/**
 * PUBLIC_URL's host and origin. Without PUBLIC_URL (local development) the RP is `localhost` on the
 * listen port: browsers refuse an IP address as an RP id, and treat http://localhost as a secure
 * context, so the pages work at http://localhost:PORT/ (and not at http://127.0.0.1:PORT/).
 */
export function relyingPartyFor(publicUrl: string | undefined, baseUrl: () => string): () => RelyingParty {
  return () => {
    const base = new URL(publicUrl ?? baseUrl());
    if (publicUrl !== undefined) return { id: base.hostname, origin: base.origin, name: RELYING_PARTY_NAME };
    const origin = `${base.protocol}//localhost${base.port ? `:${base.port}` : ""}`;
    return { id: "localhost", origin, name: RELYING_PARTY_NAME };
  };
}

export interface CeremonyOptions<T> {
  challenge_id: string;
  options: T;
}

export interface Passkeys {
  relyingParty(): RelyingParty;
  registrationOptions(user: UserRecord): Promise<CeremonyOptions<PublicKeyCredentialCreationOptionsJSON>>;
  /**
   * Verifies a registration response and stores the passkey, with `recoveryCodes` (a first factor's:
   * their hashes and events) in the same transaction; 400 when it does not verify, 409 when known.
   */
  register(
    user: UserRecord,
    challengeId: string,
    name: string,
    response: unknown,
    clientAddress: string | null,
    recoveryCodes?: { hashes: readonly string[]; events: readonly AuditEntry[] },
    /** The passkey-added notice, queued with the passkey. */
    notice?: NewOutboxMessage,
  ): Promise<PasskeyRecord>;
  /** Options for a discoverable sign-in (userId null) or for one user's second factor. */
  authenticationOptions(
    purpose: "login" | "second_factor",
    userId: string | null,
  ): Promise<CeremonyOptions<PublicKeyCredentialRequestOptionsJSON>>;
  /**
   * Verifies an assertion against a live challenge of `purpose` (found by `challengeId`, or else by
   * the challenge the response signed); for a second factor the passkey must be `userId`'s. Records
   * the use (new counter, `events`) and answers the passkey's owner, active; or throws the 401 of an
   * invalid grant (422 when the response is not an assertion at all).
   */
  verify(
    purpose: "login" | "second_factor",
    response: unknown,
    clientAddress: string | null,
    expected?: AssertionExpectations,
  ): Promise<UserRecord>;
  /** verify as a yes or no (a refused assertion is false), for the password grant's second step. */
  accepts(
    purpose: "login" | "second_factor",
    response: unknown,
    clientAddress: string | null,
    expected?: AssertionExpectations,
  ): Promise<boolean>;
}

export interface AssertionExpectations {
  challengeId?: string | undefined;
  /** Whose passkey it must be (the second factor's account). */
  userId?: string;
  /** More events to record with the use. */
  events?: readonly AuditEntry[];
}

export interface PasskeyOptions {
  store: UserStore;
  audit: Audit;
  relyingParty: () => RelyingParty;
  clock: () => number;
  /** Counts each verified or refused assertion (metrics). */
  onAssertion?: (purpose: string, result: "success" | "failure") => void;
  /** Why an assertion was refused, for the operator's debug log; never sent to the client. */
  onRefusal?: (reason: string) => void;
}

export function hashChallenge(challenge: string): string {
  return createHash("sha256").update(challenge).digest("base64url");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;
const isBase64Url = (value: unknown): value is string => typeof value === "string" && BASE64URL.test(value);

/** The JSON of a credential as browsers' toJSON() and @simplewebauthn/browser make it, checked for shape only. */
function credentialJson(value: unknown, fields: readonly string[]): boolean {
  if (!isObject(value) || !isBase64Url(value.id) || value.id === "" || !isBase64Url(value.rawId)) return false;
  if (value.type !== "public-key" || !isObject(value.response)) return false;
  const inner = value.response;
  return fields.every((field) => isBase64Url(inner[field]) && inner[field] !== "");
}

export function isRegistrationResponse(value: unknown): value is RegistrationResponseJSON {
  return credentialJson(value, ["clientDataJSON", "attestationObject"]);
}

export function isAuthenticationResponse(value: unknown): value is AuthenticationResponseJSON {
  return credentialJson(value, ["clientDataJSON", "authenticatorData", "signature"]);
}

/** The challenge a response signed, read from its clientDataJSON; undefined when unreadable. */
function signedChallenge(response: AuthenticationResponseJSON): string | undefined {
  try {
    const data: unknown = JSON.parse(Buffer.from(response.response.clientDataJSON, "base64url").toString("utf8"));
    return isObject(data) && typeof data.challenge === "string" ? data.challenge : undefined;
  } catch {
    return undefined;
  }
}

export function createPasskeys({
  store,
  audit,
  relyingParty,
  clock,
  onAssertion,
  onRefusal,
}: PasskeyOptions): Passkeys {
  const iso = (offsetSeconds = 0) => new Date(clock() + offsetSeconds * 1000).toISOString();

  async function newChallenge(purpose: WebAuthnPurpose, userId: string | null) {
    const challenge = randomBytes(32).toString("base64url");
    const id = newId(clock());
    await store.saveWebAuthnChallenge({
      id,
      challengeHash: hashChallenge(challenge),
      purpose,
      userId,
      expiresAt: iso(WEBAUTHN_CHALLENGE_TTL_SECONDS),
    });
    return { id, challenge: new Uint8Array(Buffer.from(challenge, "base64url")) };
  }

  /** A refused assertion: audited (with the owner when known), counted, and one 401 for every cause. */
  async function refuse(
    purpose: string,
    userId: string | null,
    clientAddress: string | null,
    reason: string,
  ): Promise<never> {
    await audit.record("passkey", userId, "failed", clientAddress);
    onAssertion?.(purpose, "failure");
    onRefusal?.(reason);
    throw unauthorized(PASSKEY_NOT_VERIFIED);
  }

  const passkeys: Passkeys = {
    relyingParty,

    async registrationOptions(user) {
      const rp = relyingParty();
      const { id, challenge } = await newChallenge("registration", user.id);
      const existing = await store.listPasskeys(user.id);
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName: rp.name,
        rpID: rp.id,
        userName: user.email,
        userDisplayName: user.fullName ?? user.email,
        // The user handle names the account to a discoverable sign-in: the user's id, not the e-mail.
        userID: new Uint8Array(Buffer.from(user.id, "utf8")),
        challenge,
        timeout: WEBAUTHN_CHALLENGE_TTL_SECONDS * 1000,
        attestationType: "none",
        supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
        excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId, transports: passkey.transports })),
        // A discoverable credential signs in without an e-mail; a key that cannot hold one still works
        // as a second factor. Verification is asked for, and required when a passkey is used alone.
        authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
      });
      return { challenge_id: id, options };
    },

    async register(user, challengeId, name, response, clientAddress, recoveryCodes, notice) {
      if (!isRegistrationResponse(response)) throw new HttpError(422, MALFORMED_WEBAUTHN_RESPONSE);
      const challenge = await store.takeWebAuthnChallenge({ id: challengeId }, "registration", iso());
      if (!challenge || challenge.userId !== user.id) throw new HttpError(400, WEBAUTHN_CHALLENGE_SPENT);
      const rp = relyingParty();
      let verified: Awaited<ReturnType<typeof import("@simplewebauthn/server").verifyRegistrationResponse>>;
      try {
        verified = await (await webauthn()).verifyRegistrationResponse({
          response,
          expectedChallenge: (signed) => hashChallenge(signed) === challenge.challengeHash,
          expectedOrigin: rp.origin,
          expectedRPID: rp.id,
          requireUserVerification: false,
          supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
        });
      } catch {
        // The library's message names what did not match; it stays here (nothing secret, but not the
        // caller's business which check failed).
        verified = { verified: false };
      }
      if (!verified.verified) {
        await audit.record("passkey", user.id, "add_failed", clientAddress);
        throw new HttpError(400, PASSKEY_NOT_VERIFIED);
      }
      const { credential, credentialDeviceType, credentialBackedUp, aaguid } = verified.registrationInfo;
      const added = await store.addPasskey(
        {
          userId: user.id,
          credentialId: credential.id,
          publicKey: Buffer.from(credential.publicKey).toString("base64url"),
          counter: credential.counter,
          transports: (response.response.transports ?? []).filter((t) => typeof t === "string").slice(0, 8),
          name,
          deviceType: credentialDeviceType,
          backedUp: credentialBackedUp,
          aaguid: aaguid ?? null,
        },
        [{ type: "passkey", outcome: "added", clientAddress, notice }, ...(recoveryCodes?.events ?? [])],
        recoveryCodes?.hashes,
        // Only while the sign-in whose token was checked is live: an ending of every session meanwhile wins.
        { credentialStamp: user.credentialStamp },
      );
      if (!added) throw new HttpError(409, PASSKEY_ALREADY_REGISTERED);
      return added;
    },

    async authenticationOptions(purpose, userId) {
      const rp = relyingParty();
      const { id, challenge } = await newChallenge(purpose, userId);
      const allowCredentials =
        userId === null
          ? []
          : (await store.listPasskeys(userId)).map((passkey) => ({
              id: passkey.credentialId,
              transports: passkey.transports,
            }));
      const options = await (await webauthn()).generateAuthenticationOptions({
        rpID: rp.id,
        challenge,
        timeout: WEBAUTHN_CHALLENGE_TTL_SECONDS * 1000,
        allowCredentials,
        userVerification: purpose === "login" ? "required" : "preferred",
      });
      return { challenge_id: id, options };
    },

    async accepts(purpose, response, clientAddress, expected) {
      try {
        await passkeys.verify(purpose, response, clientAddress, expected);
        return true;
      } catch (error) {
        if (error instanceof HttpError && error.status === 401) return false;
        throw error;
      }
    },

    async verify(purpose, response, clientAddress, { challengeId, userId: expectedUserId, events = [] } = {}) {
      if (!isAuthenticationResponse(response)) throw new HttpError(422, MALFORMED_WEBAUTHN_RESPONSE);
      const signed = signedChallenge(response);
      const key =
        challengeId !== undefined ? { id: challengeId } : signed ? { challengeHash: hashChallenge(signed) } : undefined;
      // Spent by this first use, whatever follows: a replayed or second answer finds nothing.
      const challenge = key && (await store.takeWebAuthnChallenge(key, purpose, iso()));
      if (!challenge) {
        onAssertion?.(purpose, "failure");
        throw unauthorized(WEBAUTHN_CHALLENGE_SPENT);
      }
      const passkey = await store.findPasskeyByCredentialId(response.id);
      if (!passkey) return refuse(purpose, expectedUserId ?? null, clientAddress, "unknown credential");
      const owner = expectedUserId ?? challenge.userId;
      if (owner !== null && owner !== undefined && passkey.userId !== owner) {
        return refuse(purpose, owner, clientAddress, "another user's passkey");
      }
      // A discoverable credential names its account; it must be the one the passkey was registered to.
      const handle = response.response.userHandle;
      if (handle && Buffer.from(handle, "base64url").toString("utf8") !== passkey.userId) {
        return refuse(purpose, passkey.userId, clientAddress, "user handle mismatch");
      }
      const rp = relyingParty();
      let result: Awaited<ReturnType<typeof import("@simplewebauthn/server").verifyAuthenticationResponse>> | undefined;
      try {
        result = await (await webauthn()).verifyAuthenticationResponse({
          response,
          expectedChallenge: (value) => hashChallenge(value) === challenge.challengeHash,
          expectedOrigin: rp.origin,
          expectedRPID: rp.id,
          credential: {
            id: passkey.credentialId,
            publicKey: new Uint8Array(Buffer.from(passkey.publicKey, "base64url")),
            counter: passkey.counter,
            transports: passkey.transports,
          },
          // A passkey alone is the whole login: the authenticator must have verified the user.
          requireUserVerification: purpose === "login",
        });
      } catch (error) {
        // The library says which check failed; quoted values (challenges, origins) stay out of the log.
        return refuse(
          purpose,
          passkey.userId,
          clientAddress,
          String((error as Error).message).replace(/"[^"]*"/g, '"…"'),
        );
      }
      if (!result.verified) return refuse(purpose, passkey.userId, clientAddress, "not verified");
      const used = await store.recordPasskeyUse(
        passkey.id,
        {
          previousCounter: passkey.counter,
          counter: result.authenticationInfo.newCounter,
          backedUp: result.authenticationInfo.credentialBackedUp,
          at: iso(),
        },
        [{ type: "passkey", outcome: purpose === "login" ? "used" : "used_second_factor", clientAddress }, ...events],
      );
      if (!used) return refuse(purpose, passkey.userId, clientAddress, "counter raced");
      const user = await store.findById(passkey.userId);
      // An inactive account answers like a failed assertion: nothing tells "disabled" apart.
      if (!user?.isActive) return refuse(purpose, passkey.userId, clientAddress, "inactive");
      onAssertion?.(purpose, "success");
      return user;
    },
  };
  return passkeys;
}
