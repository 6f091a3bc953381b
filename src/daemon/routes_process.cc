// Sandbox plane: envd's process.Process service over Connect-JSON
// (spec/e2b-protocol.md §8, headers §9).
#include <boost/asio/this_coro.hpp>
#include <csignal>

#include "common/base64.h"
#include "common/connect_frame.h"
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
using proto_json::field;

// "Bad input" on any field: the message names the field.
struct BadField {
  std::string message;
};

std::string string_of(const json* value, const std::string& name) {
  if (!value) return {};
  if (!value->is_string()) throw BadField{name + ": must be a string"};
  return value->get<std::string>();
}

std::map<std::string, std::string> string_map_of(const json* value, const std::string& name) {
  std::map<std::string, std::string> out;
  if (!value) return out;
  if (!value->is_object()) throw BadField{name + ": must be an object of strings"};
  for (const auto& [key, item] : value->items()) out[key] = string_of(&item, name + "." + key);
  return out;
}

int64_t int_of(const json* value, const std::string& name) {
  if (!value) return 0;
  if (value->is_number_integer()) return value->get<int64_t>();
  if (value->is_string()) {
    try {
      size_t used = 0;
      const int64_t n = std::stoll(value->get<std::string>(), &used);
      if (used == value->get<std::string>().size()) return n;
    } catch (const std::exception&) {
    }
  }
  throw BadField{name + ": must be an integer"};
}

ProcessSelector selector_of(const json& message) {
  const json* process = field(message, "process", "process");
  if (!process || !process->is_object()) throw BadField{"process: required {pid} or {tag}"};
  ProcessSelector selector;
  selector.pid = static_cast<int>(int_of(field(*process, "pid", "pid"), "process.pid"));
  selector.tag = string_of(field(*process, "tag", "tag"), "process.tag");
  if (selector.pid == 0 && selector.tag.empty()) throw BadField{"process: required {pid} or {tag}"};
  return selector;
}

int signal_of(const json& message) {
  const json* value = field(message, "signal", "signal");
  if (value && value->is_string()) {
    const std::string name = value->get<std::string>();
    if (name == "SIGNAL_SIGKILL") return SIGKILL;
    if (name == "SIGNAL_SIGTERM") return SIGTERM;
  }
  if (value && value->is_number_integer()) {
    const int n = value->get<int>();
    if (n == SIGKILL || n == SIGTERM) return n;
  }
  throw BadField{"signal: must be SIGNAL_SIGKILL or SIGNAL_SIGTERM"};
}

std::string bytes_of(const json* value, const std::string& name) {
  const auto decoded = base64::decode(string_of(value, name));
  if (!decoded) throw BadField{name + ": must be base64"};
  return *decoded;
}

std::map<std::string, std::string> default_env(const envd_auth::SandboxUser& user, bool pty) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", user.home},
      {"USER", user.name},
      {"LOGNAME", user.name},
      {"SHELL", "/bin/bash"},
      {"LANG", "C.UTF-8"}};
  if (pty) {
    env["TERM"] = "xterm-256color";
    env["LC_ALL"] = "C.UTF-8";
  }
  return env;
}

StartProcess start_request_of(const json& message, const envd_auth::SandboxUser& user,
                              const SandboxRow& row) {
  const json* process = field(message, "process", "process");
  if (!process || !process->is_object()) throw BadField{"process: required {cmd, args, envs, cwd}"};
  StartProcess out;
  out.config.cmd = string_of(field(*process, "cmd", "cmd"), "process.cmd");
  if (out.config.cmd.empty()) throw BadField{"process.cmd: required"};
  if (const json* args = field(*process, "args", "args")) {
    if (!args->is_array()) throw BadField{"process.args: must be an array of strings"};
    for (const auto& arg : *args) out.config.args.push_back(string_of(&arg, "process.args"));
  }
  out.config.envs = string_map_of(field(*process, "envs", "envs"), "process.envs");
  out.config.cwd = string_of(field(*process, "cwd", "cwd"), "process.cwd");
  out.tag = string_of(field(message, "tag", "tag"), "tag");

  runtime::ProcessSpec& spec = out.spec;
  spec.argv.push_back(out.config.cmd);
  spec.argv.insert(spec.argv.end(), out.config.args.begin(), out.config.args.end());
  spec.uid = user.uid;
  spec.gid = user.gid;
  spec.cwd = !out.config.cwd.empty()    ? out.config.cwd
             : !row.default_cwd.empty() ? row.default_cwd
                                        : user.home;
  if (const json* pty = field(message, "pty", "pty")) {
    spec.pty = true;
    if (const json* size = field(*pty, "size", "size")) {
      spec.pty_cols = static_cast<uint16_t>(int_of(field(*size, "cols", "cols"), "pty.size.cols"));
      spec.pty_rows = static_cast<uint16_t>(int_of(field(*size, "rows", "rows"), "pty.size.rows"));
    }
  }
  if (const json* stdin_flag = field(message, "stdin", "stdin")) {
    if (!stdin_flag->is_boolean()) throw BadField{"stdin: must be true or false"};
    spec.stdin_pipe = stdin_flag->get<bool>();
  }
  spec.env = default_env(user, spec.pty);
  for (const auto& [key, value] : row.env_vars) spec.env[key] = value;
  for (const auto& [key, value] : out.config.envs) spec.env[key] = value;
  return out;
}

std::chrono::milliseconds timeout_of(const http::Request& request) {
  try {
    return std::chrono::milliseconds(
        std::max(0LL, std::stoll(request.header("connect-timeout-ms"))));
  } catch (const std::exception&) {
    return std::chrono::milliseconds(0);
  }
}

