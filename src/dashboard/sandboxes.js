// The sandboxes page: a table the daemon's event stream keeps live, a filter,
// and create / extend / pause / resume / kill. Only the rows in view are in
// the table (a spacer above and below stands for the rest), so 1000
// sandboxes load as fast as a screenful: building and laying out every row
// was most of the page's load time.
import { call, currentSession } from "./api.js";
import { bytes, el, relative, showError, when } from "./dom.js";
import { stopEvents, subscribe } from "./events.js";
import { sandboxTabs } from "./ended.js";

const rows = new Map();    // sandboxID → listing (GET /sandboxes shape)
const metrics = new Map(); // sandboxID → newest SandboxMetric
let view = null;           // the elements of the page while it is shown
// sandboxID → {row, tr, cells}: a row's element is built once per listing and
// only its live cells change, so a metrics tick does not rebuild 1000 rows.
const built = new Map();
let shown = [];           // the rows the filter keeps, newest first
// One row's height in px, measured once rows are shown (every cell is one
// line: style.css); a guess until then. The guess is what Debian's Chromium
// lays out (42.4): a guess off by more than a pixel places the rows twice,
// and each placing lays the page out again (a tenth of a loaded page's time).
let rowHeight = 0;
const kGuessedRowHeight = 42;
const kOverscan = 8;      // rows built beyond each edge of the view

// metadata "a=1, b=2" → {a: "1", b: "2"}
function parseMetadata(text) {
  const out = {};
  for (const pair of text.split(",")) {
    const [key, ...rest] = pair.split("=");
    if (key.trim()) out[key.trim()] = rest.join("=").trim();
  }
  return out;
}

function metadataText(metadata) {
  return Object.entries(metadata || {}).map(([k, v]) => `${k}=${v}`).join(", ");
}

async function act(work) {
  try {
    await work();
    showError(null);
  } catch (error) {
    showError(error);
  }
}

// The caller's team's sandboxes have actions; an admin sees every team's,
// and another team's only as a row (the API acts on a key's own team only).
function ownRow(row) {
  return !row.owner || row.owner === currentSession().team;
}

function actions(row) {
  const id = row.sandboxID;
  if (!ownRow(row)) return el("td", { class: "actions muted" }, "another team's");
  const paused = row.state === "paused";
  return el("td", { class: "actions" },
    el("button", { class: "ghost", title: "Add 5 minutes", "data-action": "extend",
      onclick: () => act(() => call("POST", `/sandboxes/${id}/timeout`, { json: { timeout: 300 } })) }, "+5m"),
    paused
      ? el("button", { class: "ghost", "data-action": "resume",
        onclick: () => act(() => call("POST", `/sandboxes/${id}/resume`, { json: { timeout: 300 } })) }, "Resume")
      : el("button", { class: "ghost", "data-action": "pause",
        onclick: () => act(() => call("POST", `/sandboxes/${id}/pause`)) }, "Pause"),
    el("button", { class: "danger", "data-action": "kill",
      onclick: () => act(() => call("DELETE", `/sandboxes/${id}`)) }, "Kill"));
}

// The cells that change without a new listing: CPU, memory and the time left.
function liveTexts(row) {
  const m = metrics.get(row.sandboxID);
  return {
    ends: row.state === "paused" ? "–" : relative(row.endAt),
    cpu: m ? `${m.cpuUsedPct.toFixed(1)}% of ${m.cpuCount}` : `– of ${row.cpuCount}`,
    memory: m ? `${bytes(m.memUsed)} / ${bytes(m.memTotal)}` : `– / ${row.memoryMB} MiB`,
  };
}

function rowElement(row) {
  const live = liveTexts(row);
  const cells = {
    ends: el("td", { title: row.endAt, class: "nowrap" }, live.ends),
    cpu: el("td", { class: "num" }, live.cpu),
    memory: el("td", { class: "num" }, live.memory),
  };
  const tr = el("tr", { "data-id": row.sandboxID },
    el("td", {}, ownRow(row)
      ? el("a", { href: `#/sandbox/${row.sandboxID}`, class: "mono" }, row.sandboxID)
      : el("span", { class: "mono" }, row.sandboxID)),
    el("td", {}, row.alias || row.templateID),
    el("td", {}, row.owner || currentSession().team),
    el("td", {}, el("span", { class: `state ${row.state}` }, row.state)),
    el("td", { title: row.startedAt, class: "nowrap" }, when(row.startedAt)),
    cells.ends,
    cells.cpu,
    cells.memory,
    el("td", { class: "meta" }, metadataText(row.metadata)),
    actions(row));
  return { row, tr, cells };
}

