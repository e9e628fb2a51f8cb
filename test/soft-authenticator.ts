// A software WebAuthn authenticator for the API tests: an ES256 key pair from
// node:crypto, attestation "none", and assertions built byte by byte as the
// WebAuthn spec lays them out (authenticator data: RP id hash, flags, sign
// counter, attested credential data with a COSE key). It answers whatever
// options it is given and lets a test lie on purpose: another origin, another
// RP id, no user verification, a counter that goes backwards.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export interface Lies {
  origin?: string;
  rpId?: string;
  /** User verification (default true). */
  userVerified?: boolean;
  /** Overrides the sign counter of this answer. */
  counter?: number;
  /** Signs another challenge than the one asked. */
  challenge?: string;
  /** Leaves the user handle out (a non-discoverable answer). */
  noUserHandle?: boolean;
}

const b64u = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString("base64url");

export class SoftAuthenticator {
  readonly credentialId = randomBytes(32);
  readonly #privateKey: KeyObject;
  readonly #publicJwk: { x: string; y: string };
  /** The next counter value this authenticator will report (counters go up with each assertion). */
  counter: number;
  /** The user handle stored with the credential at registration (a discoverable credential). */
  userHandle: string | undefined;

  readonly origin: string;

  constructor(origin: string, options: { counter?: number } = {}) {
    this.origin = origin;
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.#privateKey = privateKey;
    this.#publicJwk = publicKey.export({ format: "jwk" }) as { x: string; y: string };
    this.counter = options.counter ?? 1;
  }

  get id(): string {
    return b64u(this.credentialId);
  }

  #authData(rpId: string, flags: number, counter: number, attested?: Uint8Array): Buffer {
    const counterBytes = Buffer.alloc(4);
    counterBytes.writeUInt32BE(counter);
    return Buffer.concat([
      createHash("sha256").update(rpId).digest(),
      Buffer.from([flags]),
      counterBytes,
      ...(attested ? [attested] : []),
    ]);
  }

  #clientData(type: string, challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** The answer to registration options, as a browser's credential.toJSON() gives it. */
  register(options: Record<string, unknown>, lies: Lies = {}): Record<string, unknown> {
    const rp = options.rp as { id: string };
    const user = options.user as { id: string };
    this.userHandle = user.id;
    const cose = new Map<number, number | Uint8Array>([
      [1, 2], // kty: EC2
      [3, -7], // alg: ES256
      [-1, 1], // crv: P-256
      [-2, new Uint8Array(Buffer.from(this.#publicJwk.x, "base64url"))],
      [-3, new Uint8Array(Buffer.from(this.#publicJwk.y, "base64url"))],
    ]);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, Buffer.from(isoCBOR.encode(cose))]);
    const flags = FLAG_UP | FLAG_AT | (lies.userVerified === false ? 0 : FLAG_UV);
    const authData = this.#authData(lies.rpId ?? rp.id, flags, 0, attested);
    const attestationObject = isoCBOR.encode(
      new Map<string, unknown>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", new Uint8Array(authData)],
      ]) as never,
    );
    const clientDataJSON = this.#clientData(
      "webauthn.create",
      lies.challenge ?? (options.challenge as string),
      lies.origin ?? this.origin,
    );
    return this.#credential({
      clientDataJSON: b64u(clientDataJSON),
      attestationObject: b64u(attestationObject),
      transports: ["internal"],
    });
  }

  /** The answer to authentication options. */
  assert(options: Record<string, unknown>, lies: Lies = {}): Record<string, unknown> {
    const counter = lies.counter ?? this.counter;
    if (lies.counter === undefined) this.counter += 1;
    const flags = FLAG_UP | (lies.userVerified === false ? 0 : FLAG_UV);
    const authData = this.#authData(lies.rpId ?? (options.rpId as string), flags, counter);
    const clientDataJSON = this.#clientData(
      "webauthn.get",
      lies.challenge ?? (options.challenge as string),
      lies.origin ?? this.origin,
    );
    const signature = sign(
      "sha256",
      Buffer.concat([authData, createHash("sha256").update(clientDataJSON).digest()]),
      this.#privateKey,
    );
    return this.#credential({
      clientDataJSON: b64u(clientDataJSON),
      authenticatorData: b64u(authData),
      signature: b64u(signature),
      ...(lies.noUserHandle || this.userHandle === undefined ? {} : { userHandle: this.userHandle }),
    });
  }

  /** The credential as a browser's toJSON() gives it, around a response. */
  #credential(response: Record<string, unknown>): Record<string, unknown> {
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response,
    };
  }
}
