// The admin console's entry: signs in (oidc.js), checks that the person is an
// admin (and, with ADMIN_CONSOLE_REQUIRE_MFA, has a second factor), then
// draws the navigation and routes the fragment (#/users/...) to one screen
// module. A screen is a module exporting { path, title, nav, render }; adding
// one is one import in SCREENS below.
import { createApi } from "./api.js";
import { apps } from "./apps.js";
import { audit } from "./audit.js";
import { branding } from "./branding.js";
import { createSession } from "./oidc.js";
import { overview } from "./overview.js";
import { settings as settingsScreen } from "./settings.js";
import { consoleSettings, describeError, fill, h } from "./ui.js";
import { users } from "./users.js";
import { webhooks } from "./webhooks.js";

/** The screens, in the navigation's order; the first is the default route (the overview, after sign-in). */
const SCREENS = [overview, users, apps, branding, webhooks, audit, settingsScreen];

const settings = consoleSettings;
const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const top = /** @type {HTMLElement} */ (document.getElementById("top"));
const redirectUri = `${location.origin}/admin/`;

// The skip link moves the focus itself: its #main would otherwise become a route of the fragment router.
document.querySelector("a.skip")?.addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});

function page(title, ...content) {
  document.title = `${title} · Admin console`;
  fill(main, h("h1", {}, title), ...content);
}

async function start() {
  let session;
  try {
    session = await createSession({ clientId: settings.clientId ?? "", redirectUri });
  } catch (error) {
    page("Admin console", h("p", { class: "error", role: "alert" }, describeError(error)));
    return;
  }
  const params = new URLSearchParams(location.search);
  if (params.get("state") === "signed-out" && !params.has("code")) {
    history.replaceState(null, "", redirectUri);
    page(
      "Signed out",
      h("p", {}, "You are signed out of the admin console and of this service in this browser."),
      h("button", { type: "button", onclick: () => session.signIn() }, "Sign in again"),
    );
    return;
  }
  let back;
  try {
    back = await session.completeSignIn();
  } catch (error) {
    // ADMIN_CONSOLE_REQUIRE_MFA: the server refuses the console's tokens to a sign-in without a second factor.
    if (settings.requireMfa === "on" && error?.oauthError === "invalid_grant") {
      secondFactorPage(session);
      return;
    }
    page(
      "Sign-in failed",
      h("p", { class: "error", role: "alert" }, describeError(error)),
      h("button", { type: "button", onclick: () => session.signIn() }, "Sign in again"),
    );
    return;
  }
  if (back === undefined) {
    await session.signIn(location.hash);
    return;
  }
  if (back) history.replaceState(null, "", `${redirectUri}${back}`);
  const api = createApi(session);
  let me;
  try {
    me = await api.get("/me");
  } catch (error) {
    page("Admin console", h("p", { class: "error", role: "alert" }, describeError(error)));
    return;
  }
  const signOutButton = () =>
    h("button", { type: "button", class: "secondary", id: "sign-out", onclick: () => session.signOut() }, "Sign out");
  if (!me.is_admin) {
    page(
      "Admins only",
      h("p", {}, `You are signed in as ${me.email}, which is not an admin account. The admin console is for admins.`),
      h("p", {}, "Ask an admin of this service if you need access."),
      signOutButton(),
    );
    return;
  }
  if (settings.requireMfa === "on") {
    const factors = await api.get("/me/mfa").catch(() => undefined);
    if (!factors || (!factors.totp_enabled && !(factors.passkeys > 0))) {
      secondFactorPage(session);
      return;
    }
  }
  drawShell(me, signOutButton());
  const context = { api, me, page, navigate };
  window.addEventListener("hashchange", () => route(context));
  await route(context);
}

/** ADMIN_CONSOLE_REQUIRE_MFA's refusal: where to add a second factor. */
function secondFactorPage(session) {
  page(
    "Add a second factor first",
    h("p", {}, "This service's admin console is only for admins who sign in with a second factor."),
    h(
      "p",
      {},
      "Open your ",
      h("a", { href: settings.securityPage ?? "/account/security" }, "security page"),
      ", set up an authenticator app or add a passkey, then sign out and sign in to the console again.",
    ),
    h("button", { type: "button", class: "secondary", id: "sign-out", onclick: () => session.signOut() }, "Sign out"),
  );
}

function navigate(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

function drawShell(me, signOutButton) {
  fill(
    top,
    h("p", { class: "brand" }, "Admin console"),
    h(
      "nav",
      { "aria-label": "Console" },
      h(
        "ul",
        {},
        SCREENS.filter((screen) => screen.nav).map((screen) =>
          h("li", {}, h("a", { href: `#/${screen.path}`, "data-screen": screen.path }, screen.title)),
        ),
      ),
    ),
    h("p", { class: "who" }, me.email),
    signOutButton,
  );
  top.hidden = false;
}

async function route(context) {
  const path = location.hash.replace(/^#\/?/, "") || SCREENS[0].path;
  const parts = path.split("/").map((part) => decodeURIComponent(part));
  const screen = SCREENS.find((candidate) => candidate.path === parts[0]);
  for (const link of top.querySelectorAll("a[data-screen]"))
    if (link.dataset.screen === parts[0]) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  if (!screen) {
    context.page(
      "Not found",
      h("p", {}, "The console has no such screen."),
      h("a", { href: `#/${SCREENS[0].path}` }, SCREENS[0].title),
    );
    return;
  }
  main.focus();
  try {
    await screen.render(context, parts.slice(1));
  } catch (error) {
    context.page(screen.title, h("p", { class: "error", role: "alert" }, describeError(error)));
  }
}

start();
