// Where the device authorization grant's endpoints live (RFC 8628): named
// once, for the routes, discovery, and the sign-in page's continuation check.
export const DEVICE_AUTHORIZATION_PATH = "/oauth/device_authorization";
/** The verification URI a person opens (RFC 8628 section 3.3): enter the code, approve or deny. */
export const DEVICE_PAGE_PATH = "/device";
export const DEVICE_DECISION_PATH = "/device/decision";

/** Whether a sign-in may continue to this address: the /device page itself, never another address. */
export function isDevicePageAddress(address: string): boolean {
  return address === DEVICE_PAGE_PATH || address.startsWith(`${DEVICE_PAGE_PATH}?`);
}
