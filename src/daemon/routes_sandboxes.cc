// Control plane: E2B's /sandboxes resource (spec/e2b-protocol.md §5, shapes §6).
#include <algorithm>

#include "common/base64.h"
#include "common/json_text.h"
#include "daemon/codec.h"
#include "daemon/control_requests.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

std::string time_text(int64_t unix_ms) {
  return codec::rfc3339(unix_ms / 1000, (unix_ms % 1000) * 1000000, true);
}

json sandbox_json(const SandboxRow& row) {
  json out = {{"templateID", row.template_id}, {"sandboxID", row.id}, {"clientID", kClientId},
              {"envdVersion", kEnvdVersion},   {"alias", row.alias},  {"domain", nullptr}};
  if (!row.access_token.empty()) out["envdAccessToken"] = row.access_token;
  out["trafficAccessToken"] =
      row.traffic_access_token.empty() ? json() : json(row.traffic_access_token);
  return out;
}

// E2B's SandboxVolumeMount list.
json volume_mounts_json(const SandboxRow& row) {
  json out = json::array();
  for (const auto& mount : row.volume_mounts)
    out.push_back({{"name", mount.name}, {"path", mount.path}});
  return out;
}

json listed_json(const SandboxRow& row) {
  return {{"templateID", row.template_id},
          {"alias", row.alias},
          {"sandboxID", row.id},
          {"clientID", kClientId},
          {"startedAt", time_text(row.started_at_ms)},
          {"endAt", time_text(row.end_at_ms)},
          {"cpuCount", row.cpu_count},
          {"memoryMB", row.memory_mb},
          {"diskSizeMB", row.disk_size_mb},
          {"state", row.paused ? "paused" : "running"},
          {"envdVersion", kEnvdVersion},
          {"metadata", row.metadata},
          {"volumeMounts", volume_mounts_json(row)}};
}

// What was asked for (never a password or CA), as E2B's SandboxNetworkConfig.
json network_json(const SandboxRow& row) {
  auto settings = parse_network(row.network, row.allow_internet_access);
  json out = settings ? settings->shown() : json::object();
  out["allowPublicTraffic"] = row.traffic_access_token.empty();
  return out;
}

json listed_with_network(const SandboxRow& row) {
  json out = listed_json(row);
  out["allowInternetAccess"] = row.allow_internet_access;
  out["network"] = network_json(row);
  return out;
}

json detail_json(const SandboxRow& row) {
  json out = listed_with_network(row);
  if (!row.access_token.empty()) out["envdAccessToken"] = row.access_token;
  out["trafficAccessToken"] =
      row.traffic_access_token.empty() ? json() : json(row.traffic_access_token);
  out["domain"] = nullptr;
  out["lifecycle"] = {{"autoResume", row.auto_resume},
                      {"onTimeout", row.auto_pause ? "pause" : "kill"}};
  if (row.output_buffer_bytes) out["outputBufferBytes"] = row.output_buffer_bytes;
  return out;
}

bool matches(const SandboxRow& row, const ListSandboxesQuery& query) {
  for (const auto& [key, value] : query.metadata) {
    const auto it = row.metadata.find(key);
    if (it == row.metadata.end() || it->second != value) return false;
  }
  if (query.started_after_ms && row.started_at_ms < *query.started_after_ms) return false;
  if (query.started_before_ms && row.started_at_ms > *query.started_before_ms) return false;
  if (!query.template_name.empty() && query.template_name != row.template_id &&
      query.template_name != row.alias) {
    return false;
  }
  const std::string state = row.paused ? "paused" : "running";
  return query.states.empty() ||
         std::find(query.states.begin(), query.states.end(), state) != query.states.end();
}

