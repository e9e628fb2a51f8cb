// The device authorization grant's settings (RFC 8628, issue 36): how long a
// device code and its user code live, and the interval a device must wait
// between polls. Declared here, beside the grant; config.ts composes them.
import { type Env, integer, section } from "../settings/declare.ts";

export interface DeviceSettings {
  /** Seconds a device authorization (its device code and user code) lives. */
  codeLifetimeSeconds: number;
  /** Seconds a device waits between polls of the token endpoint (RFC 8628 section 3.2 `interval`). */
  pollIntervalSeconds: number;
}

export const DEFAULT_DEVICE_SETTINGS: DeviceSettings = { codeLifetimeSeconds: 600, pollIntervalSeconds: 5 };

const DEVICE_CODE_LIFETIME_SECONDS = integer({
  name: "DEVICE_CODE_LIFETIME_SECONDS",
  fallback: DEFAULT_DEVICE_SETTINGS.codeLifetimeSeconds,
  default: "`600` (10 minutes)",
  min: 60,
  max: 3600,
  meaning:
    "How long a device authorization (RFC 8628: its device code and the user code a person types at " +
    "`/device`) stays usable; the answer's `expires_in`.",
});

const DEVICE_POLL_INTERVAL_SECONDS = integer({
  name: "DEVICE_POLL_INTERVAL_SECONDS",
  fallback: DEFAULT_DEVICE_SETTINGS.pollIntervalSeconds,
  min: 1,
  max: 60,
  meaning:
    "The `interval` a device must wait between polls of the token endpoint; a poll sooner is answered " +
    "`slow_down` and that device's interval grows by 5 seconds.",
});

export const DEVICE_SETTINGS = section("Device authorization grant", "src/device/settings.ts", [
  DEVICE_CODE_LIFETIME_SECONDS,
  DEVICE_POLL_INTERVAL_SECONDS,
]);

export function readDeviceSettings(env: Env): DeviceSettings {
  return {
    codeLifetimeSeconds: DEVICE_CODE_LIFETIME_SECONDS.read(env),
    pollIntervalSeconds: DEVICE_POLL_INTERVAL_SECONDS.read(env),
  };
}
