// Settings: the daemon's version and health, the team's limits (its quota;
// 0 or absent is no limit) and who this session is.
import { call, currentSession, request } from "./api.js";
import { el, showError } from "./dom.js";

async function health() {
  try {
    const response = await request("GET", "/health");
    return response.ok ? "healthy" : `answered ${response.status}`;
  } catch (error) {
    return `not answering: ${error.message}`;
  }
}

function limit(value, unit = "") {
  return value ? `${value}${unit}` : "no limit";
}

function list(pairs) {
  return el("dl", { class: "facts" }, ...pairs.flatMap(([term, value]) =>
    [el("dt", {}, term), el("dd", {}, value)]));
}

export async function renderSettings(main) {
  main.replaceChildren(el("p", { class: "muted" }, "Loading…"));
  const session = currentSession();
  let version = {};
  let quota = {};
  try {
    [version, quota] = await Promise.all([call("GET", "/abx/v1/version"),
      call("GET", `/abx/v1/teams/${encodeURIComponent(session.team)}/quota`)]);
    showError(null);
  } catch (error) {
    showError(error);
  }
  const state = await health();
  main.replaceChildren(
    el("div", { class: "bar" }, el("h1", {}, "Settings")),
    el("div", { class: "grid", id: "settings" },
      el("section", { class: "card" }, el("h2", {}, "Daemon"), list([
        ["Version", version.version || "–"],
        ["Commit", el("span", { class: "mono" }, version.commit || "–")],
        ["Health", el("span", { id: "health", class: state === "healthy" ? "ok" : "bad" }, state)],
        ["Address", location.origin],
      ])),
      el("section", { class: "card" }, el("h2", {}, `Limits of team ${session.team}`), list([
        ["Sandboxes at once", limit(quota.maxSandboxes)],
        ["Creates per minute", limit(quota.createsPerMinute)],
        ["Memory in all", limit(quota.maxMemoryMB, " MiB")],
        ["Disk in all", limit(quota.maxDiskMB, " MiB")],
        ["Longest timeout", limit(quota.maxTimeoutSec, " s")],
      ]), el("p", { class: "muted" }, "An admin sets these with ", el("code", {}, "abx quota set"), ".")),
      el("section", { class: "card" }, el("h2", {}, "This session"), list([
        ["Team", session.team],
        ["Role", session.admin ? "admin" : "member"],
        ["Key", el("span", { class: "mono" }, session.keyId || "–")],
        ["Lasts", "12 h from login, or until Log out"],
      ]))));
}