Task<void> list(ControlCall& call, Exchange& exchange, bool paginated) {
  auto query = parse_list_query(exchange.request().query);
  if (!query) co_return co_await respond_error(exchange, query.error());
  std::vector<SandboxRow> rows = call.service.list_for(call.caller);
  std::erase_if(rows, [&](const SandboxRow& row) { return !matches(row, *query); });
  // E2B lists newest first unless asked for `order=asc`.
  std::sort(rows.begin(), rows.end(), [&](const SandboxRow& a, const SandboxRow& b) {
    return query->newest_first ? std::tie(b.started_at_ms, b.id) < std::tie(a.started_at_ms, a.id)
                               : std::tie(a.started_at_ms, a.id) < std::tie(b.started_at_ms, b.id);
  });
  auto first = rows.begin();
  if (paginated && !query->next_token.empty()) {
    first = std::find_if(rows.begin(), rows.end(),
                         [&](const SandboxRow& row) { return row.id == query->next_token; });
  }
  json out = json::array();
  http::Headers headers;
  for (auto it = first; it != rows.end(); ++it) {
    if (paginated && out.size() == query->limit) {
      headers.emplace_back("X-Next-Token", it->id);
      break;
    }
    out.push_back(listed_with_network(*it));
  }
  co_await respond_json(exchange, 200, out, std::move(headers));
}

Task<void> create(ControlCall& call, Exchange& exchange, bool always_secure) {
  auto body = co_await read_json_body(exchange, 1 << 20);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = parse_create_sandbox(*body, call.service.host_cores());
  if (!request) co_return co_await respond_error(exchange, request.error());
  request->secure = request->secure || always_secure;
  auto created = co_await call.service.create(std::move(*request), call.caller);
  if (!created) co_return co_await respond_error(exchange, created.error());
  co_await respond_json(exchange, 201, sandbox_json(*created));
}

bool body_has_timeout(const std::string& body) {
  auto doc = json_text::parse_object(body.empty() ? std::string_view("{}") : body);
  return !doc || doc->contains("timeout");
}

Error paused_error(const std::string& id) {
  return Error::with_message(
      "sandbox " + id + " is paused: resume it first (Sandbox.connect, or POST /sandboxes/" + id +
          "/connect)",
      EBUSY);
}

// The JSON of a resume request: {"timeout": s} (default 300), autoPause ignored.
Result<int> resume_timeout(const std::string& body) {
  if (!body_has_timeout(body)) return kDefaultTimeoutSec;
  return parse_timeout_body(body);
}

Task<void> set_timeout(ControlCall& call, Exchange& exchange, bool is_connect) {
  auto id = id_param(call);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  // v2 connect may omit the timeout: then the end time stays as it is.
  const bool keep_end = is_connect && !body_has_timeout(*body);
  auto seconds = keep_end ? Result<int>(0) : parse_timeout_body(*body);
  if (!seconds) co_return co_await respond_error(exchange, seconds.error());
  auto live = call.service.find_for(call.caller, *id);
  // A filesystem-only paused sandbox: connect cold boots it; /timeout waits for that.
  if (!live && call.service.dormant_for(call.caller, *id)) {
    if (!is_connect) co_return co_await respond_error(exchange, paused_error(*id));
    const int resume_for = keep_end || *seconds <= 0 ? kDefaultTimeoutSec : *seconds;
    auto booted = co_await call.service.cold_boot(*id, resume_for);
    if (!booted) co_return co_await respond_error(exchange, booted.error());
    co_return co_await respond_json(exchange, 201, sandbox_json(*booted));
  }
  if (!live) co_return co_await respond_error(exchange, sandbox_not_found(*id));
  // connect resumes a paused sandbox (201), for `timeout` or the default.
  if (is_connect && live->snapshot().paused) {
    const int resume_for = keep_end || *seconds <= 0 ? kDefaultTimeoutSec : *seconds;
    auto resumed = co_await call.service.resume(live, resume_for);
    if (!resumed) co_return co_await respond_error(exchange, resumed.error());
    if (*resumed) co_return co_await respond_json(exchange, 201, sandbox_json(live->snapshot()));
  }
  auto row = call.service.set_timeout(*id, *seconds, is_connect);
  if (!row) co_return co_await respond_error(exchange, row.error());
  if (is_connect) co_return co_await respond_json(exchange, 200, sandbox_json(*row));
  co_await exchange.respond(204, "", "");
}

