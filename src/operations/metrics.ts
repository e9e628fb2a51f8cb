// Prometheus metrics (prom-client), off unless METRICS_PORT is set; then
// served on that port only (see server.ts), never on the public API port.
// Request counts and latency by route and status, login outcomes, rate-limit
// refusals and store failures are all read off responses in one onResponse
// hook; mail and webhook deliveries are counted by their outbox workers; OAuth clients'
// authentications by the client registry; OAuth and OpenID Connect actions
// (authorizations, code exchanges, client_credentials, introspection,
// userinfo, consent, logout) in the same hook, by outcome; hash durations come from a wrapper around the password hasher;
// the hash queue's depth is read when scraped, and its refusals (503) are told from a store's by the error handlers' mark (platform/refused-hash-turns.ts);
// process metrics from prom-client's defaults.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { hashingLoad, type PasswordHasher } from "../auth/passwords.ts";
import type { ObservedAction } from "./observed-actions.ts";

/** Which step of a login a token-endpoint request was, when not the password or refresh grant's plain answer. */
export type LoginStep = "mfa_required" | "second_factor";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the token endpoint for the login metrics (see observeRequest). */
    loginStep: LoginStep | null;
  }
}

export interface Metrics {
  registry: Registry;
  /** The registry's samples in Prometheus' text format (GET /metrics). */
  exposition(): Promise<string>;
  /**
   * Records one finished request. `route` is the route pattern (`/users/:id`), never the raw URL;
   * `loginStep` tells a second-factor challenge or grant from a plain login; `hashQueueFull` tells a
   * 503 of the full password-hash queue from one of an unreachable store.
   */
  observeRequest(
    method: string,
    route: string,
    status: number,
    seconds: number,
    loginStep?: LoginStep | null,
    hashQueueFull?: boolean,
  ): void;
  /** A connection Node answered and closed before any route ran: 408 (request not received in time), 431, 400. */
  observeConnectionError(status: number): void;
  /** The same hasher, timing every hash and verify. */
  instrumentHasher(hasher: PasswordHasher): PasswordHasher;
  /** Counts one passkey assertion by purpose (login, second_factor) and result (success, failure). */
  observePasskey(purpose: string, result: string): void;
  /** Counts one delivery attempt of the mail outbox by kind and result (sent, retry, failed). */
  observeMail(kind: string, result: string): void;
  /** Counts one webhook delivery attempt by event type and result (sent, retry, failed). */
  observeWebhook(type: string, result: string): void;
  /** Counts one back-channel logout delivery attempt by result (sent, retry, failed). */
  observeBackchannelLogout(result: string): void;
  /**
   * Counts one client authentication of a registered OAuth client by method (client_secret_basic,
   * client_secret_post, none) and result (success, failure): failures climbing is a guessed secret.
   */
  observeClientAuthentication(method: string, result: string): void;
  /** Counts one OAuth or OpenID Connect action by outcome (success, or why not). */
  observeAction(action: ObservedAction, outcome: string): void;
  /**
   * Counts one DPoP proof checked (issue 36) where it was sent (token, resource) by outcome: accepted,
   * or the reason it was refused (nonce_missing is the protocol's first step; replayed, htu, wrong_key are not).
   */
  observeDpopProof(place: string, outcome: string): void;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const logins = new Counter({
    name: "logins_total",
    help:
      "Token-endpoint logins by outcome: success, failure (wrong or unknown credentials), rate_limited; " +
      "mfa_required (right password, second factor asked for); mfa_success, mfa_failure (wrong code or " +
      "mfa_token), mfa_rate_limited (the second-factor grants).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: "rate_limit_refusals_total",
    help: "Requests refused with 429 by the brute-force limits, by route.",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: "store_unavailable_total",
    help: "Requests answered 503 because the database or Redis could not be reached, by route.",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  const hashRefusals = new Counter({
    name: "password_hash_queue_refusals_total",
    help: "Requests answered 503 at once because PASSWORD_HASH_QUEUE_LIMIT hashes were already waiting for a core, by route.",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "password_hash_queue_depth",
    help: "Password hashes and verifies waiting for a core now (at most PASSWORD_HASH_QUEUE_LIMIT; those running are not counted).",
    registers: [registry],
    collect() {
      this.set(hashingLoad().waiting);
    },
  });
  const hashing = new Histogram({
    name: "password_hash_duration_seconds",
    help: "Argon2id (or imported bcrypt) work per operation: hash, verify, verify_dummy.",
    labelNames: ["operation"] as const,
    buckets: [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64],
    registers: [registry],
  });

  const mail = new Counter({
    name: "mail_messages_total",
    help: "Outbox deliveries by kind (password_reset, email_verification, and each security notification: email_changed, new_device, ...) and result: sent, retry (failed, will be tried again), failed (gave up).",
    labelNames: ["kind", "result"] as const,
    registers: [registry],
  });
  const webhooks = new Counter({
    name: "webhook_deliveries_total",
    help: "Webhook delivery attempts by event type and result: sent (a 2xx), retry (failed, will be tried again), failed (gave up; the endpoint is turned off).",
    labelNames: ["type", "result"] as const,
    registers: [registry],
  });
  const backchannelLogouts = new Counter({
    name: "backchannel_logouts_total",
    help: "Back-channel logout deliveries (logout tokens POSTed to relying parties) by result: sent (a 2xx), retry (failed, will be tried again), failed (gave up).",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const passkeys = new Counter({
    name: "passkey_assertions_total",
    help: "Passkey assertions by purpose (login: a passkey alone; second_factor: after the password) and result: success, failure.",
    labelNames: ["purpose", "result"] as const,
    registers: [registry],
  });
  const clientAuthentications = new Counter({
    name: "oauth_client_authentications_total",
    help: "Authentications of registered OAuth clients by method and result: success, failure.",
    labelNames: ["method", "result"] as const,
    registers: [registry],
  });
  const dpopProofs = new Counter({
    name: "dpop_proofs_total",
    help: "DPoP proofs checked, by place (token, resource) and outcome: accepted, or why refused.",
    labelNames: ["place", "outcome"] as const,
    registers: [registry],
  });
  const action = (name: string, help: string) =>
    new Counter({ name, help, labelNames: ["outcome"] as const, registers: [registry] });
  const actions: Record<ObservedAction, Counter<"outcome">> = {
    authorization: action(
      "oidc_authorizations_total",
      "Authorization requests (GET or POST /oauth/authorize) by outcome: code (issued), sign_in (sent to the " +
        "sign-in page), consent_page, retry_as_get (a POST without the session cookie), error_page (unknown " +
        "client or redirect URI), invalid_request_uri (a pushed request's request_uri unknown, expired, used or " +
        "another client's; its continuation altered or expired), or the error sent to the client " +
        "(login_required, consent_required, invalid_request, invalid_scope, unsupported_response_type).",
    ),
    code_exchange: action(
      "oidc_code_exchanges_total",
      "authorization_code grants by outcome: success, replayed (a code presented again: what it issued is " +
        "revoked), or the RFC 6749 error (invalid_grant, invalid_client, unauthorized_client, invalid_request).",
    ),
    client_credentials: action(
      "oauth_client_credentials_grants_total",
      "client_credentials grants by outcome: success, or the RFC 6749 error (invalid_client, " +
        "unauthorized_client, invalid_scope, invalid_request).",
    ),
    introspection: action(
      "oauth_introspections_total",
      "Token introspections (POST /auth/introspect) by outcome: active, inactive, unauthorized, forbidden, " +
        "invalid_request.",
    ),
    userinfo: action(
      "oidc_userinfo_requests_total",
      "userinfo requests by outcome: success, unauthorized (no token, an invalid one, or its session ended), " +
        "forbidden (no openid scope).",
    ),
    consent: action(
      "oidc_consents_total",
      "Consent answers by outcome: granted, denied, expired_form, login_required; revoked (DELETE " +
        "/me/apps/{client_id}), not_found.",
    ),
    logout: action(
      "oidc_logouts_total",
      "RP-initiated logouts (/oauth/logout) by outcome: signed_out, confirmation_page (asked first), " +
        "error_page (an ID token hint or return address refused).",
    ),
    // Issue 36, PAR.
    pushed_authorization_request: action(
      "oidc_pushed_authorization_requests_total",
      "Pushed authorization requests (POST /oauth/par) by outcome: pushed, or the RFC 6749 error (invalid_client, " +
        "invalid_request, invalid_scope, unsupported_response_type, unauthorized_client, request_not_supported).",
    ),
    device_authorization: action(
      "oauth_device_authorizations_total",
      "Device authorization requests (RFC 8628, POST /oauth/device_authorization) by outcome: success, or the " +
        "RFC 6749 error (invalid_client, unauthorized_client, invalid_scope, invalid_request).",
    ),
    device_code: action(
      "oauth_device_code_grants_total",
      "Device code polls of the token endpoint by outcome: success, authorization_pending, slow_down, " +
        "access_denied, expired_token, or the RFC 6749 error (invalid_grant, invalid_client, unauthorized_client, " +
        "invalid_request).",
    ),
    device_verification: action(
      "oauth_device_verifications_total",
      "The /device page by outcome: sign_in (sent to sign in first), entry_page, confirm_page, wrong_code, " +
        "rate_limited, approved, denied, expired_form, code_gone.",
    ),
  };
  const connectionErrors = new Counter({
    name: "http_connection_errors_total",
    help: "Connections answered and closed before reaching a route, by status: 408 request not received within HEADERS_TIMEOUT_MS or REQUEST_TIMEOUT_MS, 431 headers too large, 400 not HTTP.",
    labelNames: ["status"] as const,
    registers: [registry],
  });

  const timed =
    <A extends unknown[], R>(operation: string, work: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const end = hashing.startTimer({ operation });
      try {
        return await work(...args);
      } finally {
        end();
      }
    };

  return {
    registry,
    async exposition() {
      // prom-client writes NaN as "Nan" (the event-loop lag right after start, before its first
      // sample); Prometheus' text format and OpenMetrics spell it "NaN".
      return (await registry.metrics()).replace(/ Nan$/gm, " NaN");
    },
    observeRequest(method, route, status, seconds, loginStep, hashQueueFull = false) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
      if (status === 429) refusals.inc({ route });
      if (status === 503) (hashQueueFull ? hashRefusals : storeErrors).inc({ route });
      if (route === "/auth/token" && method === "POST") {
        const outcome =
          status === 200 ? "success" : status === 401 ? "failure" : status === 429 ? "rate_limited" : undefined;
        if (loginStep === "mfa_required" && status === 403) logins.inc({ outcome: "mfa_required" });
        else if (outcome) logins.inc({ outcome: loginStep === "second_factor" ? `mfa_${outcome}` : outcome });
      }
    },
    observePasskey(purpose, result) {
      passkeys.inc({ purpose, result });
    },
    observeMail(kind, result) {
      mail.inc({ kind, result });
    },
    observeWebhook(type, result) {
      webhooks.inc({ type, result });
    },
    observeBackchannelLogout(result) {
      backchannelLogouts.inc({ result });
    },
    observeClientAuthentication(method, result) {
      clientAuthentications.inc({ method, result });
    },
    observeAction(name, outcome) {
      actions[name].inc({ outcome });
    },
    observeDpopProof(place, outcome) {
      dpopProofs.inc({ place, outcome });
    },
    observeConnectionError(status) {
      connectionErrors.inc({ status: String(status) });
    },
    instrumentHasher(hasher) {
      return {
        hash: timed("hash", hasher.hash),
        verify: timed("verify", hasher.verify),
        verifyDummy: timed("verify_dummy", hasher.verifyDummy),
        needsRehash: hasher.needsRehash,
      };
    },
  };
}
