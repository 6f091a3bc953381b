// A sandbox's flight record as a timeline (GET /abx/v1/sandboxes/{id}/events
// with follow=1: server-sent events, the record so far and then each new
// event, until the sandbox ends; for one that ended, the record read once),
// and what it changed on top of its template
// (GET /abx/v1/sandboxes/{id}/diff). Argv, paths and command output are the
// sandbox's own, hostile text: every string lands through el()/textContent.
import { call, request } from "./api.js";
import { bytes, el, showError, when } from "./dom.js";
import { endText } from "./ended.js";

const kTypes = ["lifecycle", "commands", "files", "network"];
// A read answers at most this many events: ask again from the last one's seq.
const kMaxRead = 10000;
// A detail cell shows at most this much; the output panel shows it all.
const kDetailChars = 160;

function cut(text) {
  const line = String(text ?? "").replace(/\s+/g, " ").trim();
  return line.length > kDetailChars ? `${line.slice(0, kDetailChars)}…` : line;
}

// The few fields that say what happened, per event; any other event shows its
// fields as key=value, so a kind added later still reads.
const details = {
  "lifecycle created": (e) =>
    `${e.asked || e.template} · ${e.cpuCount} CPU · ${e.memoryMB} MiB · timeout ${e.timeoutS} s`,
  "lifecycle timeout set": (e) => `ends ${when(e.endAt)}`,
  "lifecycle ended": (e) => endText(e.why, e.keyName, e.key),
  "commands started": (e) => `pid ${e.pid}${e.pty ? " (terminal)" : ""}: ${(e.argv || []).join(" ")}`,
  "commands not started": (e) => e.error,
  "commands ended": (e) =>
    `pid ${e.pid}: ${e.status}${e.outOfMemory ? " (out of memory)" : ""} · ${bytes(e.outputBytes)} of output`,
  "commands code started": (e) => `${e.language || ""} ${e.code || ""}`,
  "commands code ended": (e) => e.failed ? "failed" : e.error ? `${e.error}: ${e.errorValue || ""}` : "ok",
  "files uploaded": (e) => `${e.path} · ${bytes(e.bytes)}`,
  "files downloaded": (e) => `${e.path} · ${bytes(e.bytes)}${e.complete === false ? " (cut short)" : ""}`,
};

const kBase = new Set(["seq", "at", "type", "event"]);

function detail(event) {
  const known = details[`${event.type} ${event.event}`];
  if (known) return cut(known(event));
  return cut(Object.entries(event).filter(([k]) => !kBase.has(k))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" "));
}

// A command's end: its exit and the first and last KiB of its output, as text.
function showOutput(panel, ended) {
  const close = el("button", { class: "ghost", onclick: () => panel.replaceChildren() }, "Close");
  const exit = ended.exitCode === null || ended.exitCode === undefined ? "no exit code"
    : `exit code ${ended.exitCode}`;
  const head = el("pre", { class: "logs viewer", id: "output-head" });
  head.textContent = ended.outputHead || "";
  const tail = ended.outputTail ? el("pre", { class: "logs viewer", id: "output-tail" }) : null;
  if (tail) tail.textContent = ended.outputTail;
  const status = ended.outOfMemory ? `${ended.status} (out of memory)` : ended.status;
  // replaceChildren, unlike el(), would show a null as "null".
  panel.replaceChildren(...[
    el("div", { class: "bar" }, el("h2", { class: "mono" }, `pid ${ended.pid}`),
      el("span", { id: "output-exit" }, `${exit} · ${status || ""} · ${bytes(ended.outputBytes)} of output`),
      close),
    ended.outputHead ? head : el("p", { class: "muted" }, "No output."),
    tail ? el("p", { class: "muted" }, "… and its end:") : null, tail].filter(Boolean));
}