// Forwards events until the end event or until the client goes away (the
// process keeps running then: background commands rely on it).
Task<void> stream_events(SandboxCall& call, Exchange& exchange,
                         std::shared_ptr<Subscription> subscription) {
  const auto keepalive = keepalive_of(exchange.request());
  co_await exchange.start_stream(200, "application/connect+json");
  for (;;) {
    StreamEvent event = co_await subscription->next(keepalive);
    if (event.json.empty()) event.json = proto_json::keepalive_event();
    if (!co_await exchange.write_chunk(connect::encode(event.json))) {
      call.live->processes->detach(subscription);
      co_return;
    }
    if (event.last) break;
  }
  if (co_await exchange.write_chunk(connect::encode("{}", connect::kFlagEndStream))) {
    co_await exchange.finish_stream();
  }
}

Task<void> reply_status(Exchange& exchange, const Status& status) {
  if (!status) {
    co_return co_await connect_error(exchange, error_map::connect_code(status.error().errnum),
                                     status.error().message());
  }
  co_await respond_json(exchange, 200, json::object());
}

Task<void> start(SandboxCall& call, Exchange& exchange, const json& message,
                 const envd_auth::SandboxUser& user) {
  StartProcess request = start_request_of(message, user, call.row);
  request.timeout = timeout_of(exchange.request());
  auto executor = co_await boost::asio::this_coro::executor;
  std::optional<Result<std::shared_ptr<Subscription>>> started;
  co_await call.service.pool().run(
      [&] { started = call.live->processes->start(std::move(request), executor); });
  if (!*started) {
    const Error& error = started->error();
    co_return co_await connect_error(exchange, error_map::connect_code(error.errnum),
                                     error.message());
  }
  co_await stream_events(call, exchange, started->value());
}

Task<void> attach(SandboxCall& call, Exchange& exchange, const json& message) {
  auto executor = co_await boost::asio::this_coro::executor;
  auto attached = call.live->processes->attach(selector_of(message), executor);
  if (!attached)
    co_return co_await connect_error(exchange, "not_found", attached.error().message());
  co_await stream_events(call, exchange, attached.value());
}

json process_list_json(ProcessTable& table) {
  json processes = json::array();
  for (const ProcessSummary& p : table.list()) {
    json config = {{"cmd", p.config.cmd}, {"args", p.config.args}, {"envs", p.config.envs}};
    if (!p.config.cwd.empty()) config["cwd"] = p.config.cwd;
    json item = {{"config", config}, {"pid", p.pid}};
    if (!p.tag.empty()) item["tag"] = p.tag;
    processes.push_back(item);
  }
  return {{"processes", processes}};
}

Task<void> list(SandboxCall& call, Exchange& exchange) {
  co_await respond_json(exchange, 200, process_list_json(*call.live->processes));
}

Task<void> send_input(SandboxCall& call, Exchange& exchange, const json& message) {
  const ProcessSelector selector = selector_of(message);
  const json* input = field(message, "input", "input");
  if (!input || !input->is_object()) throw BadField{"input: required {stdin} or {pty}"};
  const bool to_pty = field(*input, "pty", "pty") != nullptr;
  const std::string bytes = bytes_of(field(*input, to_pty ? "pty" : "stdin", "stdin"), "input");
  Status status;
  co_await call.service.pool().run(
      [&] { status = call.live->processes->send_input(selector, bytes, to_pty); });
  co_await reply_status(exchange, status);
}

Task<void> update(SandboxCall& call, Exchange& exchange, const json& message) {
  const ProcessSelector selector = selector_of(message);
  const json* pty = field(message, "pty", "pty");
  const json* size = pty ? field(*pty, "size", "size") : nullptr;
  if (!size) throw BadField{"pty.size: required {cols, rows}"};
  const auto cols = static_cast<uint16_t>(int_of(field(*size, "cols", "cols"), "pty.size.cols"));
  const auto rows = static_cast<uint16_t>(int_of(field(*size, "rows", "rows"), "pty.size.rows"));
  co_await reply_status(exchange, call.live->processes->resize_pty(selector, cols, rows));
}

Task<void> dispatch(SandboxCall& call, Exchange& exchange, const std::string& method,
                    const json& message, const envd_auth::SandboxUser& user) {
  auto& table = *call.live->processes;
  if (method == "Start") co_return co_await start(call, exchange, message, user);
  if (method == "Connect") co_return co_await attach(call, exchange, message);
  if (method == "List") co_return co_await list(call, exchange);
  if (method == "SendInput") co_return co_await send_input(call, exchange, message);
  if (method == "Update") co_return co_await update(call, exchange, message);
  if (method == "SendSignal") {
    co_return co_await reply_status(exchange,
                                    table.signal(selector_of(message), signal_of(message)));
  }
  if (method == "CloseStdin") {
    co_return co_await reply_status(exchange, table.close_stdin(selector_of(message)));
  }
  co_await connect_error(exchange, "unimplemented", "process.Process/" + method + " is not served");
}

}  // namespace

Task<void> process(SandboxCall& call, Exchange& exchange, const std::string& method) {
  const bool streaming = is_streaming(exchange.request());
  auto message = co_await read_connect_request(exchange, streaming);
  if (!message) co_return;
  auto user = co_await connect_user(exchange, call.row);
  if (!user) co_return;
  std::string bad_field;
  try {
    co_await dispatch(call, exchange, method, *message, *user);
  } catch (const BadField& bad) {
    bad_field = bad.message;
  }
  if (!bad_field.empty()) co_await connect_error(exchange, "invalid_argument", bad_field);
}

}  // namespace abx::daemon::routes
