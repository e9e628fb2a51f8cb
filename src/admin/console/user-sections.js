// A user's page, its lists (issue 35): sessions (end one, end all), passkeys
// (remove), apps they allowed (revoke), linked upstream sign-ins (unlink; the
// API's 409 for the last way in is read out in words) and the audit trail.
// Each section draws itself from the admin API and redraws after an action;
// every removal is confirmed first and every list has an empty state.
import { query } from "./api.js";
import { confirmAction, describeError, emptyState, fill, h, table, when } from "./ui.js";

/** A short device/browser name from a User-Agent: enough to tell "the phone" from "the laptop". */
export function describeDevice(userAgent) {
  if (!userAgent) return "Unknown device";
  const browser =
    [
      ["Edg/", "Edge"],
      ["OPR/", "Opera"],
      ["Firefox/", "Firefox"],
      ["Chrome/", "Chrome"],
      ["Safari/", "Safari"],
    ].find(([token]) => userAgent.includes(token))?.[1] ?? null;
  const system =
    [
      ["Android", "Android"],
      ["iPhone", "iPhone"],
      ["iPad", "iPad"],
      ["Windows", "Windows"],
      ["Mac OS X", "macOS"],
      ["CrOS", "ChromeOS"],
      ["Linux", "Linux"],
    ].find(([token]) => userAgent.includes(token))?.[1] ?? null;
  if (browser && system) return `${browser} on ${system}`;
  return browser ?? system ?? userAgent.slice(0, 60);
}

/** A section with a heading and a holder that `draw` fills (again after each action). */
function section(id, title) {
  const holder = h("div", { id: `${id}-list` });
  const element = h("section", { "aria-labelledby": `${id}-heading` }, h("h2", { id: `${id}-heading` }, title), holder);
  return { element, holder };
}

/** A button that asks first, runs `run`, then says `done` and redraws; errors in words. */
function confirmedButton({ label, ariaLabel, question, confirmLabel, run, done, status, redraw, id }) {
  return h(
    "button",
    {
      type: "button",
      class: "danger",
      id,
      "aria-label": ariaLabel,
      async onclick() {
        if (!(await confirmAction(question, confirmLabel))) return;
        try {
          await run();
          status.say(done);
          await redraw();
        } catch (error) {
          status.fail(error);
        }
      },
    },
    label,
  );
}

export function sessionsSection(api, path, user, status) {
  const { element, holder } = section("sessions", "Sessions");
  async function draw(cursor) {
    try {
      const answer = await api.get(`${path}/sessions${query({ limit: 20, cursor })}`);
      fill(
        holder,
        answer.items.length === 0 && !cursor
          ? emptyState("No live session: the user is signed in nowhere. Nothing to end.")
          : [
              table(
                "Live sessions, newest first",
                ["Device", "Address", "Signed in", "Last used", "Ends", "Action"],
                answer.items.map((session) => [
                  `${describeDevice(session.user_agent)}${session.current ? " (this console)" : ""}`,
                  session.client_address ?? "—",
                  when(session.created_at),
                  when(session.last_used_at),
                  when(session.expires_at),
                  confirmedButton({
                    label: "End",
                    ariaLabel: `End the session on ${describeDevice(session.user_agent)} from ${when(session.created_at)}`,
                    question: `End this session of ${user.email} (${describeDevice(session.user_agent)})? Its refresh token stops working at once.`,
                    confirmLabel: "End the session",
                    run: () => api.delete(`${path}/sessions/${encodeURIComponent(session.id)}`),
                    done: "The session is ended.",
                    status,
                    redraw: () => draw(),
                  }),
                ]),
              ),
              h(
                "div",
                { class: "actions" },
                confirmedButton({
                  id: "end-all-sessions",
                  label: "End all sessions",
                  question: `End every session of ${user.email}? They are signed out everywhere: every refresh and access token stops working.`,
                  confirmLabel: "End all sessions",
                  run: () => api.delete(`${path}/sessions`),
                  done: "Every session is ended.",
                  status,
                  redraw: () => draw(),
                }),
                answer.next_cursor
                  ? h(
                      "button",
                      { type: "button", class: "secondary", onclick: () => draw(answer.next_cursor) },
                      "Older sessions",
                    )
                  : null,
              ),
            ],
      );
    } catch (error) {
      fill(holder, h("p", { class: "error" }, describeError(error)));
    }
  }
  draw();
  return element;
}

