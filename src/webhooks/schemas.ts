// The shapes of webhooks, declared once (TypeBox): the /webhooks resource's
// inputs and outputs, and the events' bodies, which the OpenAPI document
// lists in its top-level `webhooks` section (operations/docs.ts).
import { type Static, Type } from "typebox";
import {
  DELIVERED_EVENT_TYPES,
  type DeliveredEventType,
  WEBHOOK_EVENT_TYPES,
  type WebhookEventType,
} from "./events.ts";

export const WEBHOOKS_PAGE_DEFAULT = 20;
export const WEBHOOKS_PAGE_MAX = 100;
const URL_MAX_LENGTH = 2048;
const DESCRIPTION_MAX_LENGTH = 500;

export const WebhookEventName = Type.Unsafe<WebhookEventType>({
  type: "string",
  enum: [...WEBHOOK_EVENT_TYPES],
  description: "An event type.",
});

/** A delivered event's type: any subscribable type, or the test event an admin sent (issue 35). */
export const DeliveredEventName = Type.Unsafe<DeliveredEventType>({
  type: "string",
  enum: [...DELIVERED_EVENT_TYPES],
  description: "An event type, or `webhook.test` (POST /webhooks/{id}/test).",
});

const Url = Type.String({
  format: "uri",
  maxLength: URL_MAX_LENGTH,
  pattern: "^https?://",
  description:
    "Where events are POSTed: http or https, without user name or password. With " +
    "WEBHOOK_REFUSE_PRIVATE_ADDRESSES on, its host must have a public address.",
  examples: ["https://hooks.example.com/user-events"],
});
const EventTypes = Type.Array(WebhookEventName, {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length,
  uniqueItems: true,
  description: "The event types this endpoint receives.",
  examples: [["user.created", "user.deleted"]],
});
const Description = Type.String({ maxLength: DESCRIPTION_MAX_LENGTH, description: "A note for admins." });
const Enabled = Type.Boolean({ description: "Whether events are published to it and delivered." });

export const WebhookCreate = Type.Object(
  {
    url: Url,
    event_types: EventTypes,
    enabled: Type.Optional(Type.Boolean({ ...Enabled, default: true })),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
  },
  { $id: "WebhookCreate", additionalProperties: false },
);
export type WebhookCreate = Static<typeof WebhookCreate>;

/** PUT replaces the whole record: `enabled` defaults to true, `description` to null. */
export const WebhookReplace = Type.Object(WebhookCreate.properties, {
  $id: "WebhookReplace",
  additionalProperties: false,
});

export const WebhookPatch = Type.Object(
  {
    url: Type.Optional(Url),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Enabled),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
  },
  { $id: "WebhookPatch", additionalProperties: false },
);
export type WebhookPatch = Static<typeof WebhookPatch>;

const webhookFields = {
  id: Type.String({ format: "uuid" }),
  url: Type.String(),
  event_types: Type.Array(WebhookEventName),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String(), Type.Null()], {
    description: "Why the service turned the endpoint off (an event's attempts were spent); null otherwise.",
  }),
  description: Type.Union([Type.String(), Type.Null()]),
  previous_secret_expires_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()], {
    description: "Until when the secret before the last rotation still signs deliveries; null when none does.",
  }),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
};

export const WebhookOut = Type.Object(webhookFields, {
  $id: "Webhook",
  description: "A webhook endpoint. Its secret is shown only at creation and rotation.",
});
export type WebhookOut = Static<typeof WebhookOut>;

const Secret = Type.String({
  description: "The signing secret (Standard Webhooks `whsec_...`). Shown this once: store it now.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
});

export const WebhookCreated = Type.Object(
  { ...webhookFields, secret: Secret },
  { $id: "WebhookCreated", description: "The new endpoint, with its secret (shown this once)." },
);

export const WebhookSecretOut = Type.Object(
  {
    secret: Secret,
    previous_secret_expires_at: Type.String({
      format: "date-time",
      description: "Deliveries are also signed with the previous secret until then.",
    }),
  },
  { $id: "WebhookSecret" },
);

