// Browser side of the passkey ceremonies, in plain script (no library): the
// service sends WebAuthn's JSON options (PublicKeyCredentialCreationOptionsJSON,
// PublicKeyCredentialRequestOptionsJSON) with binary fields in base64url; the
// browser's navigator.credentials wants ArrayBuffers and answers with them.
// These helpers convert both ways, field by field, as @simplewebauthn/browser
// does, so the pages work in browsers without PublicKeyCredential.toJSON().

import { t } from "./session.js";

export function toBase64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

export function passkeysSupported() {
  return typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

const descriptor = (credential) => ({ ...credential, id: fromBase64url(credential.id) });

/** A credential as JSON (what PublicKeyCredential.toJSON() gives where browsers have it). */
function credentialJson(credential, response) {
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    authenticatorAttachment: credential.authenticatorAttachment || undefined,
    clientExtensionResults: credential.getClientExtensionResults(),
    response: { clientDataJSON: toBase64url(credential.response.clientDataJSON), ...response },
  };
}

/** navigator.credentials.create() with the service's options; the new credential as JSON. */
export async function createPasskey(options) {
  const publicKey = {
    ...options,
    challenge: fromBase64url(options.challenge),
    user: { ...options.user, id: fromBase64url(options.user.id) },
    excludeCredentials: (options.excludeCredentials || []).map(descriptor),
  };
  const credential = await navigator.credentials.create({ publicKey });
  const response = credential.response;
  return credentialJson(credential, {
    attestationObject: toBase64url(response.attestationObject),
    transports: typeof response.getTransports === "function" ? response.getTransports() : [],
  });
}

/** navigator.credentials.get() with the service's options; the assertion as JSON. */
export async function getPasskey(options) {
  const publicKey = {
    ...options,
    challenge: fromBase64url(options.challenge),
    allowCredentials: (options.allowCredentials || []).map(descriptor),
  };
  const credential = await navigator.credentials.get({ publicKey });
  const response = credential.response;
  return credentialJson(credential, {
    authenticatorData: toBase64url(response.authenticatorData),
    signature: toBase64url(response.signature),
    userHandle: response.userHandle ? toBase64url(response.userHandle) : undefined,
  });
}

/** A person's words for the DOMExceptions the ceremonies throw (message keys of the page's language). */
export function ceremonyError(error) {
  if (error && error.name === "NotAllowedError") return t("pages.sharedJs.passkeyCancelled");
  if (error && error.name === "InvalidStateError") return t("pages.sharedJs.passkeyExists");
  if (error && error.name === "SecurityError") return t("pages.sharedJs.passkeyAddress");
  return t("pages.sharedJs.passkeyFailed");
}
