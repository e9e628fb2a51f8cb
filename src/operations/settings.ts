// The operations settings: the Prometheus metrics' own address (off unless
// set, so they are never public by accident) and how long the housekeeping
// keeps audit events and delivery records. Declared here, beside the
// operations; config.ts composes them.
import { type Env, integer, section, text } from "../settings/declare.ts";

export interface OperationsSettings {
  /** Prometheus metrics on their own address; off when unset. */
  metrics?: { host: string; port: number };
  /** Audit events (and sent mail, delivered webhooks, back-channel logouts) older than this are pruned. */
  auditRetentionDays: number;
}

const METRICS_PORT = integer({
  name: "METRICS_PORT",
  default: "unset",
  min: 0,
  max: 65_535,
  meaning:
    "When set, Prometheus metrics are served at `GET /metrics` on this port, on `METRICS_HOST` only (never " +
    "on the API port): requests, logins, password hashing and its queue, deliveries, OAuth clients and OpenID " +
    "Connect (by outcome only, never by client), and the process. The list, their labels and what to watch: " +
    "[Metrics](../operating/metrics.md).",
});

const METRICS_HOST = text({
  name: "METRICS_HOST",
  fallback: "127.0.0.1",
  default: "`127.0.0.1`",
  meaning: "The address the metrics listen on, when `METRICS_PORT` is set.",
});

const AUDIT_RETENTION_DAYS = integer({
  name: "AUDIT_RETENTION_DAYS",
  fallback: 90,
  min: 1,
  max: 3650,
  meaning:
    "[Audit events](audit-events.md) (each with time, user id, client address and outcome) older than this " +
    "are pruned, every ten minutes; so are sent mail, delivered webhook events and their delivery log, mail and " +
    "webhook events given up on (counted from when they were queued), and back-channel logouts sent or given up.",
});

export const OPERATIONS_SETTINGS = section("Operations", "src/operations/settings.ts", [
  METRICS_PORT,
  METRICS_HOST,
  AUDIT_RETENTION_DAYS,
]);

export function readOperationsSettings(env: Env): OperationsSettings {
  return {
    auditRetentionDays: AUDIT_RETENTION_DAYS.read(env),
    metrics:
      METRICS_PORT.raw(env) === undefined ? undefined : { host: METRICS_HOST.read(env), port: METRICS_PORT.read(env) },
  };
}
