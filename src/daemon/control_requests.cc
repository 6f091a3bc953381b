#include "daemon/control_requests.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>

#include "common/json_text.h"
#include "common/rfc3339.h"
#include "daemon/url.h"

namespace abx::daemon {
namespace {

using nlohmann::json;

Error field_error(const std::string& field, const std::string& what) {
  return Error::with_message(field + ": " + what, kErrBadInput);
}

Result<int> timeout_field(const json& doc, int64_t low) {
  const auto& value = doc.at("timeout");
  if (!value.is_number_integer() || value.get<int64_t>() < low ||
      value.get<int64_t>() > kMaxTimeoutSec) {
    return field_error("timeout", "must be an integer number of seconds from " +
                                      std::to_string(low) + " to " +
                                      std::to_string(kMaxTimeoutSec));
  }
  return static_cast<int>(value.get<int64_t>());
}

Result<std::map<std::string, std::string>> string_map_field(const json& doc,
                                                            const std::string& field) {
  std::map<std::string, std::string> out;
  const auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_object()) return field_error(field, "must be an object of strings");
  for (const auto& [key, value] : it->items()) {
    if (!value.is_string()) return field_error(field + "." + key, "must be a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

Result<std::optional<uint32_t>> bounded_field(const json& doc, const std::string& field,
                                              int64_t low, int64_t high) {
  const auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return std::optional<uint32_t>{};
  if (!it->is_number_integer() || it->get<int64_t>() < low || it->get<int64_t>() > high) {
    return field_error(
        field, "must be an integer from " + std::to_string(low) + " to " + std::to_string(high));
  }
  return std::optional<uint32_t>(static_cast<uint32_t>(it->get<int64_t>()));
}

Result<bool> bool_field(const json& doc, const std::string& field, bool fallback) {
  const auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return field_error(field, "must be true or false");
  return it->get<bool>();
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find(sep, start);
    std::string part =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// autoPause, autoPauseMemory (false: the timeout's pause is filesystem-only,
// and a resume cold boots) and autoResume {enabled}.
Status parse_lifecycle(const json& d, CreateSandboxRequest* req) {
  auto pause = bool_field(d, "autoPause", false);
  if (!pause) return pause.error();
  req->auto_pause = *pause;
  auto memory = bool_field(d, "autoPauseMemory", true);
  if (!memory) return memory.error();
  req->auto_pause_memory = *memory;
  const auto resume = d.find("autoResume");
  if (resume == d.end() || resume->is_null()) return {};
  if (!resume->is_object())
    return field_error("autoResume", "must be an object: {\"enabled\": true}");
  auto enabled = bool_field(*resume, "enabled", false);
  if (!enabled) return enabled.error();
  req->auto_resume = *enabled;
  return {};
}

// volumeMounts: [{name, path}]: absolute paths, normalised, one volume per
// path, never "/" nor the kernel's trees.
Status parse_volume_mounts(const json& d, CreateSandboxRequest* req) {
  const auto it = d.find("volumeMounts");
  if (it == d.end() || it->is_null()) return {};
  if (!it->is_array()) return field_error("volumeMounts", "must be an array of {name, path}");
  if (it->size() > 16) return field_error("volumeMounts", "at most 16 volumes");
  for (const auto& m : *it) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("path") ||
        !m["path"].is_string())
      return field_error("volumeMounts", "each must be {\"name\": string, \"path\": string}");
    const std::string name = m["name"].get<std::string>();
    const std::string path = m["path"].get<std::string>();
    if (path.empty() || path.front() != '/' || path.size() > 1024 ||
        path.find('\0') != std::string::npos)
      return field_error("volumeMounts", "path of " + name + " must be absolute: " + path);
    std::string clean;
    for (const auto& part : split(path, '/')) {
      if (part == "." || part == "..")
        return field_error("volumeMounts", "path " + path + " must not hold '.' or '..'");
      clean += "/" + part;
    }
    if (clean.empty()) return field_error("volumeMounts", "a volume cannot be mounted on /");
    for (const char* kernel : {"/proc", "/sys", "/dev"})
      if (clean == kernel || clean.starts_with(std::string(kernel) + "/"))
        return field_error("volumeMounts", "a volume cannot be mounted under " +
                                               std::string(kernel) + ": " + clean);
    for (const auto& other : req->volume_mounts)
      if (other.path == clean) return field_error("volumeMounts", "two volumes at " + clean);
    req->volume_mounts.push_back({name, clean});
  }
  return {};
}

}  // namespace

Result<CreateSandboxRequest> parse_create_sandbox(const std::string& body, uint32_t host_cores) {
  auto doc = json_text::parse_object(body);
  if (!doc) return doc.error();
  CreateSandboxRequest req;
  const json& d = *doc;
  const auto tmpl = d.find("templateID");
  if (tmpl == d.end() || !tmpl->is_string() || tmpl->get<std::string>().empty()) {
    return field_error("templateID", "required string (e.g. \"base\")");
  }
  req.template_name = tmpl->get<std::string>();
  if (d.contains("timeout") && !d.at("timeout").is_null()) {
    auto timeout = timeout_field(d, 1);
    if (!timeout) return timeout.error();
    req.timeout_sec = *timeout;
  }
  auto metadata = string_map_field(d, "metadata");
  if (!metadata) return metadata.error();
  req.metadata = std::move(*metadata);
  auto envs = string_map_field(d, "envVars");
  if (!envs) return envs.error();
  req.env_vars = std::move(*envs);
  auto secure = bool_field(d, "secure", true);
  if (!secure) return secure.error();
  req.secure = *secure;
  if (const auto network = d.find("network"); network != d.end() && !network->is_null()) {
    if (!network->is_object()) return field_error("network", "must be an object");
    auto public_traffic = bool_field(*network, "allowPublicTraffic", true);
    if (!public_traffic) return public_traffic.error();
    req.allow_public_traffic = *public_traffic;
  }
  auto internet = bool_field(d, "allow_internet_access", true);
  if (!internet) return internet.error();
  req.allow_internet_access = *internet;
  auto network = parse_network(d.value("network", json()), *internet);
  if (!network) return network.error();
  if (Status s = check_new_rules(network->policy); !s) return s.error();
  req.network = std::move(*network);
  auto cpu = bounded_field(d, "cpuCount", 1, host_cores);
  if (!cpu) return cpu.error();
  req.cpu_count = *cpu;
  auto memory = bounded_field(d, "memoryMB", 64, 65536);
  if (!memory) return memory.error();
  req.memory_mb = *memory;
  auto disk = bounded_field(d, "diskSizeMB", 16, 65536);
  if (!disk) return disk.error();
  req.disk_size_mb = *disk;
  auto output_buffer = bounded_field(d, "outputBufferBytes", 4096, 64u << 20);
  if (!output_buffer) return output_buffer.error();
  req.output_buffer_bytes = *output_buffer;
  auto wait = bool_field(d, "waitForBuild", true);
  if (!wait) return wait.error();
  req.wait_for_build = *wait;
  auto lifecycle = parse_lifecycle(d, &req);
  if (!lifecycle) return lifecycle.error();
  if (Status s = parse_volume_mounts(d, &req); !s) return s.error();
  return req;
}

Result<int> parse_timeout_body(const std::string& body) {
  auto doc = json_text::parse_object(body);
  if (!doc) return doc.error();
  if (!doc->contains("timeout")) return field_error("timeout", "required integer (seconds)");
  return timeout_field(*doc, 0);
}

Result<bool> parse_pause_memory(const std::string& body) {
  auto doc = json_text::parse_object(body.empty() ? std::string_view("{}") : body);
  if (!doc) return doc.error();
  return bool_field(*doc, "memory", true);
}

Result<ForkRequest> parse_fork(const std::string& body) {
  auto doc = json_text::parse_object(body.empty() ? std::string_view("{}") : body);
  if (!doc) return doc.error();
  ForkRequest fork;
  if (doc->contains("timeout") && !(*doc)["timeout"].is_null()) {
    auto timeout = timeout_field(*doc, 1);
    if (!timeout) return timeout.error();
    fork.timeout_sec = *timeout;
  }
  if (const auto it = doc->find("count"); it != doc->end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 20)
      return field_error("count", "must be an integer from 1 to 20");
    fork.count = static_cast<int>(it->get<int64_t>());
  }
  return fork;
}

Result<ListSandboxesQuery> parse_list_query(const std::map<std::string, std::string>& query) {
  ListSandboxesQuery out;
  if (const auto it = query.find("metadata"); it != query.end()) {
    // Already percent-decoded once as a query value; pairs inside are encoded again.
    for (const auto& [key, value] : url::parse_query(it->second)) {
      if (key.empty()) return field_error("metadata", "expected key=value pairs joined by &");
      out.metadata[key] = value;
    }
  }
  if (const auto it = query.find("state"); it != query.end()) {
    for (const auto& state : split(it->second, ',')) {
      if (state != "running" && state != "paused") {
        return field_error("state", "must be running or paused (comma-joined)");
      }
      out.states.push_back(state);
    }
  }
  if (const auto it = query.find("limit"); it != query.end()) {
    size_t used = 0;
    long limit = -1;
    try {
      limit = std::stol(it->second, &used);
    } catch (const std::exception&) {
    }
    if (used != it->second.size() || limit < 1 || limit > 100) {
      return field_error("limit", "must be an integer from 1 to 100");
    }
    out.limit = static_cast<size_t>(limit);
  }
  if (const auto it = query.find("nextToken"); it != query.end()) out.next_token = it->second;
  if (const auto it = query.find("order"); it != query.end()) {
    if (it->second != "asc" && it->second != "desc")
      return field_error("order", "must be asc or desc");
    out.newest_first = it->second == "desc";
  }
  for (const auto& [key, bound] : {std::pair{"startedAfter", &out.started_after_ms},
                                   std::pair{"startedBefore", &out.started_before_ms}}) {
    const auto it = query.find(key);
    if (it == query.end()) continue;
    *bound = parse_rfc3339_ms(it->second);
    if (!*bound) {
      return field_error(key, "must be an RFC 3339 time such as 2026-12-01T10:00:00Z, not '" +
                                  it->second.substr(0, 64) + "'");
    }
  }
  if (const auto it = query.find("template"); it != query.end()) out.template_name = it->second;
  return out;
}

Result<MetricsRange> parse_metrics_range(const std::map<std::string, std::string>& query) {
  MetricsRange out;
  for (const auto& [key, bound] :
       {std::pair{"start", &out.start_s}, std::pair{"end", &out.end_s}}) {
    const auto it = query.find(key);
    if (it == query.end()) continue;
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *bound);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      return field_error(key, "must be a unix time in whole seconds, such as 1764583200");
  }
  if (out.start_s > out.end_s) return field_error("start", "must not be after end");
  return out;
}

