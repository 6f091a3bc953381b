// Keys and usage (admins): every API key (ids, never keys), create one (the
// key is shown once), revoke; and each team's use per UTC day over the last
// week (GET /abx/v1/usage?since=DAY sums from that day on: a day's own use is
// the difference of two such sums).
import { call, currentSession, request } from "./api.js";
import { bytes, el, showError, when } from "./dom.js";

const kDays = 7;

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

function day(offset) {
  return new Date(Date.now() - offset * 86400000).toISOString().slice(0, 10);
}

function keysTable() {
  const body = el("tbody");
  const refresh = async () => {
    const answer = await attempt(() => call("GET", "/abx/v1/keys"));
    if (!answer) return;
    body.replaceChildren(...(answer.keys || []).map((key) => el("tr", { "data-id": key.id },
      el("td", { class: "mono" }, key.id),
      el("td", {}, key.name || el("span", { class: "muted" }, "–")),
      el("td", {}, key.team),
      el("td", {}, key.admin ? "admin" : ""),
      el("td", { class: "nowrap" }, key.createdMs ? when(new Date(key.createdMs).toISOString()) : "–"),
      el("td", { class: "actions" }, el("button", { class: "danger", "data-action": "revoke",
        onclick: async () => {
          await attempt(() => request("DELETE", `/abx/v1/keys/${encodeURIComponent(key.id)}`));
          refresh();
        } }, "Revoke")))));
  };
  refresh();
  return { refresh, table: el("table", { id: "keys" }, el("thead", {}, el("tr", {},
    ...["ID", "Name", "Team", "Role", "Created", ""].map((h) => el("th", {}, h)))), body) };
}

function createKeyForm(onCreated) {
  const team = el("input", { id: "key-team", value: "default", required: true, size: 14 });
  const name = el("input", { id: "key-name", placeholder: "ci, alice…", size: 16 });
  const admin = el("input", { id: "key-admin", type: "checkbox" });
  const shown = el("p", { id: "new-key", class: "new-key", hidden: true });
  const form = el("form", { class: "create", onsubmit: async (event) => {
    event.preventDefault();
    const made = await attempt(() => call("POST", "/abx/v1/keys",
      { json: { team: team.value.trim(), name: name.value.trim(), admin: admin.checked } }));
    if (!made) return;
    shown.replaceChildren("New key for team ", el("strong", {}, made.team), " (shown once, copy it now): ",
      el("code", { class: "secret" }, made.key));
    shown.hidden = false;
    name.value = "";
    onCreated();
  } },
  el("label", {}, "Team ", team),
  el("label", {}, "Name ", name),
  el("label", { class: "inline" }, admin, " admin"),
  el("button", { type: "submit", id: "create-key" }, "Create key"));
  return el("div", {}, form, shown);
}

// Per team: [today-6 … today] sandbox-seconds and creates, and the week's sums.
async function usageByDay() {
  const since = [];
  for (let offset = kDays - 1; offset >= 0; offset -= 1) since.push(day(offset));
  const sums = await Promise.all(since.map((d) => call("GET", `/abx/v1/usage?since=${d}`)));
  const teams = new Map();
  sums.forEach((answer, i) => {
    for (const t of answer.teams || []) {
      if (!teams.has(t.team)) teams.set(t.team, { cumulative: new Array(kDays).fill(null), week: null });
      teams.get(t.team).cumulative[i] = t;
      if (i === 0) teams.get(t.team).week = t;
    }
  });
  const out = [];
  for (const [team, { cumulative, week }] of teams) {
    const seconds = cumulative.map((t, i) => {
      const next = cumulative[i + 1];
      return (t ? t.sandboxSeconds : 0) - (next ? next.sandboxSeconds : 0);
    });
    out.push({ team, seconds, week: week || cumulative.find((t) => t) });
  }
  return { days: since, teams: out.sort((a, b) => a.team.localeCompare(b.team)) };
}

function minutes(seconds) {
  return seconds >= 3600 ? `${(seconds / 3600).toFixed(1)} h` : `${Math.round(seconds / 60)} min`;
}

function usageSection() {
  const holder = el("div", { id: "usage" }, el("p", { class: "muted" }, "Loading…"));
  const refresh = async () => {
    const usage = await attempt(usageByDay);
    if (!usage) return;
    if (!usage.teams.length) {
      holder.replaceChildren(el("p", { class: "muted" },
        "No use recorded this week: create a sandbox and its seconds count here."));
      return;
    }
    const peak = Math.max(1, ...usage.teams.flatMap((t) => t.seconds));
    holder.replaceChildren(el("table", { id: "usage-table" },
      el("thead", {}, el("tr", {}, el("th", {}, "Team"),
        ...usage.days.map((d) => el("th", { title: d }, d.slice(5))),
        el("th", {}, "Week"), el("th", {}, "Created"), el("th", {}, "Peak memory"),
        el("th", {}, "Files in / out"))),
      el("tbody", {}, ...usage.teams.map((t) => el("tr", { "data-team": t.team },
        el("td", {}, t.team),
        ...t.seconds.map((s) => el("td", { class: "num bar-cell", title: `${Math.round(s)} sandbox-seconds` },
          el("span", { class: "bar-fill", style: `width: ${Math.round((s / peak) * 100)}%` }),
          el("span", { class: "bar-text" }, s > 0 ? minutes(s) : "–"))),
        el("td", { class: "num" }, minutes(t.week.sandboxSeconds)),
        el("td", { class: "num" }, String(t.week.sandboxesCreated)),
        el("td", { class: "num" }, bytes(t.week.peakMemoryBytes)),
        el("td", { class: "num" }, `${bytes(t.week.bytesIn)} / ${bytes(t.week.bytesOut)}`))))));
  };
  refresh();
  return { refresh, holder };
}

export function renderKeys(main) {
  if (!currentSession().admin) {
    main.replaceChildren(el("div", { class: "empty" }, el("p", {}, "Keys and usage are for admins."),
      el("p", { class: "muted" }, "Log in with an admin key: the daemon's own (its ", el("code", {}, "api_key"),
        " file) or one from ", el("code", {}, "abx keys create --admin"), ".")));
    showError(new Error("keys and usage need an admin key: log out and log in with one"));
    return;
  }
  const usage = usageSection();
  const keys = keysTable();
  main.replaceChildren(
    el("div", { class: "bar" }, el("h1", {}, "Keys")),
    createKeyForm(keys.refresh),
    el("div", { class: "card flush" }, keys.table),
    el("div", { class: "bar spaced" }, el("h1", {}, "Usage"),
      el("span", { class: "muted" }, "sandbox time per UTC day, last 7 days"),
      el("button", { class: "ghost", onclick: usage.refresh }, "Refresh")),
    el("div", { class: "card flush" }, usage.holder));
}
