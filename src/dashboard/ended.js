// The team's sandboxes that ended while their flight record is kept
// (GET /abx/v1/sandboxes/ended: events.retentionHours, a day by default):
// when they started and ended, why, and which key killed them. Each opens its
// read-only page: its timeline, no terminal or controls (sandbox.js).
import { call } from "./api.js";
import { el, showError, when } from "./dom.js";

// The switch between the running sandboxes (#/) and the ended ones (#/ended).
export function sandboxTabs(current) {
  const tab = (name, href, text) => el("a", { href, id: `tab-${name}`,
    "aria-current": current === name ? "page" : null }, text);
  return el("nav", { class: "tabs", "aria-label": "Which sandboxes" },
    tab("running", "#/", "Running"), tab("ended", "#/ended", "Ended"));
}

// "killed by key ops (key-1a2b…)": the `ended` event's why and who.
export function endText(why, keyName, key) {
  if (!why) return "no end recorded (the daemon stopped before it could record one)";
  const who = keyName ? `${keyName} (${key})` : key;
  return who ? `${why} by key ${who}` : why;
}

function day(text) {
  const date = new Date(text);
  if (!text || Number.isNaN(date.getTime())) return "–";
  return `${date.toLocaleDateString()} ${when(text)}`;
}

function rowElement(s) {
  return el("tr", { "data-id": s.sandboxID },
    el("td", {}, el("a", { href: `#/sandbox/${s.sandboxID}`, class: "mono" }, s.sandboxID)),
    el("td", {}, s.alias || s.templateID || "–"),
    el("td", { title: s.startedAt || "", class: "nowrap" }, day(s.startedAt)),
    el("td", { title: s.endedAt || "", class: "nowrap" }, day(s.endedAt)),
    el("td", { class: "why" }, endText(s.why, s.keyName, s.key)));
}

function matches(s, filter) {
  if (!filter) return true;
  const text = [s.sandboxID, s.templateID, s.alias, s.why, s.key, s.keyName].join(" ").toLowerCase();
  return filter.toLowerCase().split(/\s+/).every((word) => text.includes(word));
}

export async function renderEnded(main) {
  let list = [];
  const body = el("tbody");
  const count = el("span", { class: "muted", id: "ended-count" });
  const filter = el("input", { id: "ended-filter", type: "search",
    placeholder: "Filter by id, template, why, key", oninput: () => show() });
  const table = el("table", { id: "ended-sandboxes" }, el("thead", {}, el("tr", {},
    ...["ID", "Template", "Started", "Ended", "Why"].map((h) => el("th", {}, h)))), body);
  const empty = el("div", { class: "empty", id: "ended-empty", hidden: true },
    el("p", {}, "No sandbox of this team ended within the time their records are kept."));
  let truncated = false;
  function show() {
    const kept = list.filter((s) => matches(s, filter.value.trim()));
    body.replaceChildren(...kept.map(rowElement));
    count.textContent = `${list.length}${truncated ? "+" : ""} ended` +
      (filter.value.trim() ? `, ${kept.length} shown` : "");
    table.hidden = !list.length;
    empty.hidden = list.length !== 0;
  }
  async function refresh() {
    try {
      const answer = await call("GET", "/abx/v1/sandboxes/ended");
      list = answer.sandboxes || [];
      truncated = Boolean(answer.truncated);
      showError(null);
    } catch (error) {
      showError(error);
    }
    show();
  }
  main.replaceChildren(
    el("div", { class: "bar" }, el("h1", {}, "Sandboxes"), sandboxTabs("ended"), count),
    el("p", { class: "muted" }, "Sandboxes that ended lately, kept as long as their records " +
      "(a day unless the operator set events.retentionHours). Open one to read its timeline."),
    el("div", { class: "bar" }, filter,
      el("button", { class: "ghost", id: "ended-refresh", onclick: refresh }, "Refresh")),
    el("div", { class: "card flush" }, table, empty));
  await refresh();
}