// The whole record of a sandbox that ended, oldest first (ndjson, in reads of
// at most kMaxRead events).
async function readRecord(id, add) {
  for (let since = 0; ;) {
    const response = await request("GET", `/abx/v1/sandboxes/${id}/events?since=${since}`);
    const events = (await response.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
    events.forEach(add);
    if (events.length < kMaxRead) return;
    since = events[events.length - 1].seq;
  }
}

// The timeline card; `stop()` closes its stream. `follow: false` (an ended
// sandbox) reads the record once instead.
export function timelineSection(id, { follow = true } = {}) {
  const body = el("tbody");
  const panel = el("div", { id: "command-output" });
  const type = el("select", { id: "timeline-type", onchange: () => applyFilter() },
    el("option", { value: "" }, "All types"), ...kTypes.map((t) => el("option", { value: t }, t)));
  const search = el("input", { type: "search", id: "timeline-search", placeholder: "Search events",
    oninput: () => applyFilter() });
  const count = el("span", { class: "muted", id: "timeline-count" });
  const ends = new Map(); // pid → its `ended` event
  const rows = [];
  const seqs = new Set(); // a reconnect may repeat the newest
  let shown = 0;

  function matches(row) {
    const needle = search.value.trim().toLowerCase();
    return (!type.value || row.dataset.type === type.value) && (!needle || row.haystack.includes(needle));
  }
  function showCount() {
    count.textContent = `${shown} of ${rows.length} events`;
  }
  function applyFilter() {
    shown = 0;
    for (const row of rows) {
      row.hidden = !matches(row);
      if (!row.hidden) shown += 1;
    }
    showCount();
  }
  function open(event) {
    const ended = event.event === "ended" ? event : ends.get(event.pid);
    if (ended) showOutput(panel, ended);
    else panel.replaceChildren(el("p", { class: "muted" }, `pid ${event.pid} has not ended yet.`));
  }
  function add(event) {
    if (seqs.has(event.seq)) return;
    seqs.add(event.seq);
    const command = event.type === "commands" && event.pid !== undefined;
    if (command && event.event === "ended") ends.set(event.pid, event);
    const row = el("tr", { "data-seq": event.seq, "data-type": event.type, "data-event": event.event,
      class: command ? "clickable" : null, onclick: command ? () => open(event) : null },
    el("td", { class: "num" }, when(event.at)), el("td", {}, event.type), el("td", {}, event.event),
    el("td", { class: "mono detail" }, detail(event)));
    row.seq = event.seq;
    row.haystack = JSON.stringify(event).toLowerCase();
    row.hidden = !matches(row);
    rows.push(row);
    body.append(row);
    if (!row.hidden) shown += 1;
    showCount();
  }

  let source = null;
  if (follow) {
    source = new EventSource(`/abx/v1/sandboxes/${id}/events?follow=1`);
    const onEvent = (message) => {
      const event = JSON.parse(message.data);
      add(event);
      if (event.type === "lifecycle" && event.event === "ended") source.close(); // the record is whole
    };
    for (const t of kTypes) source.addEventListener(t, onEvent);
    source.onmessage = onEvent; // a type added later still shows
  } else {
    readRecord(id, add).catch(showError);
  }
  applyFilter();

  const card = el("section", { class: "card wide", id: "timeline" }, el("h2", {}, "Timeline"),
    el("div", { class: "bar" }, type, search, count),
    el("p", { class: "muted" }, "Click a command to see its exit and output."),
    el("div", { class: "scroll" }, el("table", { id: "events" }, el("thead", {}, el("tr", {},
      el("th", {}, "Time"), el("th", {}, "Type"), el("th", {}, "Event"), el("th", {}, "Detail"))), body)),
    panel);
  return Object.assign(card, { stop: () => source && source.close() });
}

// What the sandbox changed against its template, like `docker diff`, as a
// file tree: each directory a <details> (folded by a click, no script of
// ours), a chain of directories with nothing of their own on one line.
export async function diffSection(id) {
  const tree = el("div", { id: "diff", class: "tree mono" });
  const note = el("p", { class: "muted", id: "diff-note" });
  const refresh = async () => {
    let answer;
    try {
      answer = await call("GET", `/abx/v1/sandboxes/${id}/diff`);
    } catch (error) {
      showError(error);
      return;
    }
    const changes = answer.changes || [];
    tree.replaceChildren(...renderTree(pathTree(changes), ""));
    note.textContent = !changes.length ? "Nothing changed against the template."
      : `${changes.length} changes${answer.truncated ? " (more were left out)" : ""}.`;
  };
  await refresh();
  return section("Changes against the template", note, el("div", { class: "scroll" }, tree),
    el("button", { class: "ghost", onclick: refresh }, "Refresh"));
}

// {children: Map(name -> node), change?: the entry for this path}.
function pathTree(changes) {
  const root = { children: new Map() };
  for (const change of changes) {
    let node = root;
    for (const part of change.path.split("/").filter(Boolean)) {
      if (!node.children.has(part)) node.children.set(part, { children: new Map() });
      node = node.children.get(part);
    }
    node.change = change;
  }
  return root;
}

function onlyChild(node) {
  return node.children.values().next().value;
}

function renderTree(node, parent) {
  const names = [...node.children.keys()].sort((a, b) => a.localeCompare(b));
  return names.map((name) => {
    let path = `${parent}/${name}`;
    let child = node.children.get(name);
    let label = name;
    // A directory with nothing of its own and one subdirectory: one line.
    while (!child.change && child.children.size === 1 && onlyChild(child).children.size > 0) {
      const [next, grandchild] = [...child.children.entries()][0];
      path = `${path}/${next}`;
      label = `${label}/${next}`;
      child = grandchild;
    }
    const entry = child.change;
    const badge = entry && el("span", { class: `change ${entry.change}` }, entry.change);
    const attrs = entry ? { "data-path": entry.path, "data-change": entry.change } : {};
    if (child.children.size === 0) {
      const size = entry && entry.kind === "file" ? bytes(Number(entry.size || 0))
        : entry && entry.kind !== "dir" ? entry.kind : "";
      const shown = entry && entry.kind === "dir" ? `${label}/` : label;
      return el("div", { class: "leaf", ...attrs }, badge, " ", shown, size && el("span", { class: "muted" }, ` ${size}`));
    }
    return el("details", { open: true, ...attrs },
      el("summary", {}, badge, badge && " ", `${label}/`),
      el("div", { class: "branch" }, ...renderTree(child, path)));
  });
}

function section(title, ...children) {
  return el("section", { class: "card", id: "changes" }, el("h2", {}, title), ...children);
}
