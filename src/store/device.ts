// The device authorization grant's aggregate (store.ts; RFC 8628, issue 36):
// one row per device authorization request, named by the SHA-256 of its
// device code (the poll's one indexed read) and findable by the SHA-256 of
// its user code (the /device page). Its life is a few conditional UPDATEs,
// so that of two instances (or two requests) acting at once exactly one
// wins: pending -> approved | denied (the page), approved -> redeemed (the
// token endpoint; one use). The last poll's time and the interval live in
// the row, so slow_down holds across instances.

/** Where a device authorization stands. */
export type DeviceAuthorizationStatus = "pending" | "approved" | "denied" | "redeemed";

export interface DeviceAuthorizationRecord {
  deviceCodeHash: string;
  userCodeHash: string;
  clientId: string;
  /** Space-separated scopes the device asked for (checked against the client's). */
  scope: string;
  status: DeviceAuthorizationStatus;
  /** Who approved or denied it; null while pending. */
  userId: string | null;
  /** The browser session it was approved in (its amr and auth_time; the client session dies with it). */
  browserSessionId: string | null;
  /** Seconds the device must wait between polls: raised by 5 at each slow_down. */
  intervalSeconds: number;
  lastPolledAt: string | null;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  redeemedAt: string | null;
}

export type NewDeviceAuthorization = Pick<
  DeviceAuthorizationRecord,
  "deviceCodeHash" | "userCodeHash" | "clientId" | "scope" | "intervalSeconds" | "createdAt" | "expiresAt"
>;

export interface DeviceDecision {
  status: "approved" | "denied";
  userId: string;
  browserSessionId: string;
  at: string;
}

export interface DeviceVerbs {
  /** Inserts a new request; false when its user code is already taken (the caller draws another). */
  createDeviceAuthorization(record: NewDeviceAuthorization): Promise<boolean>;
  /** The request a device code names (by its hash): the poll's one read. */
  findDeviceAuthorization(deviceCodeHash: string): Promise<DeviceAuthorizationRecord | undefined>;
  /** The pending, unexpired request a user code names (by its hash), for the /device page. */
  findPendingDeviceAuthorization(userCodeHash: string, now: string): Promise<DeviceAuthorizationRecord | undefined>;
  /**
   * Approves or denies a pending, unexpired request, in one conditional UPDATE; undefined when it was
   * no longer pending (decided elsewhere, expired, unknown).
   */
  decideDeviceAuthorization(
    userCodeHash: string,
    decision: DeviceDecision,
    now: string,
  ): Promise<DeviceAuthorizationRecord | undefined>;
  /** Remembers a poll's time, raising the interval by `slowDownSeconds` (0 for a poll in time). */
  recordDevicePoll(deviceCodeHash: string, at: string, slowDownSeconds: number): Promise<void>;
  /** Spends an approved request, in one conditional UPDATE: of two redemptions only one gets the row. */
  redeemDeviceAuthorization(deviceCodeHash: string, at: string): Promise<DeviceAuthorizationRecord | undefined>;
  /** Deletes up to `limit` requests that expired before `before`. */
  purgeDeviceAuthorizations(before: string, limit: number): Promise<number>;
}
