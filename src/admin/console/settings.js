// Settings (read-only): GET /admin/settings, the configuration as the service
// read it at start-up, section by section, and the features that are on.
// Secrets come from the API as "set" or "unset" only and are shown so;
// the console never has their values.
import { h, table } from "./ui.js";

export const settings = { path: "settings", title: "Settings", nav: true, render };

const onOff = (on) => (on ? "On" : "Off");

/** The reference's default is Markdown: its backticks dropped for reading. */
const plain = (text) => text.replaceAll("`", "");

function valueCell(setting) {
  if (setting.secret)
    return h("span", { class: setting.set ? "secret-set" : "secret-unset" }, setting.set ? "Set (secret)" : "Not set");
  if (setting.value === null) return "—";
  return setting.set ? setting.value : `${setting.value} (default)`;
}

async function render({ api, page }) {
  const data = await api.get("/admin/settings");
  const features = data.features;
  const sections = data.sections.map((section, i) =>
    h(
      "section",
      { "aria-labelledby": `settings-${i}` },
      h("h2", { id: `settings-${i}` }, section.title),
      table(
        `${section.title} settings`,
        ["Setting", "Value", "Default"],
        section.settings.map((setting) => [h("code", {}, setting.name), valueCell(setting), plain(setting.default)]),
      ),
    ),
  );
  page(
    "Settings",
    h(
      "p",
      { class: "hint" },
      "The configuration as the service read it at start-up, read-only: change the environment and restart to change it. Secrets show only whether they are set.",
    ),
    h(
      "section",
      { "aria-labelledby": "features-heading", id: "features" },
      h("h2", { id: "features-heading" }, "Features"),
      h(
        "dl",
        { class: "facts" },
        [
          ["Database", features.database === "postgres" ? "PostgreSQL" : "SQLite"],
          ["OpenID Connect", onOff(features.oidc)],
          [
            "Upstream sign-in",
            features.upstream_providers.length === 0 ? "None" : features.upstream_providers.join(", "),
          ],
          ["Webhooks", onOff(features.webhooks)],
          ["Authenticator apps (second-factor key)", onOff(features.mfa_encryption_key)],
          ["Mail transport", features.mail_transport === "smtp" ? "SMTP" : "Files (development)"],
          ["Dynamic client registration", onOff(features.dynamic_client_registration)],
          ["Redis", onOff(features.redis)],
          ["Metrics", onOff(features.metrics)],
          ["Token signing algorithm", features.signing_algorithm],
        ].flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]),
      ),
    ),
    sections,
  );
}