export function passkeysSection(api, path, user, status) {
  const { element, holder } = section("passkeys", "Passkeys");
  async function draw() {
    try {
      const passkeys = await api.get(`${path}/passkeys`);
      fill(
        holder,
        passkeys.length === 0
          ? emptyState("No passkey. The user adds one from their security page.")
          : table(
              "Passkeys, oldest first",
              ["Name", "Added", "Last used", "Synced", "Action"],
              passkeys.map((passkey) => [
                passkey.name,
                when(passkey.created_at),
                when(passkey.last_used_at),
                passkey.backed_up ? "Yes" : "No",
                confirmedButton({
                  label: "Remove",
                  ariaLabel: `Remove the passkey ${passkey.name}`,
                  question: `Remove the passkey "${passkey.name}" of ${user.email}? It no longer signs in; the user is told by mail.`,
                  confirmLabel: "Remove the passkey",
                  run: () => api.delete(`${path}/passkeys/${encodeURIComponent(passkey.id)}`),
                  done: "The passkey is removed.",
                  status,
                  redraw: draw,
                }),
              ]),
            ),
      );
    } catch (error) {
      fill(holder, h("p", { class: "error" }, describeError(error)));
    }
  }
  draw();
  return element;
}

export function appsSection(api, path, user, status) {
  const { element, holder } = section("apps", "Apps they allowed");
  async function draw() {
    try {
      const answer = await api.get(`${path}/apps`);
      fill(
        holder,
        answer.items.length === 0
          ? emptyState("No app holds the user's consent. Apps appear here once the user allows one.")
          : table(
              "Apps the user allowed, newest first",
              ["App", "Client id", "Scopes", "Allowed", "Action"],
              answer.items.map((app) => [
                app.client_name,
                app.client_id,
                app.scope,
                when(app.granted_at),
                confirmedButton({
                  label: "Revoke",
                  ariaLabel: `Revoke ${app.client_name}`,
                  question: `Revoke ${app.client_name}'s access to ${user.email}'s account? Its sessions of the user end; it must ask for consent again.`,
                  confirmLabel: "Revoke",
                  run: () => api.delete(`${path}/apps/${encodeURIComponent(app.client_id)}`),
                  done: "The app's access is revoked.",
                  status,
                  redraw: draw,
                }),
              ]),
            ),
      );
    } catch (error) {
      fill(
        holder,
        error.status === 404 && !error.detail?.includes("user")
          ? emptyState("OpenID Connect is off on this service, so no app can hold consent.")
          : h("p", { class: "error" }, describeError(error)),
      );
    }
  }
  draw();
  return element;
}

/** `providers`: the upstream providers (name, label), or [] when none is configured. */
export function identitiesSection(api, path, user, status, providers) {
  const { element, holder } = section("identities", "Linked sign-ins");
  const labels = new Map(providers.map((provider) => [provider.name, provider.label]));
  async function draw() {
    if (providers.length === 0) {
      fill(holder, emptyState("No upstream provider is configured (UPSTREAM_PROVIDERS), so no sign-in can be linked."));
      return;
    }
    try {
      const answer = await api.get(`${path}/identities`);
      const items = answer.items ?? answer;
      fill(
        holder,
        items.length === 0
          ? emptyState("No upstream sign-in is linked. The user links one from their security page.")
          : table(
              "Linked upstream identities",
              ["Provider", "E-mail", "Linked", "Action"],
              items.map((identity) => {
                const label = labels.get(identity.provider) ?? identity.provider;
                return [
                  label,
                  identity.email ?? "—",
                  when(identity.created_at ?? identity.linked_at),
                  confirmedButton({
                    label: "Unlink",
                    ariaLabel: `Unlink ${label}`,
                    question: `Unlink ${label} from ${user.email}? They can no longer sign in with it.`,
                    confirmLabel: "Unlink",
                    async run() {
                      try {
                        await api.delete(`${path}/identities/${encodeURIComponent(identity.id)}`);
                      } catch (error) {
                        if (error.status === 409)
                          error.detail = `${label} is ${user.email}'s last way to sign in (no password, passkey or other linked sign-in), so it stays linked. Send a password-reset mail first, or ask them to add a passkey. (${error.detail})`;
                        throw error;
                      }
                    },
                    done: `${label} is unlinked.`,
                    status,
                    redraw: draw,
                  }),
                ];
              }),
            ),
      );
    } catch (error) {
      fill(holder, h("p", { class: "error" }, describeError(error)));
    }
  }
  draw();
  return element;
}

export function eventsSection(api, path) {
  const { element, holder } = section("events", "Audit trail");
  async function draw(cursor) {
    const page = h("div", {});
    holder.append(page);
    try {
      const answer = await api.get(`${path}/events${query({ limit: 20, cursor })}`);
      fill(
        page,
        answer.items.length === 0 && !cursor
          ? emptyState("No events recorded for this user yet.")
          : table(
              "Events, oldest first",
              ["When", "Event", "Outcome", "Address"],
              answer.items.map((event) => [
                when(event.created_at),
                event.type,
                event.outcome ?? "—",
                event.client_address ?? "—",
              ]),
            ),
        answer.next_cursor
          ? h(
              "button",
              {
                type: "button",
                class: "secondary",
                onclick(click) {
                  click.currentTarget.remove();
                  draw(answer.next_cursor);
                },
              },
              "More events",
            )
          : null,
      );
    } catch (error) {
      fill(page, h("p", { class: "error" }, describeError(error)));
    }
  }
  draw();
  return element;
}
