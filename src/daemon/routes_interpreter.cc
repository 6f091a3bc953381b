// Sandbox plane, port 49999: the code interpreter (E2B's Jupyter front),
// backed by src/interp. Errors are plain text, as the SDKs expect
// (spec/e2b-protocol.md §13).
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include "daemon/routes.h"
#include "interp/interp.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr auto kDefaultRunTimeout = std::chrono::seconds(300);  // Python SDK's run_code default
constexpr auto kIdleKeepalive = std::chrono::seconds(5);

std::shared_ptr<interp::Interpreter> interpreter_of(LiveSandbox& live) {
  std::lock_guard lock(live.mutex);
  if (!live.interpreter) {
    live.interpreter = interp::Interpreter::create(*live.sandbox, live.row.env_vars);
  }
  return live.interpreter;
}

Task<void> text_error(Exchange& exchange, int status, const std::string& message) {
  co_await exchange.respond(status, "text/plain; charset=utf-8", message);
}

json context_json(const interp::ContextInfo& info) {
  return {{"id", info.id}, {"language", info.language}, {"cwd", info.cwd}};
}

std::string string_of(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

struct ExecuteJob {
  interp::ExecuteRequest request;
  std::chrono::milliseconds timeout{kDefaultRunTimeout};
};

std::optional<ExecuteJob> execute_job_of(const json& body, std::string* error) {
  ExecuteJob job;
  job.request.code = string_of(body, "code");
  job.request.context_id = string_of(body, "context_id");
  job.request.language = string_of(body, "language");
  if (const auto it = body.find("env_vars"); it != body.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) {
        *error = "env_vars." + key + ": must be a string";
        return std::nullopt;
      }
      job.request.env_vars[key] = value.get<std::string>();
    }
  }
  if (const auto it = body.find("timeout"); it != body.end() && it->is_number() && *it > 0) {
    job.timeout = std::chrono::milliseconds(static_cast<int64_t>(it->get<double>() * 1000));
  }
  if (!job.request.context_id.empty() && !job.request.language.empty()) {
    *error = "Only one of context_id or language can be provided";
    return std::nullopt;
  }
  return job;
}

Task<void> execute(SandboxCall& call, Exchange& exchange, const json& body) {
  std::string bad;
  auto job = execute_job_of(body, &bad);
  if (!job) co_return co_await text_error(exchange, 400, bad);
  auto executor = co_await boost::asio::this_coro::executor;
  auto lines = std::make_shared<Subscription>(executor);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  auto outcome = std::make_shared<std::optional<Error>>();
  auto interpreter = interpreter_of(*call.live);
  auto run = [interpreter, lines, cancelled, outcome, job = std::move(*job)] {
    auto emit = [&](const std::string& line) {
      boost::asio::post(lines->executor(), [lines, line] { lines->push({line + "\n"}); });
    };
    Status status = interpreter->execute(job.request, emit, *cancelled, job.timeout);
    if (!status) *outcome = status.error();
    boost::asio::post(lines->executor(), [lines] { lines->push({"", true}); });
  };
  call.service.pool().post(std::move(run));

  StreamEvent first = co_await lines->next(std::chrono::hours(24));
  if (first.last && *outcome) {
    co_return co_await text_error(exchange, error_map::http_status(**outcome), (*outcome)->message());
  }
  co_await exchange.start_stream(200, "application/x-ndjson");
  for (StreamEvent event = std::move(first); !event.last;
       event = co_await lines->next(kIdleKeepalive)) {
    if (event.json.empty()) event.json = "{\"type\":\"keepalive\"}\n";
    if (!co_await exchange.write_chunk(event.json)) {
      *cancelled = true;  // the client went away: interrupt the code, keep the context
      co_return;
    }
  }
  co_await exchange.finish_stream();
}

Task<void> contexts(SandboxCall& call, Exchange& exchange, const json& body) {
  const auto& req = exchange.request();
  auto interpreter = interpreter_of(*call.live);
  if (req.path == "/contexts" && req.method == "GET") {
    json out = json::array();
    for (const auto& info : interpreter->list_contexts()) out.push_back(context_json(info));
    co_return co_await respond_json(exchange, 200, out);
  }
  if (req.path == "/contexts" && req.method == "POST") {
    std::optional<Result<interp::ContextInfo>> created;
    co_await call.service.pool().run([&] {
      created = interpreter->create_context(string_of(body, "language"), string_of(body, "cwd"));
    });
    if (!*created)
      co_return co_await text_error(exchange, error_map::http_status(created->error()),
                                    created->error().message());
    co_return co_await respond_json(exchange, 200, context_json(created->value()));
  }
  const std::string rest = req.path.substr(10);  // after "/contexts/"
  const size_t slash = rest.find('/');
  const std::string id = rest.substr(0, slash);
  const std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
  Status status = Error{"no route for " + req.method + " " + req.path, ENOENT, ""};
  if (action == "restart" && req.method == "POST") {
    co_await call.service.pool().run([&] { status = interpreter->restart_context(id); });
  } else if (action.empty() && req.method == "DELETE") {
    co_await call.service.pool().run([&] { status = interpreter->remove_context(id); });
  }
  if (!status)
    co_return co_await text_error(exchange, error_map::http_status(status.error()), status.error().message());
  co_await respond_json(exchange, 200, nullptr);
}

}  // namespace

Task<void> interpreter(SandboxCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  if (req.path == "/health") co_return co_await exchange.respond(200, "application/json", "\"OK\"");
  bool fits = true;
  const std::string text = co_await http::read_body(exchange, 16u << 20, &fits);
  const std::string document = text.empty() ? std::string("{}") : text;
  auto body = json::parse(document, nullptr, false);
  if (!fits || body.is_discarded() || !body.is_object()) {
    co_return co_await text_error(exchange, 400, "request body must be a JSON object");
  }
  if (req.path == "/execute" && req.method == "POST")
    co_return co_await execute(call, exchange, body);
  if (req.path.rfind("/contexts", 0) == 0) co_return co_await contexts(call, exchange, body);
  co_await text_error(exchange, 404, "no route for " + req.method + " " + req.path);
}

}  // namespace abx::daemon::routes
