// One sandbox: live charts, its timeline and changes (timeline.js), a
// terminal, its processes, a file browser and its log, through the sandbox's
// envd routes (Connect RPCs and /files), GET /sandboxes/{id}/metrics and
// /logs, and the daemon's event stream. One that ended (its record is kept a
// while) shows its timeline only, read-only: there is nothing left to act on.
import { call, request, rpc } from "./api.js";
import { lineChart } from "./charts.js";
import { bytes, el, showError, when } from "./dom.js";
import { endText } from "./ended.js";
import { subscribe } from "./events.js";
import { terminalSection } from "./terminal.js";
import { diffSection, timelineSection } from "./timeline.js";

// What stops the shown sandbox's live updates (charts, its end, its timeline's
// stream) when the page goes.
let unsubscribe = null;
export function leaveSandbox() {
  if (unsubscribe) unsubscribe();
  unsubscribe = null;
}

async function attempt(work) {
  try {
    const out = await work();
    showError(null);
    return out;
  } catch (error) {
    showError(error);
    return undefined;
  }
}

function section(title, ...children) {
  return el("section", { class: "card" }, el("h2", {}, title), ...children);
}

async function processesSection(id) {
  const body = el("tbody");
  const refresh = async () => {
    const list = await attempt(() => rpc(id, "process.Process/List"));
    if (!list) return;
    body.replaceChildren(...(list.processes || []).map((p) => el("tr", {},
      el("td", { class: "num" }, p.pid),
      el("td", { class: "mono" }, [p.config.cmd, ...(p.config.args || [])].join(" ")),
      el("td", {}, p.tag || ""),
      el("td", { class: "actions" }, el("button", { class: "danger", onclick: async () => {
        await attempt(() => rpc(id, "process.Process/SendSignal",
          { process: { pid: p.pid }, signal: "SIGNAL_SIGKILL" }));
        refresh();
      } }, "Kill")))));
    if (!body.children.length) body.append(el("tr", {}, el("td", { colspan: 4, class: "muted" },
      "No processes started through the API are running.")));
  };
  await refresh();
  return section("Processes",
    el("table", { id: "processes" }, el("thead", {}, el("tr", {},
      el("th", {}, "PID"), el("th", {}, "Command"), el("th", {}, "Tag"), el("th", {}))), body),
    el("button", { class: "ghost", onclick: refresh }, "Refresh"));
}

function download(id, path) {
  return attempt(async () => {
    const response = await request("GET", `/files?path=${encodeURIComponent(path)}`, { sandbox: id });
    const link = el("a", { href: URL.createObjectURL(await response.blob()),
      download: path.split("/").pop() });
    link.click();
    URL.revokeObjectURL(link.href);
  });
}

async function filesSection(id) {
  const where = el("input", { id: "dir", value: "/home/user", size: 40 });
  const body = el("tbody");
  const list = async () => {
    const answer = await attempt(() => rpc(id, "filesystem.Filesystem/ListDir",
      { path: where.value, depth: 1 }));
    if (!answer) return;
    const entries = (answer.entries || []).sort((a, b) => a.name.localeCompare(b.name));
    body.replaceChildren(...entries.map((entry) => {
      const dir = entry.type === "FILE_TYPE_DIRECTORY";
      return el("tr", { "data-name": entry.name },
        el("td", {}, dir ? el("a", { href: "#", onclick: (e) => {
          e.preventDefault();
          where.value = entry.path;
          list();
        } }, `${entry.name}/`) : entry.name),
        el("td", { class: "num" }, dir ? "" : bytes(Number(entry.size || 0))),
        el("td", {}, when(entry.modifiedTime)),
        el("td", { class: "actions" },
          dir ? null : el("button", { class: "ghost", "data-action": "view",
            onclick: () => view(id, entry, viewer) }, "View"),
          dir ? null : el("button", { class: "ghost", onclick: () => download(id, entry.path) }, "Download"),
          el("button", { class: "danger", onclick: async () => {
            await attempt(() => rpc(id, "filesystem.Filesystem/Remove", { path: entry.path }));
            list();
          } }, "Delete")));
    }));
    if (!entries.length) body.append(el("tr", {}, el("td", { colspan: 4, class: "muted" },
      "Empty directory: upload a file here.")));
  };
  const viewer = el("div", { id: "viewer" });
  const send = async (files) => {
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      const path = `${where.value.replace(/\/$/, "")}/${file.name}`;
      await attempt(() => request("POST", `/files?path=${encodeURIComponent(path)}`,
        { sandbox: id, body: form }));
    }
    list();
  };
  const upload = el("input", { type: "file", id: "upload", multiple: true, onchange: async () => {
    await send([...upload.files]);
    upload.value = "";
  } });
  await list();
  const card = section("Files",
    el("form", { class: "bar", onsubmit: (e) => { e.preventDefault(); list(); } },
      where, el("button", { class: "ghost", type: "submit" }, "Open"),
      el("label", { class: "button ghost" }, "Upload", upload)),
    el("p", { class: "muted" }, "Drop files here to upload them to this directory."),
    el("table", { id: "files" }, el("thead", {}, el("tr", {},
      el("th", {}, "Name"), el("th", {}, "Size"), el("th", {}, "Modified"), el("th", {}))), body),
    viewer);
  dropTarget(card, send);
  return card;
}