Result<LogsQuery> parse_logs_query(const std::map<std::string, std::string>& query) {
  LogsQuery out;
  int64_t limit = static_cast<int64_t>(out.limit);
  for (const auto& [key, bound, low, high] :
       {std::tuple{"start", &out.start_ms, int64_t{0}, INT64_MAX},
        std::tuple{"limit", &limit, int64_t{1}, int64_t{1000}}}) {
    const auto it = query.find(key);
    if (it == query.end()) continue;
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *bound);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() || *bound < low ||
        *bound > high)
      return field_error(key, std::string(key) == "start"
                                  ? "must be a unix time in milliseconds, such as 1764583200000"
                                  : "must be a whole number from 1 to 1000");
  }
  out.limit = static_cast<size_t>(limit);
  return out;
}

Result<OutputQuery> parse_output_query(const std::string& pid,
                                       const std::map<std::string, std::string>& query) {
  OutputQuery out;
  auto whole = [](const std::string& text, auto* value, auto low, auto high) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty() &&
           *value >= low && *value <= high;
  };
  if (!whole(pid, &out.pid, 2, INT32_MAX))
    return field_error("pid", "must be the pid of a command in the sandbox, as `abx ps ID` lists");
  if (auto it = query.find("offset");
      it != query.end() && !whole(it->second, &out.offset, 0ull, UINT64_MAX))
    return field_error("offset", "must be a byte offset: a whole number from 0");
  if (auto it = query.find("limit");
      it != query.end() && !whole(it->second, &out.limit, size_t{1}, kMaxOutputLimit))
    return field_error(
        "limit", "must be a whole number of bytes from 1 to " + std::to_string(kMaxOutputLimit));
  return out;
}

}  // namespace abx::daemon
