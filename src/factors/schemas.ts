// Second factors' shapes: passkeys (WebAuthn ceremonies, each begun with a
// stored challenge, and the caller's list), the authenticator app's
// enrolment and confirmation, recovery codes, and the status of them all.
// Turning a factor off or making new codes asks for the password again.
import { type Static, Type } from "typebox";
import { PASSWORD_MAX_LENGTH } from "../auth/password-policy.ts";
import { Timestamp } from "../users/schemas.ts";

// Passkeys (WebAuthn). The options and credential objects are WebAuthn's own JSON shapes
// (PublicKeyCredentialCreationOptionsJSON and friends): open objects here, checked by the library.
const WebAuthnJson = (description: string) =>
  Type.Object({}, { additionalProperties: true, description, examples: [{}] });
const ChallengeId = Type.String({
  format: "uuid",
  description: "Names the ceremony's stored challenge; send it back with the answer. Single use, 5 minutes.",
});
const PasskeyName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: "^[^\\u0000-\\u001f]*$",
  description: "Your name for it, to tell your passkeys apart.",
  examples: ["Laptop fingerprint"],
});

export const PasskeyOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    name: PasskeyName,
    created_at: Timestamp,
    last_used_at: Type.Union([Timestamp, Type.Null()], { description: "The last sign-in with it." }),
    backed_up: Type.Boolean({ description: "Whether the authenticator says it is synced (a multi-device passkey)." }),
  },
  { $id: "Passkey", description: "One of your passkeys. Never its key material." },
);

export const PasskeyAddedOut = Type.Object(
  {
    ...PasskeyOut.properties,
    recovery_codes: Type.Array(Type.String(), {
      description:
        "Your first second factor's ten recovery codes, shown this once: each works once in place of a " +
        "passkey or an app's code. Empty when you already had codes (they stay valid).",
    }),
  },
  { $id: "PasskeyAdded", description: "The passkey just added, and the recovery codes of a first factor." },
);
export const PasskeyList = Type.Array(PasskeyOut, { $id: "PasskeyList", description: "Your passkeys, oldest first." });
export const PasskeyIdParams = Type.Object({ id: Type.String({ format: "uuid" }) });
export const PasskeyRename = Type.Object(
  { name: PasskeyName },
  { $id: "PasskeyRename", additionalProperties: false, description: "The new name." },
);
export type PasskeyRename = Static<typeof PasskeyRename>;
export const PasskeyCreate = Type.Object(
  {
    challenge_id: ChallengeId,
    name: PasskeyName,
    response: WebAuthnJson(
      "The credential from `navigator.credentials.create()`, as JSON (its `toJSON()`, or @simplewebauthn/browser's " +
        "`startRegistration()`): `id`, `rawId`, `type`, `response.clientDataJSON`, `response.attestationObject`...",
    ),
  },
  {
    $id: "PasskeyCreate",
    additionalProperties: false,
    description: "The answer to the registration options, with a name for the new passkey.",
  },
);
export type PasskeyCreate = Static<typeof PasskeyCreate>;
/** A ceremony begun: the id of its stored challenge and WebAuthn's options for the browser. */
const CeremonyOut = ($id: string, what: string, options: string) =>
  Type.Object({ challenge_id: ChallengeId, options: WebAuthnJson(options) }, { $id, description: `${what}, begun.` });
export const RegistrationOptionsOut = CeremonyOut(
  "PasskeyRegistrationOptions",
  "A registration ceremony",
  "PublicKeyCredentialCreationOptionsJSON: pass to `navigator.credentials.create()`.",
);
export const AuthenticationOptionsIn = Type.Object(
  {
    mfa_token: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: "The `mfa_token` of the password grant's 403 `mfa_required`: a passkey as the second factor.",
      }),
    ),
  },
  {
    $id: "PasskeyAuthenticationOptionsRequest",
    additionalProperties: false,
    description: "`{}` for a sign-in with a passkey alone (discoverable); `{mfa_token}` for the second factor.",
  },
);
export type AuthenticationOptionsIn = Static<typeof AuthenticationOptionsIn>;
export const AuthenticationOptionsOut = CeremonyOut(
  "PasskeyAuthenticationOptions",
  "An authentication ceremony",
  "PublicKeyCredentialRequestOptionsJSON: pass to `navigator.credentials.get()`.",
);