// Files dropped on `card` are uploaded; the outline says where they will land.
function dropTarget(card, send) {
  card.classList.add("dropzone");
  const hasFiles = (event) => [...(event.dataTransfer?.types || [])].includes("Files");
  card.addEventListener("dragover", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    card.classList.add("dragging");
  });
  card.addEventListener("dragleave", (event) => {
    if (!card.contains(event.relatedTarget)) card.classList.remove("dragging");
  });
  card.addEventListener("drop", (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    card.classList.remove("dragging");
    send([...event.dataTransfer.files]);
  });
}

// At most this much of a file is shown: the read stops there.
const kViewBytes = 1 << 20;

// The file's first bytes, at most `limit`, and whether there was more.
async function head(response, limit) {
  const reader = response.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { data: joined(parts, size), more: false };
    parts.push(value);
    size += value.length;
    if (size > limit) {
      reader.cancel();
      return { data: joined(parts, size).subarray(0, limit), more: true };
    }
  }
}

function joined(parts, size) {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// Shows a file as text (textContent: never markup), or says why not.
async function view(id, entry, viewer) {
  const close = el("button", { class: "ghost", onclick: () => viewer.replaceChildren() }, "Close");
  const title = el("div", { class: "bar" }, el("h2", { class: "mono" }, entry.path), close);
  const response = await attempt(() => request("GET", `/files?path=${encodeURIComponent(entry.path)}`,
    { sandbox: id }));
  if (!response) return;
  const { data, more } = await head(response, kViewBytes);
  const pre = el("pre", { class: "logs viewer", id: "file-text" });
  if (data.includes(0)) {
    viewer.replaceChildren(title, el("p", { class: "muted" }, "A binary file: download it to open it."));
    return;
  }
  pre.textContent = new TextDecoder().decode(data);
  viewer.replaceChildren(title, pre,
    more ? el("p", { class: "muted" }, `Only the first ${bytes(kViewBytes)} are shown: download it for the rest.`) : null);
}

// Its events: the daemon's log of it (created, timeout changes, pause and
// resume, commands and their ends), and its end as the event stream tells it.
async function logsSection(id) {
  const pre = el("pre", { class: "logs", id: "logs" });
  const refresh = async () => {
    const answer = await attempt(() => call("GET", `/sandboxes/${id}/logs`));
    if (!answer) return;
    const lines = (answer.logs || []).map((l) => `${when(l.timestamp)}  ${l.line}`);
    pre.textContent = lines.length ? lines.join("\n") : "No log lines yet.";
  };
  await refresh();
  return Object.assign(section("Log", pre, el("button", { class: "ghost", onclick: refresh }, "Refresh")),
    { refresh });
}

function percent(n) {
  return `${n.toFixed(1)} %`;
}

// Each sample with `netRate`, the bytes per second received and sent since
// the sample before (the daemon reports running totals); the first has none.
function netRates() {
  let previous = null;
  return (sample) => {
    const total = (sample.netRxBytes || 0) + (sample.netTxBytes || 0);
    const seconds = previous ? sample.timestampUnix - previous.timestampUnix : 0;
    const rate = seconds > 0 ? Math.max(0, total - previous.total) / seconds : 0;
    previous = { total, timestampUnix: sample.timestampUnix };
    return { ...sample, netRate: rate };
  };
}

// CPU, memory, disk and network over the last hour (the daemon's history),
// then each metrics tick of the event stream.
async function chartsSection(id) {
  const charts = [
    lineChart({ id: "chart-cpu", title: "CPU", value: (s) => s.cpuUsedPct, ceiling: () => 100,
      label: (s) => `${percent(s.cpuUsedPct)} of ${s.cpuCount}` }),
    lineChart({ id: "chart-memory", title: "Memory", value: (s) => s.memUsed, ceiling: (s) => s.memTotal,
      label: (s) => `${bytes(s.memUsed)} / ${bytes(s.memTotal)}` }),
    lineChart({ id: "chart-disk", title: "Disk", value: (s) => s.diskUsed, ceiling: (s) => s.diskTotal,
      label: (s) => `${bytes(s.diskUsed)} / ${bytes(s.diskTotal)}` }),
    lineChart({ id: "chart-network", title: "Network", value: (s) => s.netRate, ceiling: () => 0,
      label: (s) => `${bytes(s.netRate)}/s · in ${bytes(s.netRxBytes || 0)}, out ${bytes(s.netTxBytes || 0)}` }),
  ];
  const rated = netRates();
  const history = await attempt(() => call("GET", `/sandboxes/${id}/metrics`));
  const samples = (Array.isArray(history) ? history : []).map(rated);
  for (const chart of charts) chart.add(samples);
  const card = el("section", { class: "card wide", id: "charts" }, el("h2", {}, "Resources"),
    el("div", { class: "charts" }, ...charts.map((c) => c.element)));
  return Object.assign(card, {
    add: (sample) => {
      const withRate = rated(sample);
      charts.forEach((c) => c.add([withRate]));
    },
  });
}

// The `created` and `ended` events of a sandbox that is gone, or null when
// none of its record is kept for this team (unknown, another team's, or
// ended longer ago than the retention).
async function endedRecord(id) {
  try {
    const response = await request("GET", `/abx/v1/sandboxes/${id}/events?type=lifecycle`);
    const events = (await response.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line));
    return { created: events.find((e) => e.event === "created"),
      ended: events.findLast((e) => e.event === "ended") };
  } catch {
    return null;
  }
}

