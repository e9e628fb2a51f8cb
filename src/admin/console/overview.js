// Overview: the console's first screen. GET /admin/overview's counts: users,
// sign-ins and failed sign-ins over 24 hours and 7 days (a chart, with its
// numbers as a table), locked-out accounts (when the service can count
// them), the mail and webhook outboxes' backlogs, failing back-channel
// logouts, and the signing keys (kid, algorithm; their age is unknown to
// the service, which reads keys from settings and files).

import { signInChart } from "./chart.js";
import { emptyState, h, table, when } from "./ui.js";

export const overview = { path: "overview", title: "Overview", nav: true, render };

/** "3 min", "2 h 5 min", "4 days": an age in words a person reads at a glance. */
export function age(seconds) {
  if (seconds === null || seconds === undefined) return "unknown";
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  const days = Math.floor(seconds / 86400);
  return days === 1 ? "1 day" : `${days} days`;
}

const hourLabel = (start) =>
  new Date(start).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", timeZone: "UTC" });
const dayLabel = (start) =>
  new Date(start).toLocaleDateString(undefined, { weekday: "short", day: "numeric", timeZone: "UTC" });

/** A list of facts (name, value); each value's id lets a test read it. */
function facts(id, pairs) {
  return h(
    "dl",
    { class: "facts", id },
    pairs.flatMap(([name, value, valueId]) => [h("dt", {}, name), h("dd", valueId ? { id: valueId } : {}, value)]),
  );
}

const total = (buckets, kind) => buckets.reduce((sum, bucket) => sum + bucket[kind], 0);

function section(id, title, ...content) {
  return h("section", { "aria-labelledby": `${id}-heading` }, h("h2", { id: `${id}-heading` }, title), ...content);
}

function backlogRow(name, backlog) {
  return [
    name,
    String(backlog.pending),
    backlog.oldest_pending_at
      ? `${age(backlog.oldest_pending_age_seconds)} (queued ${when(backlog.oldest_pending_at)})`
      : "none waiting",
    String(backlog.failed),
  ];
}

async function render({ api, page }) {
  const data = await api.get("/admin/overview");
  const day = data.sign_ins.last_24_hours;
  const week = data.sign_ins.last_7_days;
  const locked = data.locked_out;
  const keys = data.signing_keys;
  page(
    "Overview",
    h("p", { class: "hint" }, `As of ${when(data.generated_at)}. Times on the charts are UTC.`),
    section(
      "users-summary",
      "Users",
      facts("overview-users", [
        ["Total", String(data.users.total), "users-total"],
        ["Active", String(data.users.active), "users-active"],
        ["Created in the last 7 days", String(data.users.created_last_7_days), "users-new"],
      ]),
      h("p", {}, h("a", { href: "#/users" }, "Find a user")),
    ),
    section(
      "sign-ins",
      "Sign-ins",
      facts("overview-sign-ins", [
        ["Last 24 hours", String(total(day, "succeeded")), "sign-ins-24h"],
        ["Failed, last 24 hours", String(total(day, "failed")), "failed-24h"],
        ["Last 7 days", String(total(week, "succeeded")), "sign-ins-7d"],
        ["Failed, last 7 days", String(total(week, "failed")), "failed-7d"],
      ]),
      signInChart({
        id: "chart-24h",
        caption: "Sign-ins over the last 24 hours",
        buckets: day,
        label: hourLabel,
        labelEvery: 4,
        unit: "hour",
      }),
      signInChart({
        id: "chart-7d",
        caption: "Sign-ins over the last 7 days",
        buckets: week,
        label: dayLabel,
        labelEvery: 1,
        unit: "day",
      }),
      h("p", {}, h("a", { href: "#/audit" }, "Open the audit log")),
    ),
    section(
      "locked-out",
      "Locked-out accounts",
      locked.available
        ? facts("overview-locked", [["Accounts over a login limit", String(locked.count ?? 0), "locked-count"]])
        : h("p", { id: "locked-count" }, h("strong", {}, "Not available. "), locked.reason),
    ),
    section(
      "outboxes",
      "Outboxes",
      table(
        "Mail and webhook deliveries not yet done",
        ["Outbox", "Waiting", "Oldest waiting", "Given up"],
        [backlogRow("Mail", data.mail_outbox), backlogRow("Webhooks", data.webhook_outbox)],
      ),
      h(
        "p",
        { class: "hint" },
        "Given-up mail is retried with npm run cli -- mail retry --all-failed; a webhook event from its endpoint's delivery log.",
      ),
    ),
    section(
      "backchannel",
      "Back-channel logouts",
      facts("overview-backchannel", [
        ["Failing, being retried", String(data.backchannel_logouts.retrying), "backchannel-retrying"],
        ["Given up", String(data.backchannel_logouts.failed), "backchannel-failed"],
      ]),
    ),
    section(
      "keys",
      "Signing keys",
      keys.length === 0
        ? emptyState("No signing keys are listed. Check SIGNING_SECRET or the key files in Settings.")
        : table(
            "Keys that sign and verify tokens",
            ["Key id (kid)", "Algorithm", "For", "Role", "Age"],
            keys.map((key) => [
              key.kid,
              key.algorithm,
              key.use === "id_tokens" ? "ID tokens" : "Access tokens",
              key.signing ? "Signs new tokens" : "Verifies only",
              age(key.age_seconds),
            ]),
          ),
    ),
  );
}