// E2B's SandboxLogs: plain lines and structured entries, the same events.
json logs_json(const std::vector<LogEntry>& entries) {
  json lines = json::array();
  json structured = json::array();
  for (const LogEntry& entry : entries) {
    const std::string at = time_text(entry.at_ms);
    lines.push_back({{"timestamp", at}, {"line", entry.message}});
    structured.push_back({{"timestamp", at},
                          {"level", entry.level},
                          {"message", entry.message},
                          {"fields", json::object()}});
  }
  return {{"logs", lines}, {"logEntries", structured}};
}

json sample_json(const MetricSample& sample, const SandboxRow& row) {
  return {{"timestamp", time_text(sample.at_ms)},
          {"timestampUnix", sample.at_ms / 1000},
          {"cpuCount", row.cpu_count},
          {"cpuUsedPct", sample.cpu_used_pct},
          {"memUsed", sample.memory_bytes},
          {"memTotal", uint64_t{row.memory_mb} << 20},
          {"memCache", 0},
          {"diskUsed", sample.disk_used_bytes},
          {"diskTotal", uint64_t{row.disk_size_mb} << 20},
          // Ours, beyond E2B's SandboxMetric: bytes received and sent so far.
          {"netRxBytes", sample.net_rx_bytes},
          {"netTxBytes", sample.net_tx_bytes}};
}

// The newest sample; a sandbox the sampler has not reached yet is read now,
// so a new sandbox has metrics at once.
MetricSample latest_sample(LiveSandbox& live) {
  if (auto sample = live.metrics->latest()) return *sample;
  live.metrics->record(now_ms(), live.sandbox->usage(), live.snapshot().cpu_count);
  return live.metrics->latest().value_or(MetricSample{});
}

// GET /sandboxes/{id}/metrics?start=&end= → [SandboxMetric], oldest first.
json metrics_between(LiveSandbox& live, const MetricsRange& range) {
  (void)latest_sample(live);
  const SandboxRow row = live.snapshot();
  json out = json::array();
  const auto samples = live.metrics->between(range.start_s, range.end_s);
  for (const MetricSample& sample : samples) out.push_back(sample_json(sample, row));
  // A range reaching now ends with a reading of now (kept out of the
  // history, which stays at the sampler's pace): a caller asking right after
  // a change sees it. Its CPU share is the last sample's; one taken under
  // 200 ms ago is brought up to date instead of followed by a near-twin.
  const int64_t now = now_ms();
  if (range.end_s >= now / 1000 && !samples.empty()) {
    const runtime::Sandbox::Usage usage = live.sandbox->usage();
    MetricSample current = samples.back();
    current.memory_bytes = usage.memory_bytes;
    current.disk_used_bytes = usage.disk_used_bytes;
    current.net_rx_bytes = usage.net_rx_bytes;
    current.net_tx_bytes = usage.net_tx_bytes;
    if (now - samples.back().at_ms > 200) {
      current.at_ms = now;
      out.push_back(sample_json(current, row));
    } else {
      out.back() = sample_json(current, row);
    }
  }
  return out;
}

// GET /sandboxes/metrics?sandbox_ids=a,b → {"sandboxes": {id: SandboxMetric}}
json metrics_of_many(Service& service, const Caller& caller, const std::string& ids) {
  json out = json::object();
  size_t start = 0;
  while (start <= ids.size()) {
    const size_t comma = ids.find(',', start);
    const std::string id = ids.substr(start, comma == std::string::npos ? comma : comma - start);
    if (auto live = service.find_for(caller, id)) out[id] = sandbox_metric(*live);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {{"sandboxes", out}};
}

}  // namespace

json sandbox_listing(const SandboxRow& row) { return listed_json(row); }

json sandbox_created(const SandboxRow& row) { return sandbox_json(row); }

Task<void> sandboxes_list(ControlCall& call, Exchange& exchange) {
  co_await list(call, exchange, false);
}

Task<void> sandboxes_list_v2(ControlCall& call, Exchange& exchange) {
  co_await list(call, exchange, true);
}

Task<void> sandboxes_create(ControlCall& call, Exchange& exchange) {
  co_await create(call, exchange, false);
}

