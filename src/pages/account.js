// The script of the account pages (served as a file: the pages' policy allows no inline script).
// It takes the token from the fragment, clears it from the address bar and history, and posts it
// in a JSON body. Its words are the page's messages, in the page's language (issue 37), chosen by the
// API's status, never its `detail` (English). API calls go through session.js, as on the sign-in and
// security pages (no access token is ever held here).
import { api, problem, t } from "./session.js";

const post = (path, body) => api(path, { method: "POST", body });
/** The answers the links' endpoints give that the page has words for: a bad link, a refused password. */
const LINK_ANSWERS = {
  400: "pages.accountJs.badLink",
  409: "pages.accountJs.conflict",
  422: "pages.accountJs.passwordRefused",
};

(() => {
  const status = document.getElementById("status");
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (location.hash) history.replaceState(null, "", location.pathname);

  function say(text, kind) {
    status.textContent = text;
    status.className = kind;
    status.setAttribute("role", kind === "error" ? "alert" : "status");
  }

  if (!token) {
    say(t("pages.accountJs.incomplete"), "error");
    return;
  }

  const form = document.getElementById("reset-form");
  if (form) {
    form.hidden = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const password = form.elements.new_password.value;
      if (password !== form.elements.repeat_password.value) {
        say(t("pages.accountJs.mismatch"), "error");
        return;
      }
      if (password.length < 8) {
        say(t("pages.accountJs.tooShort"), "error");
        return;
      }
      const button = form.querySelector("button");
      button.disabled = true;
      const result = await post("/auth/password-resets", { token, new_password: password });
      button.disabled = false;
      if (result.ok) {
        form.hidden = true;
        say(t("pages.accountJs.passwordSet"), "success");
      } else {
        say(problem(result, "pages.accountJs.resetFailed", LINK_ANSWERS), "error");
        if (result.status === 400) form.hidden = true;
      }
    });
    return;
  }

  if (document.getElementById("verify-page")) {
    post("/auth/email-verifications", { token }).then((result) => {
      if (result.ok) say(t("pages.accountJs.verified", { email: result.data.email }), "success");
      else say(problem(result, "pages.accountJs.verifyFailed", LINK_ANSWERS), "error");
    });
  }
})();