export const WebhookPage = Type.Object(
  {
    items: Type.Array(WebhookOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()], {
      description: "Pass as `cursor` for the next page; null on the last page.",
    }),
    next: Type.Union([Type.String(), Type.Null()], { description: "The path and query of the next page, or null." }),
  },
  { $id: "WebhookPage" },
);

export const WebhookIdParams = Type.Object({ id: Type.String({ format: "uuid", description: "The endpoint's id." }) });

export const PageQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: WEBHOOKS_PAGE_MAX,
        default: WEBHOOKS_PAGE_DEFAULT,
        description: "Page size.",
      }),
    ),
    cursor: Type.Optional(Type.String({ format: "uuid", description: "The `next_cursor` of the previous page." })),
  },
  { additionalProperties: false },
);

export const DeliveryOut = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    event_id: Type.String({ format: "uuid", description: "The event's id: the `webhook-id` header." }),
    type: DeliveredEventName,
    attempt: Type.Integer({ description: "1 for the first attempt of this event, 2 for its first retry, ..." }),
    status_code: Type.Union([Type.Integer(), Type.Null()], {
      description: "The receiver's status; null when no answer came.",
    }),
    duration_ms: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()], { description: "Why it failed; null when delivered." }),
    created_at: Type.String({ format: "date-time" }),
  },
  { $id: "WebhookDelivery", description: "One delivery attempt. Never the secret or the signature." },
);

export const DeliveryPage = Type.Object(
  {
    items: Type.Array(DeliveryOut),
    next_cursor: Type.Union([Type.String({ format: "uuid" }), Type.Null()]),
    next: Type.Union([Type.String(), Type.Null()], { description: "The path and query of the next page, or null." }),
  },
  { $id: "WebhookDeliveryPage" },
);

export const RedeliveryCreate = Type.Object(
  { event_id: Type.String({ format: "uuid", description: "The event to send again (its `webhook-id`)." }) },
  { $id: "RedeliveryCreate", additionalProperties: false },
);

export const RedeliveryOut = Type.Object(
  {
    event_id: Type.String({ format: "uuid" }),
    type: DeliveredEventName,
    status: Type.Literal("pending"),
    next_attempt_at: Type.String({ format: "date-time" }),
  },
  { $id: "WebhookRedelivery", description: "The event is queued again, due now, with its attempts counted afresh." },
);

export const WebhookTestOut = Type.Object(
  {
    event_id: Type.String({ format: "uuid", description: "The test event's id: its `webhook-id` header." }),
    type: Type.Literal("webhook.test"),
    status: Type.Literal("pending"),
    next_attempt_at: Type.String({ format: "date-time" }),
  },
  {
    $id: "WebhookTest",
    description: "The test event is queued for this endpoint, due now; its attempts show in the delivery log.",
  },
);

/** The test event's body (issue 35): who asked, and which endpoint; no account's data. */
export function testEventBody() {
  return Type.Object(
    {
      type: Type.Literal("webhook.test"),
      timestamp: Type.String({ format: "date-time", description: "When the admin asked for it." }),
      data: Type.Object({
        user_id: Type.String({ format: "uuid", description: "The admin who sent the test event." }),
        endpoint_id: Type.String({ format: "uuid", description: "The endpoint it was sent to." }),
      }),
    },
    { description: "Signed like every event: `webhook-id`, `webhook-timestamp`, `webhook-signature`." },
  );
}

/** Every `reason` a session.ended event can carry: the outcomes of the audit events that end a session. */
export const SESSION_END_REASONS = [
  "logged_out",
  // Issue 35: an admin ended it (DELETE /users/{id}/sessions/{sid}).
  "ended_by_admin",
  "revoked",
  "session_limit",
  "reuse_detected",
  "credentials_changed",
  "browser_session_ended",
  "consent_revoked",
  "client_deleted",
] as const;

