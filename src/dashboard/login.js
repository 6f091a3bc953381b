// The login page: an API key in, a session cookie out (the key is not kept
// by the page: the daemon holds the session, the browser only its id).
import { login } from "./api.js";
import { el, showError } from "./dom.js";

export function renderLogin(main, onLoggedIn) {
  const key = el("input", {
    id: "api-key", type: "password", name: "apiKey", autocomplete: "current-password",
    placeholder: "e2b_…", required: true, autofocus: true,
  });
  const form = el("form", { class: "card login", onsubmit: async (event) => {
    event.preventDefault();
    try {
      await login(key.value.trim());
      showError(null);
      onLoggedIn();
    } catch (error) {
      showError(error);
      key.select();
    }
  } },
  el("h1", {}, "Log in"),
  el("p", { class: "muted" }, "Paste an API key: the daemon's own (the ",
    el("code", {}, "api_key"), " file in its data dir) or one from ",
    el("code", {}, "abx keys create"), "."),
  el("label", { for: "api-key" }, "API key"),
  key,
  el("button", { type: "submit", id: "login" }, "Log in"));
  main.replaceChildren(form);
  key.focus();
}
