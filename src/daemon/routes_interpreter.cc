// Sandbox plane, port 49999: the code interpreter (E2B's Jupyter front),
// backed by src/interp. Errors are plain text, as the SDKs expect. Every
// interpreter call runs on the long lane (sandbox_ops).
// See spec/e2b-protocol.md §13.
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include "daemon/envd_requests.h"
#include "daemon/routes.h"
#include "daemon/sandbox_adoption.h"
#include "daemon/sandbox_ops.h"
#include "interp/interp.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr size_t kMaxBodyBytes = 16u << 20;
constexpr auto kIdleKeepalive = std::chrono::seconds(5);

Task<void> text_error(Exchange& exchange, int status, const std::string& message) {
  co_await exchange.respond(status, "text/plain; charset=utf-8", message);
}

json context_json(const interp::ContextInfo& info) {
  return {{"id", info.id}, {"language", info.language}, {"cwd", info.cwd}};
}

json contexts_json(const std::vector<interp::ContextInfo>& infos) {
  json out = json::array();
  for (const auto& info : infos) out.push_back(context_json(info));
  return out;
}

// A symlink may point at a directory; the context's start then checks it.
bool could_be_directory(runtime::sandbox_fs::FileType type) {
  return type == runtime::sandbox_fs::FileType::kDirectory ||
         type == runtime::sandbox_fs::FileType::kSymlink;
}

Error cwd_missing(const std::string& cwd) {
  return Error::with_message("cwd: " + cwd + " is not a directory in the sandbox", kErrBadInput);
}

Task<void> respond_failure(Exchange& exchange, const Error& error) {
  co_await text_error(exchange, error_map::http_status(error), error.message());
}

// The request body as a JSON object; on failure a 400 has been sent.
Task<std::optional<json>> read_json_body(Exchange& exchange) {
  bool fits = true;
  const std::string text = co_await http::read_body(exchange, kMaxBodyBytes, &fits);
  auto body = fits ? parse_interpreter_body(text)
                   : Result<json>(Error::with_message("body: larger than 16 MiB", kErrTooLarge));
  if (!body) {
    co_await respond_failure(exchange, body.error());
    co_return std::nullopt;
  }
  co_return std::move(*body);
}

// How much of a code cell the flight record keeps.
constexpr size_t kRecordedCode = 4 * 1024;

// The language a cell runs in: asked for, its context's, or the default's.
std::string language_of(interp::Interpreter& interpreter, const interp::ExecuteRequest& run) {
  if (!run.language.empty()) return run.language;
  if (run.context_id.empty()) return "python";
  for (const auto& context : interpreter.list_contexts())
    if (context.id == run.context_id) return context.language;
  return "";
}

// The flight record's "code started": which context, and the cell (its start).
void record_code_started(const SandboxLog& log, interp::Interpreter& interpreter,
                         const interp::ExecuteRequest& run) {
  log.event("commands", "code started",
            {{"context", run.context_id},
             {"language", language_of(interpreter, run)},
             {"code", run.code.substr(0, kRecordedCode)},
             {"codeBytes", run.code.size()}});
}

// "code ended": the error the cell raised (E2B's error line: name and value),
// or why it did not run to its end.
void record_code_ended(const SandboxLog& log, const interp::ExecuteRequest& run,
                       const Status& status, const nlohmann::json& error) {
  nlohmann::json fields = {{"context", run.context_id}};
  if (!status) fields["failed"] = status.error().message();
  if (error.is_object()) {
    fields["error"] = error.value("name", "");
    fields["errorValue"] = error.value("value", "").substr(0, kRecordedCode);
  }
  log.event("commands", "code ended", std::move(fields));
}