Task<void> sandboxes_create_v2(ControlCall& call, Exchange& exchange) {
  co_await create(call, exchange, true);
}

Task<void> sandboxes_metrics(ControlCall& call, Exchange& exchange) {
  const auto& query = exchange.request().query;
  const auto ids = query.find("sandbox_ids");
  const json body =
      metrics_of_many(call.service, call.caller, ids == query.end() ? "" : ids->second);
  co_await respond_json(exchange, 200, body);
}

Task<void> sandbox_get(ControlCall& call, Exchange& exchange) {
  if (auto id = id_param(call))
    if (auto row = call.service.dormant_for(call.caller, *id))
      co_return co_await respond_json(exchange, 200, detail_json(*row));
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  co_await respond_json(exchange, 200, detail_json((*live)->snapshot()));
}

Task<void> sandbox_kill(ControlCall& call, Exchange& exchange) {
  if (auto id = id_param(call); id && call.service.dormant_for(call.caller, *id)) {
    if (!co_await call.service.kill(*id, "killed", call.caller.key_id))
      co_return co_await respond_error(exchange, sandbox_not_found(*id));
    co_return co_await exchange.respond(204, "", "");
  }
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  const std::string id = (*live)->snapshot().id;
  if (!co_await call.service.kill(id, "killed", call.caller.key_id))
    co_return co_await respond_error(exchange, sandbox_not_found(id));
  co_await exchange.respond(204, "", "");
}

Task<void> sandbox_pause(ControlCall& call, Exchange& exchange) {
  const bool dormant = [&] {
    auto id = id_param(call);
    return id && call.service.dormant_for(call.caller, *id);
  }();
  auto live = dormant ? Result<std::shared_ptr<LiveSandbox>>(nullptr) : sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto keep_memory = parse_pause_memory(*body);
  if (!keep_memory) co_return co_await respond_error(exchange, keep_memory.error());
  Result<bool> paused = false;
  // if/else, not ?: g++ 12 runs both co_awaits of a conditional expression.
  if (!dormant && *keep_memory) paused = co_await call.service.pause(*live);
  if (!dormant && !*keep_memory) paused = co_await call.service.pause_fs_only(*live);
  if (!paused) co_return co_await respond_error(exchange, paused.error());
  if (!*paused) {
    co_return co_await respond_error(
        exchange,
        Error::with_message("sandbox " + call.params.at("id") + " is already paused", EEXIST));
  }
  co_await exchange.respond(204, "", "");
}

Task<void> sandbox_resume(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto seconds = resume_timeout(*body);
  if (!seconds) co_return co_await respond_error(exchange, seconds.error());
  if (auto id = id_param(call); id && call.service.dormant_for(call.caller, *id)) {
    auto booted = co_await call.service.cold_boot(*id, *seconds);
    if (!booted) co_return co_await respond_error(exchange, booted.error());
    co_return co_await respond_json(exchange, 201, sandbox_json(*booted));
  }
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  auto resumed = co_await call.service.resume(*live, *seconds);
  if (!resumed) co_return co_await respond_error(exchange, resumed.error());
  if (!*resumed) {
    co_return co_await respond_error(
        exchange,
        Error::with_message("sandbox " + call.params.at("id") + " is already running", EEXIST));
  }
  co_await respond_json(exchange, 201, sandbox_json((*live)->snapshot()));
}

Task<void> sandbox_set_timeout(ControlCall& call, Exchange& exchange) {
  co_await set_timeout(call, exchange, false);
}

Task<void> sandbox_connect(ControlCall& call, Exchange& exchange) {
  co_await set_timeout(call, exchange, true);
}

Task<void> sandbox_network_update(ControlCall& call, Exchange& exchange) {
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  if ((*live)->snapshot().paused)
    co_return co_await respond_error(exchange, paused_error((*live)->snapshot().id));
  auto body = co_await read_json_body(exchange, 1 << 20);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto row = co_await call.service.update_network(*live, std::move(*body));
  if (!row) co_return co_await respond_error(exchange, row.error());
  co_await exchange.respond(204, "", "");
}

