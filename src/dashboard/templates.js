// The templates page: what the caller's team may start sandboxes from, with
// size and layers; a rebuild streams its log live; remove asks twice. The
// daemon decides who may do what (built-ins are an admin's to rebuild without
// the cache or to remove) and says so in one line when it refuses.
import { call, request } from "./api.js";
import { bytes, el, showError, when } from "./dom.js";

const decoder = new TextDecoder();
let view = null; // { body, log, empty, builds: AbortController[] } while shown

// `clear`: a success clears the error line (not after a failed build, whose
// line should stay).
async function refresh(clear = true) {
  if (!view) return;
  let answer;
  try {
    answer = await call("GET", "/abx/v1/templates");
    if (clear) showError(null);
  } catch (error) {
    showError(error);
    return;
  }
  if (!view) return;
  const list = (answer.templates || []).sort((a, b) => a.name.localeCompare(b.name));
  view.body.replaceChildren(...list.map(rowElement));
  view.empty.hidden = list.length !== 0;
  view.table.hidden = list.length === 0;
}

function created(template) {
  return template.createdMs ? when(new Date(template.createdMs).toISOString()) : "–";
}

function rowElement(template) {
  const name = template.name;
  const alias = template.resolved && template.resolved !== name ? `→ ${template.resolved}` : "";
  return el("tr", { "data-name": name },
    el("td", { class: "mono" }, name, alias ? el("span", { class: "muted" }, ` ${alias}`) : null),
    el("td", { class: "meta", title: template.source }, template.source),
    el("td", {}, template.built ? "built" : el("span", { class: "muted" }, "on first use")),
    el("td", { class: "num" }, template.built ? bytes(template.sizeBytes) : "–"),
    el("td", { class: "num" }, template.built ? String(template.layers) : "–"),
    el("td", {}, template.owner || el("span", { class: "muted" }, "built in")),
    el("td", { class: "nowrap", title: template.createdMs ? new Date(template.createdMs).toISOString() : "" },
      created(template)),
    el("td", { class: "actions" },
      el("button", { class: "ghost", "data-action": "rebuild", onclick: () => rebuild(name) }, "Rebuild"),
      removeButton(name)));
}

// Two clicks, the second within 4 s: no modal dialog to dismiss, and a stray
// keypress removes nothing.
function removeButton(name) {
  let armed = null;
  const button = el("button", { class: "danger", "data-action": "remove", onclick: async () => {
    if (!armed) {
      button.textContent = "Really remove?";
      armed = setTimeout(() => {
        armed = null;
        button.textContent = "Remove";
      }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    try {
      await request("DELETE", `/abx/v1/templates/${encodeURIComponent(name)}`);
      showError(null);
    } catch (error) {
      showError(error);
    }
    refresh(false);
  } }, "Remove");
  return button;
}

// One NDJSON line of a build: {"progress"}, {"done"} or {"error"}.
function logLine(line) {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return line;
  }
  if (message.progress !== undefined) return message.progress;
  if (message.done) return `done: ${message.done.name}, ${bytes(message.done.sizeBytes)}, ${message.done.layers} layers`;
  if (message.error) {
    showError(new Error(`build failed: ${message.error.message}`));
    return `error: ${message.error.message}`;
  }
  return line;
}

// Keeps the log to its newest lines: a long build's log stays a page long.
const kMaxLogChars = 256 * 1024;
function append(log, text) {
  log.textContent = (log.textContent + text).slice(-kMaxLogChars);
  log.scrollTop = log.scrollHeight;
}

async function rebuild(name) {
  if (!view) return;
  const { log, logTitle, logCard } = view;
  logCard.hidden = false;
  logTitle.textContent = `Build log: ${name}`;
  log.textContent = "";
  const abort = new AbortController();
  view.builds.push(abort);
  try {
    const response = await request("POST", `/abx/v1/templates/${encodeURIComponent(name)}/build`,
      { json: {}, signal: abort.signal });
    const reader = response.body.getReader();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split("\n");
      pending = lines.pop();
      append(log, lines.filter((l) => l).map((l) => `${logLine(l)}\n`).join(""));
    }
    if (pending) append(log, `${logLine(pending)}\n`);
  } catch (error) {
    if (abort.signal.aborted) return;
    append(log, `error: ${error.message}\n`);
    showError(error);
  }
  refresh(false);
}

export function renderTemplates(main) {
  const body = el("tbody");
  const table = el("table", { id: "templates" },
    el("thead", {}, el("tr", {}, ...["Name", "Source", "State", "Size", "Layers", "Owner", "Created", ""]
      .map((h) => el("th", {}, h)))), body);
  const empty = el("div", { class: "empty", id: "templates-empty", hidden: true },
    el("p", {}, "No templates yet."),
    el("p", { class: "muted" }, "Build one from a Sandboxfile: ",
      el("code", {}, "abx template build NAME DIR"), "."));
  const log = el("pre", { class: "logs", id: "build-log", "aria-live": "polite" });
  const logTitle = el("h2", {}, "Build log");
  const logCard = el("section", { class: "card", hidden: true }, logTitle, log);
  view = { body, table, empty, log, logTitle, logCard, builds: [] };
  main.replaceChildren(
    el("div", { class: "bar" }, el("h1", {}, "Templates"),
      el("button", { class: "ghost", onclick: () => refresh() }, "Refresh")),
    el("div", { class: "card flush" }, table, empty),
    el("div", { class: "spaced" }, logCard));
  refresh();
}

// Leaving the page stops reading a build's log; the build itself goes on
// (the daemon finishes it either way).
export function leaveTemplates() {
  if (!view) return;
  for (const abort of view.builds) abort.abort();
  view = null;
}
