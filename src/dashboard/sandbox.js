// One sandbox: its processes, a file browser and its logs, through the
// sandbox's envd routes (Connect RPCs and /files) and GET /sandboxes/{id}/logs.
import { call, request, rpc } from "./api.js";
import { bytes, el, showError, when } from "./dom.js";
import { terminalSection } from "./terminal.js";

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
          dir ? null : el("button", { class: "ghost", onclick: () => download(id, entry.path) }, "Download"),
          el("button", { class: "danger", onclick: async () => {
            await attempt(() => rpc(id, "filesystem.Filesystem/Remove", { path: entry.path }));
            list();
          } }, "Delete")));
    }));
    if (!entries.length) body.append(el("tr", {}, el("td", { colspan: 4, class: "muted" },
      "Empty directory: upload a file here.")));
  };
  const upload = el("input", { type: "file", id: "upload", multiple: true, onchange: async () => {
    for (const file of upload.files) {
      const form = new FormData();
      form.append("file", file, file.name);
      const path = `${where.value.replace(/\/$/, "")}/${file.name}`;
      await attempt(() => request("POST", `/files?path=${encodeURIComponent(path)}`,
        { sandbox: id, body: form }));
    }
    upload.value = "";
    list();
  } });
  await list();
  return section("Files",
    el("form", { class: "bar", onsubmit: (e) => { e.preventDefault(); list(); } },
      where, el("button", { class: "ghost", type: "submit" }, "Open"),
      el("label", { class: "button ghost" }, "Upload", upload)),
    el("table", { id: "files" }, el("thead", {}, el("tr", {},
      el("th", {}, "Name"), el("th", {}, "Size"), el("th", {}, "Modified"), el("th", {}))), body));
}

async function logsSection(id) {
  const pre = el("pre", { class: "logs", id: "logs" });
  const refresh = async () => {
    const answer = await attempt(() => call("GET", `/sandboxes/${id}/logs`));
    if (!answer) return;
    const lines = (answer.logs || []).map((l) => `${when(l.timestamp)}  ${l.line}`);
    pre.textContent = lines.length ? lines.join("\n") : "No log lines yet.";
  };
  await refresh();
  return section("Logs", pre, el("button", { class: "ghost", onclick: refresh }, "Refresh"));
}

export async function renderSandbox(main, id) {
  main.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  const info = await attempt(() => call("GET", `/sandboxes/${id}`));
  if (!info) {
    main.replaceChildren(el("p", {}, el("a", { href: "#/" }, "← Sandboxes")));
    return;
  }
  const sections = await Promise.all([terminalSection(id), processesSection(id), filesSection(id),
    logsSection(id)]);
  main.replaceChildren(
    el("p", {}, el("a", { href: "#/" }, "← Sandboxes")),
    el("div", { class: "bar" }, el("h1", { class: "mono title" }, id),
      el("span", { class: `state ${info.state}` }, info.state),
      el("span", { class: "muted" }, `${info.alias || info.templateID} · ${info.cpuCount} CPU · ${info.memoryMB} MiB`)),
    el("div", { class: "grid" }, ...sections));
}
