// The dashboard's entry: resumes the session (or shows the login page) and
// routes by the URL's hash: #/ the sandboxes, #/ended those that ended lately,
// #/sandbox/<id> one sandbox (live, or ended: its timeline), #/templates,
// #/keys (admins) and #/settings.
import { bootstrap, currentSession, logout } from "./api.js";
import { showError } from "./dom.js";
import { renderEnded } from "./ended.js";
import { renderKeys } from "./keys.js";
import { renderLogin } from "./login.js";
import { leaveSandbox, renderSandbox } from "./sandbox.js";
import { leaveSandboxes, renderSandboxes, seedSandboxes, stopSandboxEvents } from "./sandboxes.js";
import { renderSettings } from "./settings.js";
import { leaveTemplates, renderTemplates } from "./templates.js";
import { closeTerminal } from "./terminal.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");

const pages = { "#/templates": renderTemplates, "#/keys": renderKeys, "#/settings": renderSettings };

function route() {
  const match = location.hash.match(/^#\/sandbox\/([a-z0-9]{1,64})$/);
  leaveSandboxes();
  leaveTemplates();
  leaveSandbox();
  closeTerminal();
  const render = pages[location.hash];
  const ended = location.hash === "#/ended";
  const name = match || ended ? "sandboxes" : render ? location.hash.slice(2) : "sandboxes";
  for (const link of nav.querySelectorAll("a[data-page]")) {
    if (link.dataset.page === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (match) renderSandbox(main, match[1]);
  else if (ended) renderEnded(main);
  else if (render) render(main);
  else renderSandboxes(main);
}

function loggedIn() {
  const session = currentSession();
  document.getElementById("who").textContent = `team ${session.team}${session.admin ? " · admin" : ""}`;
  for (const link of nav.querySelectorAll("[data-admin]")) link.hidden = !session.admin;
  nav.hidden = false;
  route();
}

function loggedOut() {
  stopSandboxEvents();
  leaveSandbox();
  closeTerminal();
  nav.hidden = true;
  renderLogin(main, loggedIn);
}

document.getElementById("logout").addEventListener("click", async () => {
  closeTerminal(); // while the session can still end its shell
  try {
    await logout();
  } catch (error) {
    showError(error);
  }
  loggedOut();
});

window.addEventListener("abx:session-ended", () => {
  if (!nav.hidden) loggedOut();
});

window.addEventListener("hashchange", () => {
  if (!nav.hidden) route();
});

// The page shows its data from one answer (no wait for the event feed first).
bootstrap().then(({ sandboxes, digest }) => {
  seedSandboxes(sandboxes, digest);
  loggedIn();
}, loggedOut);
