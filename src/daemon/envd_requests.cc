#include "daemon/envd_requests.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <limits>

#include "common/base64.h"
#include "common/json_text.h"
#include "daemon/proto_json.h"

namespace abx::daemon {
namespace {

using nlohmann::json;
using proto_json::field;

Error bad(const std::string& name, const std::string& what) {
  return Error::with_message(name + ": " + what, kErrBadInput);
}

// Optional string field: "" when absent or null.
Result<std::string> string_of(const json* value, const std::string& name) {
  if (!value) return std::string{};
  if (!value->is_string()) return bad(name, "must be a string");
  return value->get<std::string>();
}

// A path inside the sandbox: required, a string, no NUL byte (it would cut
// the path short at the syscall).
Result<std::string> path_of(const json* value, const std::string& name) {
  auto path = string_of(value, name);
  if (!path) return path.error();
  if (path->empty()) return bad(name, "required");
  if (path->find('\0') != std::string::npos) return bad(name, "must not contain a NUL byte");
  return path;
}

Result<std::map<std::string, std::string>> string_map_of(const json* value,
                                                         const std::string& name) {
  std::map<std::string, std::string> out;
  if (!value) return out;
  if (!value->is_object()) return bad(name, "must be an object of strings");
  for (const auto& [key, item] : value->items()) {
    if (!item.is_string()) return bad(name + "." + key, "must be a string");
    out[key] = item.get<std::string>();
  }
  return out;
}

// proto3 JSON sends 64-bit integers as strings, 32-bit ones as numbers; both
// are accepted for any integer field. Absent fields are `fallback`.
Result<int64_t> int_in_range(const json* value, const std::string& name, int64_t low, int64_t high,
                             int64_t fallback) {
  if (!value) return fallback;
  const std::string range =
      "must be an integer from " + std::to_string(low) + " to " + std::to_string(high);
  int64_t n = 0;
  if (value->is_number_integer() && value->is_number_unsigned()) {
    const auto u = value->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return bad(name, range);
    n = static_cast<int64_t>(u);
  } else if (value->is_number_integer()) {
    n = value->get<int64_t>();
  } else if (value->is_string()) {
    const std::string text = value->get<std::string>();
    try {
      size_t used = 0;
      n = std::stoll(text, &used);
      if (used != text.size()) return bad(name, range);
    } catch (const std::exception&) {
      return bad(name, range);
    }
  } else {
    return bad(name, range);
  }
  if (n < low || n > high) return bad(name, range);
  return n;
}

Result<bool> bool_of(const json* value, const std::string& name, bool fallback) {
  if (!value) return fallback;
  if (!value->is_boolean()) return bad(name, "must be true or false");
  return value->get<bool>();
}

Result<const json*> object_of(const json& message, const char* camel, const char* snake,
                              const std::string& what) {
  const json* value = field(message, camel, snake);
  if (!value || !value->is_object()) return bad(camel, "required " + what);
  return value;
}

Result<ProcessSelector> selector_of(const json& message) {
  auto process = object_of(message, "process", "process", "{pid} or {tag}");
  if (!process) return process.error();
  const json& p = **process;
  auto pid = int_in_range(field(p, "pid", "pid"), "process.pid", 0,
                          std::numeric_limits<int32_t>::max(), 0);
  if (!pid) return pid.error();
  auto tag = string_of(field(p, "tag", "tag"), "process.tag");
  if (!tag) return tag.error();
  if (*pid == 0 && tag->empty()) return bad("process", "required {pid} or {tag}");
  return ProcessSelector{static_cast<int>(*pid), std::move(*tag)};
}

struct PtySize {
  uint16_t cols = 0;
  uint16_t rows = 0;
};

// {"size":{"cols":N,"rows":N}}; `required` for Update, optional for Start.
Result<PtySize> pty_size_of(const json* pty, bool required) {
  const json* size = pty ? field(*pty, "size", "size") : nullptr;
  if (!size) {
    if (required) return bad("pty.size", "required {cols, rows}");
    return PtySize{};
  }
  if (!size->is_object()) return bad("pty.size", "must be {cols, rows}");
  constexpr int64_t kMax = std::numeric_limits<uint16_t>::max();
  auto cols = int_in_range(field(*size, "cols", "cols"), "pty.size.cols", 1, kMax, -1);
  if (!cols) return cols.error();
  auto rows = int_in_range(field(*size, "rows", "rows"), "pty.size.rows", 1, kMax, -1);
  if (!rows) return rows.error();
  if (*cols < 0 || *rows < 0) return bad("pty.size", "required {cols, rows}");
  return PtySize{static_cast<uint16_t>(*cols), static_cast<uint16_t>(*rows)};
}

Result<ProcessConfig> process_config_of(const json& message) {
  auto process = object_of(message, "process", "process", "{cmd, args, envs, cwd}");
  if (!process) return process.error();
  const json& p = **process;
  ProcessConfig config;
  auto cmd = string_of(field(p, "cmd", "cmd"), "process.cmd");
  if (!cmd) return cmd.error();
  if (cmd->empty()) return bad("process.cmd", "required");
  config.cmd = std::move(*cmd);
  if (const json* args = field(p, "args", "args")) {
    if (!args->is_array()) return bad("process.args", "must be an array of strings");
    for (const auto& arg : *args) {
      if (!arg.is_string()) return bad("process.args", "must be an array of strings");
      config.args.push_back(arg.get<std::string>());
    }
  }
  auto envs = string_map_of(field(p, "envs", "envs"), "process.envs");
  if (!envs) return envs.error();
  config.envs = std::move(*envs);
  auto cwd = string_of(field(p, "cwd", "cwd"), "process.cwd");
  if (!cwd) return cwd.error();
  if (cwd->find('\0') != std::string::npos)
    return bad("process.cwd", "must not contain a NUL byte");
  config.cwd = std::move(*cwd);
  return config;
}

// envd's Signal enum by name or number; SIGNAL_UNSPECIFIED is refused.
// SIGINT and SIGHUP are ours (envd has TERM and KILL): the CLI passes on the
// user's Ctrl-C so a command's own handler runs.
Result<int> signal_of(const json* value) {
  constexpr std::pair<const char*, int> kSignals[] = {{"SIGNAL_SIGKILL", SIGKILL},
                                                      {"SIGNAL_SIGTERM", SIGTERM},
                                                      {"SIGNAL_SIGINT", SIGINT},
                                                      {"SIGNAL_SIGHUP", SIGHUP}};
  for (const auto& [name, number] : kSignals) {
    if (value && value->is_string() && value->get<std::string>() == name) return number;
    if (value && value->is_number_integer() && value->get<int64_t>() == number) return number;
  }
  return bad("signal", "must be SIGNAL_SIGKILL, SIGNAL_SIGTERM, SIGNAL_SIGINT or SIGNAL_SIGHUP");
}

}  // namespace

Result<StartRequest> parse_start(const json& message) {
  StartRequest out;
  auto config = process_config_of(message);
  if (!config) return config.error();
  out.config = std::move(*config);
  auto tag = string_of(field(message, "tag", "tag"), "tag");
  if (!tag) return tag.error();
  out.tag = std::move(*tag);
  if (const json* pty = field(message, "pty", "pty")) {
    if (!pty->is_object()) return bad("pty", "must be {size: {cols, rows}}");
    auto size = pty_size_of(pty, false);
    if (!size) return size.error();
    out.pty = true;
    out.pty_cols = size->cols;
    out.pty_rows = size->rows;
  }
  auto stdin_pipe = bool_of(field(message, "stdin", "stdin"), "stdin", true);
  if (!stdin_pipe) return stdin_pipe.error();
  out.stdin_pipe = *stdin_pipe;
  return out;
}

Result<ConnectRequest> parse_connect(const json& message) {
  auto selector = selector_of(message);
  if (!selector) return selector.error();
  return ConnectRequest{std::move(*selector)};
}

Result<SendInputRequest> parse_send_input(const json& message) {
  auto selector = selector_of(message);
  if (!selector) return selector.error();
  auto input = object_of(message, "input", "input", "{stdin} or {pty}");
  if (!input) return input.error();
  const json* pty = field(**input, "pty", "pty");
  const json* data = pty ? pty : field(**input, "stdin", "stdin");
  const std::string name = pty ? "input.pty" : "input.stdin";
  if (!data) return bad("input", "required {stdin} or {pty}");
  auto text = string_of(data, name);
  if (!text) return text.error();
  auto bytes = base64::decode(*text);
  if (!bytes) return bad(name, "must be base64");
  return SendInputRequest{std::move(*selector), std::move(*bytes), pty != nullptr};
}

Result<SignalRequest> parse_signal(const json& message) {
  auto selector = selector_of(message);
  if (!selector) return selector.error();
  auto signo = signal_of(field(message, "signal", "signal"));
  if (!signo) return signo.error();
  return SignalRequest{std::move(*selector), *signo};
}

Result<UpdateRequest> parse_update(const json& message) {
  auto selector = selector_of(message);
  if (!selector) return selector.error();
  const json* pty = field(message, "pty", "pty");
  if (pty && !pty->is_object()) return bad("pty", "must be {size: {cols, rows}}");
  auto size = pty_size_of(pty, true);
  if (!size) return size.error();
  return UpdateRequest{std::move(*selector), size->cols, size->rows};
}

Result<PathRequest> parse_path_request(const json& message) {
  auto path = path_of(field(message, "path", "path"), "path");
  if (!path) return path.error();
  return PathRequest{std::move(*path)};
}

Result<ListDirRequest> parse_list_dir(const json& message) {
  auto path = path_of(field(message, "path", "path"), "path");
  if (!path) return path.error();
  auto depth = int_in_range(field(message, "depth", "depth"), "depth", 0, kMaxListDepth, 1);
  if (!depth) return depth.error();
  // envd lists direct children for depth 0 as for 1.
  return ListDirRequest{std::move(*path), std::max(1, static_cast<int>(*depth))};
}

Result<MoveRequest> parse_move(const json& message) {
  auto source = path_of(field(message, "source", "source"), "source");
  if (!source) return source.error();
  auto destination = path_of(field(message, "destination", "destination"), "destination");
  if (!destination) return destination.error();
  return MoveRequest{std::move(*source), std::move(*destination)};
}

Result<WatchDirRequest> parse_watch_dir(const json& message) {
  auto path = path_of(field(message, "path", "path"), "path");
  if (!path) return path.error();
  auto recursive = bool_of(field(message, "recursive", "recursive"), "recursive", false);
  if (!recursive) return recursive.error();
  auto include_entry =
      bool_of(field(message, "includeEntry", "include_entry"), "includeEntry", false);
  if (!include_entry) return include_entry.error();
  auto network_mounts = bool_of(field(message, "allowNetworkMounts", "allow_network_mounts"),
                                "allowNetworkMounts", false);
  if (!network_mounts) return network_mounts.error();
  return WatchDirRequest{std::move(*path), *recursive, *include_entry};
}

Result<WatcherRequest> parse_watcher(const json& message) {
  auto id = string_of(field(message, "watcherId", "watcher_id"), "watcherId");
  if (!id) return id.error();
  if (id->empty()) return bad("watcherId", "required");
  return WatcherRequest{std::move(*id)};
}

Result<FilesQuery> parse_files_query(const std::map<std::string, std::string>& query,
                                     bool path_required) {
  FilesQuery out;
  if (const auto it = query.find("path"); it != query.end()) out.path = it->second;
  if (const auto it = query.find("username"); it != query.end()) out.username = it->second;
  if (path_required && out.path.empty()) return bad("path", "required");
  if (out.path.find('\0') != std::string::npos) return bad("path", "must not contain a NUL byte");
  return out;
}

namespace {

// envd's limits (filesystem.ValidateMetadata): a key and its xattr prefix fit
// the VFS's 255-byte name, and a file's whole set one 4 KiB ext4 block.
constexpr size_t kMetadataPrefixLen = 9;  // "user.e2b."
constexpr size_t kMaxMetadataKey = 255 - kMetadataPrefixLen;
constexpr size_t kMaxMetadataTotal = 4096;

bool printable_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

}  // namespace

Result<std::map<std::string, std::string>> parse_metadata_headers(
    const std::map<std::string, std::string>& headers) {
  static const std::string kPrefix = "x-metadata-";
  std::map<std::string, std::string> metadata;
  size_t total = 0;
  for (const auto& [name, value] : headers) {
    if (!name.starts_with(kPrefix)) continue;
    const std::string key = name.substr(kPrefix.size());
    if (key.empty()) return bad("metadata", "a key must not be empty (X-Metadata-<key>)");
    if (key.size() > kMaxMetadataKey)
      return bad("metadata", "key '" + key.substr(0, 32) + "...' is longer than 246 bytes");
    if (!printable_ascii(key) || !printable_ascii(value))
      return bad("metadata " + key, "keys and values must be printable ASCII");
    total += kMetadataPrefixLen + key.size() + value.size();
    metadata[key] = value;
  }
  if (total > kMaxMetadataTotal)
    return bad("metadata", "more than 4096 bytes in all (keys, values and prefixes)");
  return metadata;
}

Result<json> parse_interpreter_body(const std::string& body) {
  return json_text::parse_object(body.empty() ? std::string_view("{}") : body);
}

Result<ExecuteRequest> parse_execute(const json& body) {
  // E2B's server requires `code`, a string: null or absent is no code to run.
  if (const auto code = body.find("code"); code == body.end() || !code->is_string()) {
    return bad("code", "required, a string (the code to run)");
  }
  ExecuteRequest out;
  interp::ExecuteRequest& run = out.run;
  for (auto [key, target] : {std::pair{"code", &run.code}, std::pair{"context_id", &run.context_id},
                             std::pair{"language", &run.language}}) {
    auto value = string_of(field(body, key, key), key);
    if (!value) return value.error();
    *target = std::move(*value);
  }
  auto env = string_map_of(field(body, "env_vars", "env_vars"), "env_vars");
  if (!env) return env.error();
  run.env_vars = std::move(*env);
  if (const json* timeout = field(body, "timeout", "timeout")) {
    if (!timeout->is_number() || !std::isfinite(timeout->get<double>()) ||
        timeout->get<double>() > static_cast<double>(kMaxRunTimeoutSec)) {
      return bad("timeout",
                 "must be a number of seconds up to " + std::to_string(kMaxRunTimeoutSec));
    }
    // 0 or less: the default, as before.
    if (const double seconds = timeout->get<double>(); seconds > 0) {
      out.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    }
  }
  if (!run.context_id.empty() && !run.language.empty()) {
    return bad("context_id", "give either context_id or language, not both");
  }
  return out;
}

Result<CreateContextRequest> parse_create_context(const json& body) {
  CreateContextRequest out;
  auto language = string_of(field(body, "language", "language"), "language");
  if (!language) return language.error();
  out.language = std::move(*language);
  auto cwd = string_of(field(body, "cwd", "cwd"), "cwd");
  if (!cwd) return cwd.error();
  if (!cwd->empty() && cwd->front() != '/') return bad("cwd", "must be an absolute path");
  if (cwd->find('\0') != std::string::npos) return bad("cwd", "must not contain a NUL byte");
  out.cwd = std::move(*cwd);
  return out;
}

Result<std::string> parse_context_id(const std::map<std::string, std::string>& params) {
  const auto it = params.find("context");
  if (it == params.end() || it->second.empty()) return bad("context id", "required in the path");
  return it->second;  // an unknown id is the interpreter's 404
}

}  // namespace abx::daemon
