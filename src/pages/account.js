// The script of the account pages (served as a file: the pages' policy allows no inline script).
// It takes the token from the fragment, clears it from the address bar and history, and posts it
// in a JSON body. Messages come from the API's `detail`, written for a person to read. API calls go
// through session.js, as on the sign-in and security pages (no access token is ever held here).
import { api } from "./session.js";

const post = (path, body) => api(path, { method: "POST", body });

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
    say("This link is incomplete: open the whole link from the e-mail, or ask for a new one.", "error");
    return;
  }

  const form = document.getElementById("reset-form");
  if (form) {
    form.hidden = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const password = form.elements.new_password.value;
      if (password !== form.elements.repeat_password.value) {
        say("The two passwords are not the same.", "error");
        return;
      }
      if (password.length < 8) {
        say("The password needs at least 8 characters.", "error");
        return;
      }
      const button = form.querySelector("button");
      button.disabled = true;
      const result = await post("/auth/password-resets", { token, new_password: password });
      button.disabled = false;
      if (result.ok) {
        form.hidden = true;
        say("Your password is set, and you are signed out everywhere. Sign in with the new password.", "success");
      } else {
        say(result.data.detail || "The password could not be set. Try again.", "error");
        if (result.status === 400) form.hidden = true;
      }
    });
    return;
  }

  if (document.getElementById("verify-page")) {
    post("/auth/email-verifications", { token }).then((result) => {
      if (result.ok) say(`Thank you: ${result.data.email} is verified.`, "success");
      else say(result.data.detail || "The address could not be verified. Try again.", "error");
    });
  }
})();