/** The body of each event type, for the OpenAPI document's `webhooks` section. */
export function eventBody(type: WebhookEventType) {
  const data: Record<string, ReturnType<typeof Type.String>> = {
    user_id: Type.String({ format: "uuid", description: "The user the event is about." }),
  };
  if (type === "user.created" || type === "user.updated" || type === "user.email_verified") {
    data.email = Type.String({ format: "email", description: "The user's e-mail address now." });
  }
  if (type === "user.password_changed") {
    data.reason = Type.String({ enum: ["changed", "reset"], description: "Changed by the user, or reset by link." });
  }
  if (type === "session.created" || type === "session.ended") {
    data.session_id = Type.String({ format: "uuid", description: "The session (its refresh tokens' family)." });
  }
  if (type === "session.ended") {
    data.reason = Type.String({
      enum: [...SESSION_END_REASONS],
      description:
        "Why it ended: `logged_out`, the user ended it (DELETE /me/sessions/{id}); `ended_by_admin`, an admin " +
        "ended it (DELETE /users/{id}/sessions/{sid}); `revoked`, its refresh token or " +
        "one of its access tokens was revoked (POST /auth/revoke), or the user signed out at /oauth/logout, " +
        "which ends the browser session; `session_limit`, a login went over MAX_SESSIONS_PER_USER (the oldest " +
        "ends); `reuse_detected`, a spent refresh token came back after the grace; `credentials_changed`, the " +
        "password was changed or reset or the account deactivated, or an admin ended all the user's sessions. For an OpenID Connect client's session: " +
        "`browser_session_ended`, the browser session it began in ended (or went over the limit); " +
        "`consent_revoked`, the user removed the app (DELETE /me/apps/{client_id}); `client_deleted`, an admin " +
        "deleted the client.",
    });
  }
  if (type === "mfa.enabled") {
    data.factor = Type.String({ enum: ["totp", "passkey"], description: "The kind of factor enabled." });
  }
  if (type === "mfa.disabled") {
    data.factor = Type.String({
      enum: ["totp", "passkey", "all"],
      description: "The kind of factor disabled; `all` when an admin reset every second factor.",
    });
  }
  return Type.Object(
    {
      type: Type.Literal(type),
      timestamp: Type.String({ format: "date-time", description: "When the change happened." }),
      data: Type.Object(data),
    },
    { description: "Signed by the Standard Webhooks scheme: `webhook-id`, `webhook-timestamp`, `webhook-signature`." },
  );
}

const SIGNATURE_HEADERS = [
  ["webhook-id", "The event's id (a UUID): the same on every attempt; drop a repeat by it."],
  ["webhook-timestamp", "Seconds since the epoch when this attempt was signed; refuse one far from now."],
  [
    "webhook-signature",
    "`v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{body}` under the secret; during a " +
      "rotation's grace period one per secret, space-separated.",
  ],
] as const;

/** The OpenAPI 3.1 document's top-level `webhooks`: one POST per event type, as receivers get it. */
export function openApiWebhooks(): Record<string, unknown> {
  return Object.fromEntries(
    DELIVERED_EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: `webhook_${type.replace(".", "_")}`,
          tags: ["webhooks"],
          summary: `The ${type} event`,
          description:
            type === "webhook.test"
              ? "POSTed to one endpoint when an admin asks for it (POST /webhooks/{id}/test), whatever types " +
                "the endpoint subscribes to; verify the signature (Standard Webhooks) as for any event."
              : "POSTed to each enabled endpoint subscribed to this type, at least once, in order per user; " +
                "verify the signature (Standard Webhooks) before trusting it.",
          parameters: SIGNATURE_HEADERS.map(([name, description]) => ({
            name,
            in: "header",
            required: true,
            description,
            schema: { type: "string" },
          })),
          // The request is authenticated by its signature, not by an OAuth scheme.
          security: [],
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: type === "webhook.test" ? testEventBody() : eventBody(type) },
            },
          },
          responses: {
            "200": { description: "Any 2xx: delivered." },
            "4XX": { description: "Anything else (or no answer in time) is a failure: retried on the schedule." },
          },
        },
      },
    ]),
  );
}
