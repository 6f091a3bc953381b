// Our API: a team's quota (/abx/v1/teams/{team}/quota) and usage
// (/abx/v1/usage). A key reads its own team's; an admin key any team's.
#include "common/json_text.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

// The team a request names, if the caller may see it (else "not found", as
// for a team that does not exist: other teams are not revealed).
Result<std::string> visible_team(const ControlCall& call, const std::string& team) {
  if (Status s = check_team_name(team); !s) return s.error();
  if (team != call.caller.team && !call.caller.admin) {
    return Error::with_message("team " + team + " not found", ENOENT);
  }
  return team;
}

json quota_body(const std::string& team, const TeamQuota& quota) {
  json out = quota_to_json(quota);
  out["team"] = team;
  return out;
}

json usage_json(const UsageTotals& totals) {
  return {{"team", totals.team},
          {"sandboxSeconds", totals.sandbox_seconds},
          {"peakMemoryBytes", totals.peak_memory_bytes},
          {"bytesIn", totals.bytes_in},
          {"bytesOut", totals.bytes_out},
          {"sandboxesCreated", totals.sandboxes_created}};
}

json usage_report_json(const std::vector<UsageTotals>& report, const std::string& since) {
  json teams = json::array();
  for (const UsageTotals& totals : report) teams.push_back(usage_json(totals));
  return {{"since", since}, {"teams", teams}};
}

std::string query_value(const http::Request& request, const std::string& name) {
  const auto it = request.query.find(name);
  return it == request.query.end() ? std::string() : it->second;
}

}  // namespace

Task<void> team_quota_get(ControlCall& call, Exchange& exchange) {
  auto team = visible_team(call, call.params.at("team"));
  if (!team) co_return co_await respond_error(exchange, team.error());
  co_await respond_json(exchange, 200, quota_body(*team, call.service.quotas().quota_for(*team)));
}

Task<void> team_quota_set(ControlCall& call, Exchange& exchange) {
  auto team = visible_team(call, call.params.at("team"));
  if (!team) co_return co_await respond_error(exchange, team.error());
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto doc = json_text::parse(*body);
  if (!doc) co_return co_await respond_error(exchange, doc.error());
  // Fields left out keep their current value.
  auto quota = quota_from_json(*doc, call.service.quotas().quota_for(*team));
  if (!quota) co_return co_await respond_error(exchange, quota.error());
  const Status saved = call.service.quotas().set_team_quota(*team, *quota);
  if (!saved) co_return co_await respond_error(exchange, saved.error());
  co_await respond_json(exchange, 200, quota_body(*team, *quota));
}

Task<void> usage_get(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  std::optional<std::string> team;
  if (const std::string asked = query_value(request, "team"); !asked.empty()) {
    auto visible = visible_team(call, asked);
    if (!visible) co_return co_await respond_error(exchange, visible.error());
    team = *visible;
  } else if (!call.caller.admin) {
    team = call.caller.team;
  }
  const std::string since = query_value(request, "since");
  if (!since.empty() && !is_utc_day(since)) {
    co_return co_await respond_error(
        exchange, Error::with_message("since: use a date as YYYY-MM-DD (UTC)", kErrBadInput));
  }
  co_await respond_json(exchange, 200,
                        usage_report_json(call.service.usage().report(team, since), since));
}

}  // namespace abx::daemon::routes