// The row's element, built again only for a new listing; its live cells brought up to date.
function rowFor(row) {
  let entry = built.get(row.sandboxID);
  if (!entry || entry.row !== row) {
    entry = rowElement(row);
    built.set(row.sandboxID, entry);
    return entry.tr;
  }
  const live = liveTexts(row);
  for (const name of ["ends", "cpu", "memory"]) {
    if (entry.cells[name].textContent !== live[name]) entry.cells[name].textContent = live[name];
  }
  return entry.tr;
}

function matches(row, filter) {
  if (!filter) return true;
  const text = [row.sandboxID, row.templateID, row.alias, row.state, row.owner,
    metadataText(row.metadata)]
    .join(" ").toLowerCase();
  return filter.toLowerCase().split(/\s+/).every((word) => text.includes(word));
}

function render() {
  if (!view) return;
  const filter = view.filter.value.trim();
  shown = [...rows.values()].filter((row) => matches(row, filter))
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  for (const id of built.keys()) if (!rows.has(id)) built.delete(id);
  view.count.textContent = `${rows.size} running` + (filter ? `, ${shown.length} shown` : "");
  view.table.dataset.shown = String(shown.length);
  view.empty.hidden = rows.size !== 0;
  view.table.hidden = rows.size === 0;
  renderWindow();
}

function spacer(height) {
  const td = el("td", { colspan: 10 });
  td.style.height = `${height}px`;
  return el("tr", { class: "spacer", "aria-hidden": "true" }, td);
}

// The rows in the viewport (and kOverscan more each side) between two
// spacers as tall as the rows left out: the scrollbar is the whole list's.
function renderWindow() {
  if (!view) return;
  if (view.table.hidden) { // none left: no row stays behind, hidden
    view.body.replaceChildren();
    delete view.body.dataset.window;
    return;
  }
  const height = rowHeight || kGuessedRowHeight;
  const above = Math.max(0, -view.body.getBoundingClientRect().top);
  const first = Math.max(0, Math.min(shown.length, Math.floor(above / height)) - kOverscan);
  const last = Math.min(shown.length, Math.ceil((above + window.innerHeight) / height) + kOverscan);
  const trs = shown.slice(first, last).map(rowFor);
  const rest = shown.length - last;
  // The same rows with the same spacers: leave the table's children (and layout) alone.
  const key = `${first} ${rest} ${height}`;
  const children = view.body.children;
  const same = view.body.dataset.window === key
    && children.length === trs.length + (first ? 1 : 0) + (rest ? 1 : 0)
    && trs.every((tr, i) => children[i + (first ? 1 : 0)] === tr);
  if (!same) {
    view.body.replaceChildren(...[first ? spacer(first * height) : null, ...trs,
      rest ? spacer(rest * height) : null].filter(Boolean));
    view.body.dataset.window = key;
  }
  if (!rowHeight && trs.length) {
    const box = (tr) => tr.getBoundingClientRect();
    const measured = (box(trs[trs.length - 1]).bottom - box(trs[0]).top) / trs.length;
    rowHeight = measured > 0 ? measured : kGuessedRowHeight;
    if (Math.abs(rowHeight - height) > 1) renderWindow(); // the guess was off: place them again
  }
}

let framed = false;
function onScroll() {
  if (framed || !view) return;
  framed = true;
  requestAnimationFrame(() => {
    framed = false;
    renderWindow();
  });
}
window.addEventListener("scroll", onScroll, { passive: true });
window.addEventListener("resize", () => {
  rowHeight = 0; // a narrower window may wrap a cell: measure again
  onScroll();
});

// The sandboxes a loaded page was given (GET /dashboard/bootstrap), shown at
// once; the feed, told their digest, then sends only what changed since.
let held = null;
export function seedSandboxes(list, digest) {
  rows.clear();
  for (const row of list) rows.set(row.sandboxID, row);
  held = digest;
}