Task<void> sandbox_metrics(ControlCall& call, Exchange& exchange) {
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  auto range = parse_metrics_range(exchange.request().query);
  if (!range) co_return co_await respond_error(exchange, range.error());
  co_await respond_json(exchange, 200, metrics_between(**live, *range));
}

// A sandbox that ended lately still answers with its log (as E2B's does).
Task<void> sandbox_logs(ControlCall& call, Exchange& exchange) {
  auto query = parse_logs_query(exchange.request().query);
  if (!query) co_return co_await respond_error(exchange, query.error());
  std::shared_ptr<const SandboxLog> log;
  auto live = sandbox_of(call);
  if (live) {
    log = (*live)->log;
  } else if (auto id = id_param(call)) {
    log = call.service.ended_log(call.caller, *id);
  }
  if (!log) co_return co_await respond_error(exchange, live.error());
  co_await respond_json(exchange, 200, logs_json(log->since(query->start_ms, query->limit)));
}

namespace {

nlohmann::json command_processes_json(const sandbox_ops::CommandProcesses& groups) {
  nlohmann::json commands = nlohmann::json::array();
  for (const auto& [pid, entries] : groups) {
    nlohmann::json processes = nlohmann::json::array();
    for (const auto& entry : entries)
      processes.push_back({{"pid", entry.pid}, {"ppid", entry.ppid}, {"command", entry.command}});
    commands.push_back({{"pid", pid}, {"processes", std::move(processes)}});
  }
  return {{"commands", std::move(commands)}};
}

}  // namespace

// Each API command and what it started, for `abx ps`: {"commands": [{"pid",
// "processes": [{"pid", "ppid", "command"}]}]}, pids as the sandbox sees them.
Task<void> sandbox_processes(ControlCall& call, Exchange& exchange) {
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  const auto groups = co_await sandbox_ops::command_processes(call.service, *(*live)->sandbox);
  co_await respond_json(exchange, 200, command_processes_json(groups));
}

namespace {

nlohmann::json output_json(int pid, uint64_t offset, const runtime::OutputSlice& slice) {
  nlohmann::json chunks = nlohmann::json::array();
  uint64_t next = std::min(std::max(offset, slice.start), slice.end);
  for (const auto& chunk : slice.chunks) {
    const bool out = chunk.stream == runtime::OutputStream::kStdout;
    chunks.push_back({{"stream", out ? "stdout" : "stderr"},
                      {"offset", chunk.offset},
                      {"data", base64::encode(chunk.bytes)}});
    next = chunk.offset + chunk.bytes.size();
  }
  nlohmann::json body = {{"pid", pid},   {"start", slice.start}, {"end", slice.end},
                         {"next", next}, {"ended", slice.ended}, {"chunks", std::move(chunks)}};
  if (slice.ended) {
    const runtime::ExitInfo exit = runtime::decode_wait_status(slice.wait_status);
    body["exitCode"] = exit.exit_code;
    body["status"] = exit.status;
  }
  return body;
}

}  // namespace

// A command's output as the sandbox's agent keeps it, from `offset` on:
// for `abx logs ID PID`, also after a daemon restart or the command's end.
Task<void> process_output(ControlCall& call, Exchange& exchange) {
  auto query = parse_output_query(call.params.at("pid"), exchange.request().query);
  if (!query) co_return co_await respond_error(exchange, query.error());
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  const std::string& id = call.params.at("id");
  auto slice = co_await sandbox_ops::read_output(call.service, *(*live)->sandbox, query->pid,
                                                 query->offset, query->limit);
  if (!slice && slice.error().errnum == ENOENT)
    co_return co_await respond_error(
        exchange, Error::with_message(
                      "pid " + std::to_string(query->pid) + " is no command of sandbox " + id +
                          " whose output is kept: `abx ps " + id + "` lists its commands",
                      ENOENT));
  if (!slice) co_return co_await respond_error(exchange, slice.error());
  co_await respond_json(exchange, 200, output_json(query->pid, query->offset, *slice));
}

nlohmann::json sandbox_metric(LiveSandbox& live) {
  return sample_json(latest_sample(live), live.snapshot());
}

}  // namespace abx::daemon::routes
