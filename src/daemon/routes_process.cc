// Sandbox plane: envd's process.Process service over Connect-JSON. Requests
// are parsed by envd_requests; blocking calls go through sandbox_ops.
// See spec/e2b-protocol.md §8 (headers §9).
#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <csignal>
#include <optional>

#include "common/connect_frame.h"
#include "daemon/envd_requests.h"
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

StartProcess start_process_of(StartRequest request, const envd_auth::SandboxUser& user,
                              const SandboxRow& row) {
  StartProcess out;
  out.config = std::move(request.config);
  out.tag = std::move(request.tag);
  runtime::ProcessSpec& spec = out.spec;
  spec.argv.push_back(out.config.cmd);
  spec.argv.insert(spec.argv.end(), out.config.args.begin(), out.config.args.end());
  spec.uid = user.uid;
  spec.gid = user.gid;
  // A relative cwd (and "~") resolves against the user's home, as envd's.
  spec.cwd = !out.config.cwd.empty() ? runtime::sandbox_fs::absolute_path(out.config.cwd, user.home)
             : !row.default_cwd.empty() ? row.default_cwd
                                        : user.home;
  spec.pty = request.pty;
  if (request.pty_cols != 0) spec.pty_cols = request.pty_cols;
  if (request.pty_rows != 0) spec.pty_rows = request.pty_rows;
  spec.stdin_pipe = request.stdin_pipe;
  spec.env = envd_auth::default_env(user, spec.pty);
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

using Clock = std::chrono::steady_clock;

// How long SendSignal(SIGKILL) waits for the process to be reaped: a few ms
// as a rule, longer on a loaded host; a process stuck in the kernel (which
// no signal ends) must not hold the request for good.
constexpr auto kReapWait = std::chrono::seconds(10);

// A Start stream ends at its deadline once the process table has killed and
// reaped the process (its end event says so), so a caller that sees the
// deadline finds the process gone. This much later it ends regardless (a
// process stuck in the kernel must not hold the stream).
constexpr auto kKillGrace = std::chrono::seconds(2);

// Until the next keepalive is due, or the deadline if that comes first.
std::chrono::milliseconds next_wait(std::chrono::seconds keepalive,
                                    std::optional<Clock::time_point> deadline) {
  std::chrono::milliseconds wait = keepalive;
  if (deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
    wait = std::clamp(left, std::chrono::milliseconds(1), wait);
  }
  return wait;
}

// As connect-go ends a stream whose Connect-Timeout-Ms passed.
Task<void> end_past_deadline(Exchange& exchange) {
  const std::string frame = connect::encode(
      stream_error("deadline_exceeded", "context deadline exceeded"), connect::kFlagEndStream);
  if (co_await exchange.write_chunk(frame)) co_await exchange.finish_stream();
}

// Forwards events until the end event or until the client goes away (the
// process keeps running then: background commands rely on it). A `timeout`
// (Connect-Timeout-Ms) ends the stream with deadline_exceeded, as envd's does.
Task<void> stream_events(SandboxCall& call, Exchange& exchange,
                         std::shared_ptr<Subscription> subscription,
                         std::chrono::milliseconds timeout) {
  const auto keepalive = keepalive_of(exchange.request());
  std::optional<Clock::time_point> deadline;
  if (timeout.count() > 0) deadline = Clock::now() + timeout;
  co_await exchange.start_stream(200, "application/connect+json");
  for (;;) {
    StreamEvent event = co_await subscription->next(next_wait(keepalive, deadline));
    if (event.last && (event.end == StreamEnd::kSandboxStopped || sandbox_gone(call))) {
      drop_stream(call);
    }
    const bool exited = event.last && event.end == StreamEnd::kExited;
    if (!exited && ((deadline && Clock::now() >= *deadline) || event.end == StreamEnd::kDeadline)) {
      call.live->processes->detach(subscription);
      co_return co_await end_past_deadline(exchange);
    }
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
  if (!status) co_return co_await connect_failure(exchange, status.error());
  co_await respond_json(exchange, 200, json::object());
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

}  // namespace

Task<void> process_start(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_start);
  if (!parsed) co_return;
  auto& request = parsed->request;
  StartProcess start = start_process_of(std::move(request), parsed->user, call.row);
  const auto timeout = timeout_of(exchange.request());
  start.timeout = timeout;
  auto executor = co_await boost::asio::this_coro::executor;
  auto started = co_await sandbox_ops::start_process(call.service, *call.live->processes,
                                                     std::move(start), executor);
  if (!started) co_return co_await connect_failure(exchange, started.error());
  const auto stream_deadline = timeout.count() > 0 ? timeout + kKillGrace : timeout;
  co_await stream_events(call, exchange, started.value(), stream_deadline);
}

Task<void> process_connect(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_connect);
  if (!parsed) co_return;
  auto& request = parsed->request;
  auto executor = co_await boost::asio::this_coro::executor;
  auto attached = call.live->processes->attach(request.process, executor);
  if (!attached) co_return co_await connect_failure(exchange, attached.error());
  co_await stream_events(call, exchange, attached.value(), timeout_of(exchange.request()));
}

Task<void> process_list(SandboxCall& call, Exchange& exchange) {
  auto input = co_await read_connect_input(call, exchange);
  if (!input) co_return;
  co_await respond_json(exchange, 200, process_list_json(*call.live->processes));
}

Task<void> process_send_input(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_send_input);
  if (!parsed) co_return;
  auto& request = parsed->request;
  const Status status =
      co_await sandbox_ops::send_input(call.service, *call.live->processes, request.process,
                                       std::move(request.bytes), request.to_pty);
  co_await reply_status(exchange, status);
}

Task<void> process_update(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_update);
  if (!parsed) co_return;
  auto& request = parsed->request;
  const Status status = co_await sandbox_ops::resize_pty(
      call.service, *call.live->processes, request.process, request.cols, request.rows);
  co_await reply_status(exchange, status);
}

Task<void> process_send_signal(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_signal);
  if (!parsed) co_return;
  auto& request = parsed->request;
  const Status status = co_await sandbox_ops::signal(call.service, *call.live->processes,
                                                     request.process, request.signal);
  // envd reaps a killed process at once, so E2B's callers take the answer to
  // mean "gone": a `kill -0 <pid>` right after must not find a zombie.
  if (status && request.signal == SIGKILL) {
    co_await call.live->processes->wait_reaped(request.process, kReapWait);
  }
  co_await reply_status(exchange, status);
}

Task<void> process_close_stdin(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_connect);
  if (!parsed) co_return;
  auto& request = parsed->request;
  const Status status =
      co_await sandbox_ops::close_stdin(call.service, *call.live->processes, request.process);
  co_await reply_status(exchange, status);
}

}  // namespace abx::daemon::routes