const TotpCode = Type.String({
  pattern: "^[0-9]{6}$",
  description: "The six-digit code the authenticator app shows now.",
  examples: ["123456"],
});
const RecoveryCodeIn = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "One unused recovery code; dashes and case do not matter.",
  examples: ["7q2x-m9kd-4vbn"],
});
const CurrentPassword = Type.String({
  minLength: 1,
  maxLength: PASSWORD_MAX_LENGTH,
  examples: ["correct horse battery staple"],
});

export const MfaStatus = Type.Object(
  {
    totp_enabled: Type.Boolean({ description: "An authenticator app is set up and confirmed." }),
    recovery_codes_remaining: Type.Integer({ description: "Unused recovery codes." }),
    passkeys: Type.Integer({ description: "Registered passkeys (each a second factor; see /me/passkeys)." }),
  },
  {
    $id: "MfaStatus",
    description: "Your second factors.",
    examples: [{ totp_enabled: true, recovery_codes_remaining: 9, passkeys: 1 }],
  },
);

export const TotpEnrolmentOut = Type.Object(
  {
    secret: Type.String({ description: "The base32 secret, to type into an app that cannot scan the QR code." }),
    otpauth_uri: Type.String({
      description: "The `otpauth://totp/...` URI (issuer, e-mail as label, SHA1, 6 digits, 30 s).",
    }),
    qr_code: Type.String({ description: "The URI as a QR code: a `data:image/png;base64,...` URI for an `<img>`." }),
  },
  {
    $id: "TotpEnrolment",
    description: "Scan the QR code (or type the secret), then confirm with a code at POST /me/totp/confirm.",
    examples: [
      {
        secret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
        otpauth_uri:
          "otpauth://totp/Example:ada%40example.com?issuer=Example&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30",
        qr_code: "data:image/png;base64,iVBORw0KGgo...",
      },
    ],
  },
);

export const TotpConfirm = Type.Object(
  { code: TotpCode },
  { $id: "TotpConfirm", additionalProperties: false, examples: [{ code: "123456" }] },
);
export type TotpConfirm = Static<typeof TotpConfirm>;

export const TotpDisable = Type.Object(
  { password: CurrentPassword, code: Type.Optional(TotpCode), recovery_code: Type.Optional(RecoveryCodeIn) },
  {
    $id: "TotpDisable",
    additionalProperties: false,
    description: "Your password and either a code of the app or a recovery code (exactly one of the two).",
    examples: [{ password: "correct horse battery staple", code: "123456" }],
  },
);
export type TotpDisable = Static<typeof TotpDisable>;

export const PasswordConfirmation = Type.Object(
  { password: CurrentPassword },
  {
    $id: "PasswordConfirmation",
    additionalProperties: false,
    description: "Your password, to prove it is you.",
    examples: [{ password: "correct horse battery staple" }],
  },
);
export type PasswordConfirmation = Static<typeof PasswordConfirmation>;

export const RecoveryCodesOut = Type.Object(
  {
    recovery_codes: Type.Array(Type.String(), {
      description: "Shown this once: each code works once in place of the app's code. Empty when none were made now.",
    }),
  },
  {
    $id: "RecoveryCodes",
    examples: [
      {
        recovery_codes: [
          "7q2x-m9kd-4vbn",
          "h3tz-0c8w-p6rf",
          "e5ya-k1gn-9s2m",
          "b8dv-r4xq-t0hc",
          "n6wj-2fzk-a7pe",
          "y1mc-s5tb-8dgx",
          "q9re-v3nh-6kzw",
          "c2pf-x7ja-m4ty",
          "g0kd-w8eb-1vrn",
          "t4zs-h6qm-3cya",
        ],
      },
    ],
  },
);