// An ended sandbox's page: what it was, when and why it ended, its timeline.
function renderEndedSandbox(main, id, { created, ended }) {
  leaveSandbox();
  const timeline = timelineSection(id, { follow: false });
  unsubscribe = () => timeline.stop();
  const what = created
    ? `${created.asked || created.template} · ${created.cpuCount} CPU · ${created.memoryMB} MiB · started ${when(created.at)}`
    : "its creation was rotated out of the record";
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/ended" }, "← Ended sandboxes")),
    el("div", { class: "bar" }, el("h1", { class: "mono title" }, id),
      el("span", { class: "state ended" }, "ended"), el("span", { class: "muted" }, what)),
    el("p", { class: "banner", id: "ended-why" },
      ended ? `Ended ${when(ended.at)}: ${endText(ended.why, ended.keyName, ended.key)}.`
        : endText(null) + ".", " Its record is read-only."),
    el("div", { class: "grid" }, timeline));
}

export async function renderSandbox(main, id) {
  main.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  let info;
  try {
    info = await call("GET", `/sandboxes/${id}`);
  } catch (error) {
    const record = error.status === 404 ? await endedRecord(id) : null;
    if (location.hash !== `#/sandbox/${id}`) return; // left meanwhile
    if (record) return renderEndedSandbox(main, id, record);
    showError(error);
    main.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Sandboxes")));
    return;
  }
  showError(null);
  const [charts, changes, ...sections] = await Promise.all([chartsSection(id), diffSection(id),
    terminalSection(id), processesSection(id), filesSection(id), logsSection(id)]);
  if (location.hash !== `#/sandbox/${id}`) return; // left meanwhile
  const events = sections[sections.length - 1];
  const ended = el("p", { class: "banner", id: "ended", hidden: true },
    "This sandbox has ended (killed, or its timeout ran out). ",
    el("a", { href: `#/sandbox/${id}`, id: "show-record", onclick: (event) => {
      event.preventDefault(); // the same hash: route it again (app.js), which finds it ended
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } }, "Show its record"),
    " or go ", el("a", { href: "#/" }, "back to the sandboxes"), ".");
  leaveSandbox();
  const timeline = timelineSection(id);
  const stopFeed = subscribe({
    metrics(map) {
      if (map[id]) charts.add(map[id]);
    },
    sandbox(row) {
      if (row.sandboxID === id) events.refresh();
    },
    ended({ sandboxID }) {
      if (sandboxID === id) ended.hidden = false;
    },
  });
  unsubscribe = () => {
    stopFeed();
    timeline.stop();
  };
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/" }, "← Sandboxes")),
    ended,
    el("div", { class: "bar" }, el("h1", { class: "mono title" }, id),
      el("span", { class: `state ${info.state}` }, info.state),
      el("span", { class: "muted" }, `${info.alias || info.templateID} · ${info.cpuCount} CPU · ${info.memoryMB} MiB`)),
    el("div", { class: "grid" }, charts, timeline, ...sections, changes));
}