// Kept current by the event stream while logged in, shown or not, so coming
// back to the page shows the table at once.
let unsubscribe = null;
function listen() {
  if (unsubscribe) return;
  const have = held;
  held = null;
  unsubscribe = subscribe({
    snapshot(list) {
      rows.clear();
      for (const row of list) rows.set(row.sandboxID, row);
      render();
    },
    sandbox(row) {
      rows.set(row.sandboxID, row);
      render();
    },
    ended({ sandboxID }) {
      rows.delete(sandboxID);
      metrics.delete(sandboxID);
      render();
    },
    metrics(map) {
      for (const [id, sample] of Object.entries(map)) metrics.set(id, sample);
      render();
    },
  }, have);
}

export function stopSandboxEvents() {
  if (unsubscribe) unsubscribe();
  unsubscribe = null;
  held = null;
  stopEvents();
  rows.clear();
  metrics.clear();
  built.clear();
}

function createForm() {
  const template = el("input", { id: "new-template", value: "base", list: "templates", required: true, size: 14 });
  const timeout = el("input", { id: "new-timeout", type: "number", min: 1, value: 300, size: 6 });
  const metadata = el("input", { id: "new-metadata", placeholder: "owner=me, task=42", size: 22 });
  // Limits: empty takes the template's (the daemon checks them and the team's quota).
  const cpus = el("input", { id: "new-cpus", type: "number", min: 1, placeholder: "template's", size: 6 });
  const memory = el("input", { id: "new-memory", type: "number", min: 64, step: 64, placeholder: "template's", size: 8 });
  const names = el("datalist", { id: "templates" });
  call("GET", "/abx/v1/templates").then((list) => {
    const items = Array.isArray(list) ? list : list.templates || [];
    names.replaceChildren(...items.map((t) => el("option", { value: t.name || t.templateID })));
  }).catch(() => {});
  return el("form", { class: "create", onsubmit: (event) => {
    event.preventDefault();
    const body = { templateID: template.value.trim(), timeout: Number(timeout.value) || 300,
      metadata: parseMetadata(metadata.value) };
    if (cpus.value) body.cpuCount = Number(cpus.value);
    if (memory.value) body.memoryMB = Number(memory.value);
    act(() => call("POST", "/sandboxes", { json: body }));
  } },
  el("label", {}, "Template ", template), names,
  el("label", {}, "Timeout (s) ", timeout),
  el("label", {}, "CPUs ", cpus),
  el("label", {}, "Memory (MiB) ", memory),
  el("label", {}, "Metadata ", metadata),
  el("button", { type: "submit", id: "create" }, "Create sandbox"));
}

export function renderSandboxes(main) {
  const filter = el("input", { id: "filter", type: "search", placeholder: "Filter by id, template, owner, state, metadata  ( / )",
    oninput: render });
  const body = el("tbody");
  const table = el("table", { id: "sandboxes" },
    el("thead", {}, el("tr", {}, ...["ID", "Template", "Owner", "State", "Started", "Ends", "CPU", "Memory",
      "Metadata", ""].map((h) => el("th", {}, h)))), body);
  const empty = el("div", { class: "empty", id: "empty" },
    el("p", {}, "No sandboxes are running for this team."),
    el("p", { class: "muted" }, "Create one above, or from a terminal: ",
      el("code", {}, "abx create --template base")));
  const count = el("span", { class: "muted", id: "sandbox-count" });
  view = { filter, body, table, empty, count };
  main.replaceChildren(
    el("div", { class: "bar" }, el("h1", {}, "Sandboxes"), sandboxTabs("running"), count),
    createForm(),
    el("div", { class: "bar" }, filter),
    el("div", { class: "card flush" }, table, empty));
  render();
  listen();
}

export function leaveSandboxes() {
  view = null;
}

// "/" focuses the filter, as on most tools' list pages.
document.addEventListener("keydown", (event) => {
  if (event.key === "/" && view && document.activeElement !== view.filter
      && !(document.activeElement instanceof HTMLInputElement)) {
    event.preventDefault();
    view.filter.focus();
  }
});
