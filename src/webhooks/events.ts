// The events webhooks carry, and where they come from. Every write that
// changes an account already records its audit events in its transaction
// (store/sql/shared.ts); the same entries name the webhook events, so one table
// here is the one place that decides which change publishes what, and the
// events are written in the same transaction as the change (the outbox).
//
// The body is Standard Webhooks' shape, {type, timestamp, data}, with data
// holding the user's id and non-secret facts: the session's id, the kind
// of factor, the e-mail address on the events that are about the address
// or the record (user.created, user.updated, user.email_verified), so that
// a receiver can create or update a profile without calling back. Never a
// password, a hash, a token, a secret or a client address.
import { newId } from "../store/ids.ts";
import type { AuditEntry, WebhookEvent } from "../store/store.ts";

export const WEBHOOK_EVENT_TYPES = [
  "user.created",
  "user.updated",
  "user.deleted",
  "user.deactivated",
  "user.email_verified",
  "user.password_changed",
  "session.created",
  "session.ended",
  "mfa.enabled",
  "mfa.disabled",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Issue 35: the event an admin sends to one endpoint to try it (POST /webhooks/{id}/test). Not in the
 * catalogue an endpoint subscribes to: it goes only to the endpoint asked for, whatever its types.
 */
export const WEBHOOK_TEST_EVENT = "webhook.test" as const;
/** Every type a delivery (and so the delivery log) can carry. */
export const DELIVERED_EVENT_TYPES = [...WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT] as const;
export type DeliveredEventType = (typeof DELIVERED_EVENT_TYPES)[number];

/** What a write knows beyond its audit entries, for the events' data. */
export interface EventFacts {
  email?: string;
  sessionId?: string;
}

type Derived = { type: WebhookEventType; data: Record<string, string> };

/** By audit type and outcome ("*": any outcome): the event an audit entry publishes, and its extra data. */
const FROM_AUDIT: Record<string, (facts: EventFacts) => Derived> = {
  "signup/*": (facts) => ({ type: "user.created", data: email(facts) }),
  "deletion/*": () => ({ type: "user.deleted", data: {} }),
  "deactivation/success": () => ({ type: "user.deactivated", data: {} }),
  "password_change/success": () => ({ type: "user.password_changed", data: { reason: "changed" } }),
  "password_reset/success": () => ({ type: "user.password_changed", data: { reason: "reset" } }),
  "email_verification/verified": (facts) => ({ type: "user.email_verified", data: email(facts) }),
  "email_verification/verified_by_admin": (facts) => ({ type: "user.email_verified", data: email(facts) }),
  "email_change/confirmed": (facts) => ({ type: "user.email_verified", data: email(facts) }),
  "login/success": (facts) => ({ type: "session.created", data: session(facts) }),
  "session_revocation/*": (facts) => ({ type: "session.ended", data: session(facts) }),
  "second_factor/totp_added": () => ({ type: "mfa.enabled", data: { factor: "totp" } }),
  "second_factor/totp_removed": () => ({ type: "mfa.disabled", data: { factor: "totp" } }),
  "second_factor/reset_by_admin": () => ({ type: "mfa.disabled", data: { factor: "all" } }),
  "passkey/added": () => ({ type: "mfa.enabled", data: { factor: "passkey" } }),
  "passkey/removed": () => ({ type: "mfa.disabled", data: { factor: "passkey" } }),
  "passkey/removed_by_admin": () => ({ type: "mfa.disabled", data: { factor: "passkey" } }),
};

/**
 * Audit outcomes whose webhook events the store publishes itself: an admin ending all of a user's
 * sessions (issue 35) ends each through endEverySession, which sends each one's session.ended
 * (credentials_changed); the audit event says who did it and publishes nothing more.
 */
const PUBLISHED_ELSEWHERE = new Set(["session_revocation/all_ended_by_admin"]);

const email = (facts: EventFacts): Record<string, string> => (facts.email ? { email: facts.email } : {});
const session = (facts: EventFacts): Record<string, string> => (facts.sessionId ? { session_id: facts.sessionId } : {});

/** The webhook event an audit entry publishes, if any, with the entry's outcome where it says why. */
export function eventOfAudit(entry: AuditEntry, facts: EventFacts): Derived | undefined {
  if (PUBLISHED_ELSEWHERE.has(`${entry.type}/${entry.outcome}`)) return undefined;
  const derive = FROM_AUDIT[`${entry.type}/${entry.outcome}`] ?? FROM_AUDIT[`${entry.type}/*`];
  if (!derive) return undefined;
  const derived = derive(facts);
  if (derived.type === "session.ended") derived.data.reason = entry.outcome;
  return derived;
}

/** The event with its id and its exact body: {type, timestamp, data: {user_id, ...}}. */
export function webhookEvent(type: WebhookEventType, userId: string, data: Record<string, string>, at: number) {
  const body = { type, timestamp: new Date(at).toISOString(), data: { user_id: userId, ...data } };
  return { id: newId(at), type, userId, payload: JSON.stringify(body) } satisfies WebhookEvent;
}
