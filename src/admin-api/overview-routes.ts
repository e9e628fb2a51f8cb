// GET /admin/overview: the counts the console's dashboard shows, read in one
// round of queries (store/sql/admin.ts says what each costs): users, sign-ins
// and failed sign-ins by hour and by day, the mail and webhook outboxes'
// backlogs, failing back-channel logouts, and the signing keys in use (kid,
// algorithm; never key material). Locked-out accounts are not counted: the
// rate-limit counters (in the process or in Redis) can be read by key but not
// listed, so the answer says so instead of guessing.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Guards } from "../auth/guard.ts";
import type { KeySet } from "../auth/keys.ts";
import type { Clock } from "../auth/tokens.ts";
import { NOT_ENOUGH_PRIVILEGES } from "../errors.ts";
import { BEARER_SECURITY, errorResponse, UnauthorizedResponse } from "../platform/openapi.ts";
import type { Backlog, SignInBucket, UserStore } from "../store/store.ts";

export interface OverviewRouteOptions {
  store: UserStore;
  guards: Guards;
  clock: Clock;
  keys: KeySet;
  oidcKeys: KeySet | undefined;
}

const Count = Type.Integer({ minimum: 0 });
const Instant = Type.String({ format: "date-time" });

const Bucket = Type.Object({
  start: Instant,
  succeeded: Count,
  failed: Count,
});

const BacklogOut = Type.Object({
  pending: Type.Integer({ minimum: 0, description: "Items neither delivered nor given up." }),
  oldest_pending_at: Type.Union([Instant, Type.Null()], { description: "When the oldest of them was queued." }),
  oldest_pending_age_seconds: Type.Union([Count, Type.Null()]),
  failed: Type.Integer({
    minimum: 0,
    description:
      "Items given up on after every attempt; kept to be retried for AUDIT_RETENTION_DAYS after they were queued.",
  }),
});

const KeyOut = Type.Object({
  kid: Type.String(),
  algorithm: Type.String({ examples: ["HS256", "EdDSA", "ES256", "RS256"] }),
  use: Type.Union([Type.Literal("access_tokens"), Type.Literal("id_tokens")]),
  signing: Type.Boolean({ description: "True for the key that signs new tokens; the others only verify." }),
  age_seconds: Type.Null({
    description: "Always null: keys come from settings or key files, which record no creation time.",
  }),
});

export const Overview = Type.Object(
  {
    generated_at: Instant,
    users: Type.Object({
      total: Count,
      active: Count,
      created_last_7_days: Count,
    }),
    sign_ins: Type.Object(
      {
        last_24_hours: Type.Array(Bucket, { description: "24 buckets, one per UTC hour, oldest first." }),
        last_7_days: Type.Array(Bucket, { description: "7 buckets, one per UTC day, oldest first." }),
      },
      {
        description:
          "From `login` audit events: `succeeded` counts success and success_upstream; `failed` counts failure " +
          "and refused_* (inactive, unverified); mfa_required is a step and counts as neither.",
      },
    ),
    locked_out: Type.Object(
      {
        available: Type.Boolean(),
        count: Type.Union([Count, Type.Null()]),
        reason: Type.String(),
      },
      { description: "Accounts refused by a login rate limit right now, when the counters can tell." },
    ),
    mail_outbox: BacklogOut,
    webhook_outbox: BacklogOut,
    backchannel_logouts: Type.Object({
      failed: Type.Integer({ minimum: 0, description: "Logout tokens given up on after every attempt." }),
      retrying: Type.Integer({ minimum: 0, description: "Logout tokens whose last delivery failed, to be retried." }),
    }),
    signing_keys: Type.Array(KeyOut),
  },
  { $id: "AdminOverview", description: "The dashboard's counts. Never key material." },
);

const LOCKOUTS_UNAVAILABLE =
  "The login rate limits' counters are kept by key (in this process or in Redis) and cannot be listed, " +
  "so the service cannot count the accounts over a limit; refused logins show as failed sign-ins.";

function backlogOut(backlog: Backlog, now: number) {
  const oldest = backlog.oldestCreatedAt;
  return {
    pending: backlog.pending,
    oldest_pending_at: oldest,
    oldest_pending_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now - Date.parse(oldest)) / 1000)),
    failed: backlog.failed,
  };
}

function keysOut(set: KeySet | undefined, use: "access_tokens" | "id_tokens") {
  return (set?.keys ?? []).map((key, i) => ({
    kid: key.kid,
    algorithm: set?.algorithm ?? "",
    use,
    signing: i === 0,
    age_seconds: null,
  }));
}

const bucketsOut = (buckets: SignInBucket[]) =>
  buckets.map(({ start, succeeded, failed }) => ({ start, succeeded, failed }));

export const overviewRoutes: FastifyPluginAsyncTypebox<OverviewRouteOptions> = async (
  app,
  { store, guards, clock, keys, oidcKeys },
) => {
  app.get(
    "/admin/overview",
    {
      preHandler: [guards.authenticate, guards.requireAdmin],
      schema: {
        operationId: "getAdminOverview",
        tags: ["admin"],
        summary: "The dashboard's counts (admins)",
        description:
          "Users, sign-ins and failed sign-ins over the last 24 hours and 7 days, the mail and webhook outboxes' " +
          "backlogs, failing back-channel logouts and the signing keys (kid and algorithm only).",
        security: BEARER_SECURITY,
        response: {
          200: Overview,
          401: UnauthorizedResponse,
          403: errorResponse("Not an admin.", NOT_ENOUGH_PRIVILEGES),
        },
      },
    },
    async function getAdminOverview() {
      const now = clock();
      const counts = await store.overviewCounts(now);
      return {
        generated_at: new Date(now).toISOString(),
        users: {
          total: counts.users.total,
          active: counts.users.active,
          created_last_7_days: counts.users.createdLast7Days,
        },
        sign_ins: { last_24_hours: bucketsOut(counts.signInsByHour), last_7_days: bucketsOut(counts.signInsByDay) },
        locked_out: { available: false, count: null, reason: LOCKOUTS_UNAVAILABLE },
        mail_outbox: backlogOut(counts.mailOutbox, now),
        webhook_outbox: backlogOut(counts.webhookOutbox, now),
        backchannel_logouts: counts.backchannelLogouts,
        signing_keys: [...keysOut(keys, "access_tokens"), ...keysOut(oidcKeys, "id_tokens")],
      };
    },
  );
};