// Runs the execution on the long lane, its NDJSON lines posted back to `lines`.
void start_execution(SandboxCall& call, ExecuteRequest job, std::shared_ptr<Subscription> lines,
                     std::shared_ptr<std::atomic<bool>> cancelled,
                     std::shared_ptr<std::optional<Error>> outcome) {
  auto interpreter = interpreter_of(*call.live);
  auto run = [interpreter, lines, cancelled, outcome, log = call.live->log, job = std::move(job)] {
    nlohmann::json error;
    auto emit = [&](const std::string& line) {
      if (line.find(R"("error")") != std::string::npos) {  // the drivers' spacing varies
        json parsed = json::parse(line, nullptr, false);
        if (parsed.is_object() && parsed.value("type", "") == "error") error = std::move(parsed);
      }
      boost::asio::post(lines->executor(), [lines, line] { lines->push({line + "\n"}); });
    };
    record_code_started(*log, *interpreter, job.run);
    Status status = interpreter->execute(job.run, emit, *cancelled, job.timeout);
    record_code_ended(*log, job.run, status, error);
    if (!status) *outcome = status.error();
    boost::asio::post(lines->executor(), [lines] { lines->push({"", true}); });
  };
  sandbox_ops::execute_code(call.service, std::move(run));
}

using ContextOp = Task<Status> (*)(Service&, std::shared_ptr<interp::Interpreter>, std::string);

// DELETE /contexts/{context} and POST /contexts/{context}/restart.
Task<void> on_context(SandboxCall& call, Exchange& exchange, ContextOp op) {
  auto id = parse_context_id(call.params);
  if (!id) co_return co_await respond_failure(exchange, id.error());
  const Status status = co_await op(call.service, interpreter_of(*call.live), *id);
  if (!status) co_return co_await respond_failure(exchange, status.error());
  co_await respond_json(exchange, 200, nullptr);
}

}  // namespace

Task<void> interp_health(SandboxCall&, Exchange& exchange) {
  co_await exchange.respond(200, "application/json", "\"OK\"");
}

Task<void> interp_execute(SandboxCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange);
  if (!body) co_return;
  auto job = parse_execute(*body);
  if (!job) co_return co_await respond_failure(exchange, job.error());
  auto executor = co_await boost::asio::this_coro::executor;
  auto lines = std::make_shared<Subscription>(executor);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  auto outcome = std::make_shared<std::optional<Error>>();
  start_execution(call, std::move(*job), lines, cancelled, outcome);

  StreamEvent first = co_await lines->next(std::chrono::hours(24));
  if (first.last && *outcome && !sandbox_gone(call)) {
    co_return co_await respond_failure(exchange, **outcome);
  }
  co_await exchange.start_stream(200, "application/x-ndjson");
  for (StreamEvent event = std::move(first); !event.last;
       event = co_await lines->next(kIdleKeepalive)) {
    // E2B's server has sent its headers by now, so the SDK sees the body cut
    // short (not the context dying) and reports the sandbox killed.
    if (sandbox_gone(call)) {
      *cancelled = true;
      drop_stream(call);
    }
    if (event.json.empty()) event.json = "{\"type\":\"keepalive\"}\n";
    if (!co_await exchange.write_chunk(event.json)) {
      *cancelled = true;  // the client went away: interrupt the code, keep the context
      co_return;
    }
  }
  if (sandbox_gone(call)) drop_stream(call);
  co_await exchange.finish_stream();
}

Task<void> interp_list_contexts(SandboxCall& call, Exchange& exchange) {
  const auto infos = co_await sandbox_ops::list_contexts(call.service, interpreter_of(*call.live));
  co_await respond_json(exchange, 200, contexts_json(infos));
}

Task<void> interp_create_context(SandboxCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange);
  if (!body) co_return;
  auto request = parse_create_context(*body);
  if (!request) co_return co_await respond_failure(exchange, request.error());
  if (!request->cwd.empty()) {
    auto dir = co_await sandbox_ops::stat(call.service, *call.live->sandbox, request->cwd);
    if (!dir || !could_be_directory(dir->type)) {
      co_return co_await respond_failure(exchange, cwd_missing(request->cwd));
    }
  }
  auto created = co_await sandbox_ops::create_context(call.service, interpreter_of(*call.live),
                                                      request->language, request->cwd);
  if (!created) co_return co_await respond_failure(exchange, created.error());
  co_await respond_json(exchange, 200, context_json(created.value()));
}

Task<void> interp_remove_context(SandboxCall& call, Exchange& exchange) {
  co_await on_context(call, exchange, &sandbox_ops::remove_context);
}

Task<void> interp_restart_context(SandboxCall& call, Exchange& exchange) {
  co_await on_context(call, exchange, &sandbox_ops::restart_context);
}

}  // namespace abx::daemon::routes
