// Pushed authorization requests (RFC 9126, issue 36): the parameters a client
// pushed, kept under the SHA-256 of their request_uri's random part (never
// the request_uri itself), for a short lifetime and one use. Spent by one
// conditional UPDATE, so of two instances (or two tabs) presenting one
// request_uri at once exactly one gets the request; the other learns why not.

/** A pushed request as stored. */
export interface PushedRequestRecord {
  /** SHA-256 (base64url) of the request_uri's random part. */
  referenceHash: string;
  /** The client that pushed it (authenticated at the push); only it may use it. */
  clientId: string;
  /** The authorization request's parameters, as pushed (client_id included, no client secret). */
  parameters: Record<string, string>;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

export type NewPushedRequest = Omit<PushedRequestRecord, "usedAt">;

/** What presenting a request_uri came to: the request, or why not. */
export type PushedRequestUse =
  | { outcome: "used"; request: PushedRequestRecord }
  | { outcome: "unknown" }
  | { outcome: "expired" }
  /** Presented before: one use only. */
  | { outcome: "reused" }
  /** Pushed by another client: not spent by this attempt, so the rightful client can still use it. */
  | { outcome: "other_client" };

export interface PushedRequestVerbs {
  savePushedRequest(request: NewPushedRequest): Promise<void>;
  /**
   * Spends the request at `at` if `clientId` pushed it, it has not expired and was never used; one
   * conditional UPDATE: a request is used once, across instances.
   */
  usePushedRequest(referenceHash: string, clientId: string, at: string): Promise<PushedRequestUse>;
  /** Deletes up to `limit` requests that expired before `before`. */
  purgePushedRequests(before: string, limit: number): Promise<number>;
}
