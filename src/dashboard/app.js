// The dashboard's entry: resumes the session (or shows the login page) and
// routes by the URL's hash: #/ the sandboxes, #/sandbox/<id> one sandbox.
import { currentSession, logout, resume } from "./api.js";
import { showError } from "./dom.js";
import { renderLogin } from "./login.js";
import { renderSandbox } from "./sandbox.js";
import { leaveSandboxes, renderSandboxes, stopEvents } from "./sandboxes.js";
import { closeTerminal } from "./terminal.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");

function route() {
  const match = location.hash.match(/^#\/sandbox\/([a-z0-9]{1,64})$/);
  leaveSandboxes();
  closeTerminal();
  if (match) renderSandbox(main, match[1]);
  else renderSandboxes(main);
}

function loggedIn() {
  const session = currentSession();
  document.getElementById("who").textContent = `team ${session.team}${session.admin ? " · admin" : ""}`;
  nav.hidden = false;
  route();
}

function loggedOut() {
  stopEvents();
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

resume().then(loggedIn, loggedOut);
