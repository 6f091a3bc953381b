// run_code (the interpreter plane's /execute) and run_command
// (process.Process/Start), both streamed so a cancel stops them.
#include <chrono>

#include "common/base64.h"
#include "common/connect_frame.h"
#include "common/json_text.h"
#include "common/process_events.h"
#include "mcp/stream_reader.h"
#include "mcp/text_limits.h"
#include "mcp/tools.h"

namespace abx::mcp::tools {
namespace {

constexpr int kDefaultCodeTimeout = 300;
constexpr int kDefaultCommandTimeout = 60;

struct CodeOutput {
  std::string stdout_text, stderr_text, text;
  json results = json::array();
  json error;
  json images = json::array();
  int execution_count = 0;
};

void on_code_line(const json& line, CodeOutput& out) {
  const std::string type = line.value("type", "");
  if (type == "stdout") out.stdout_text += line.value("text", "");
  if (type == "stderr") out.stderr_text += line.value("text", "");
  if (type == "error") {
    out.error = {{"name", line.value("name", "")},
                 {"value", line.value("value", "")},
                 {"traceback", line.value("traceback", "")}};
  }
  if (type == "number_of_executions") out.execution_count = line.value("execution_count", 0);
  if (type != "result") return;
  if (line.value("is_main_result", false)) out.text = line.value("text", "");
  json result = {{"is_main_result", line.value("is_main_result", false)}};
  for (const char* format : {"text", "html", "markdown", "json"}) {
    if (line.contains(format)) result[format] = line[format];
  }
  if (line.contains("png")) {
    out.images.push_back({{"type", "image"}, {"data", line["png"]}, {"mimeType", "image/png"}});
    result["png"] = "(attached as image content)";
  }
  out.results.push_back(std::move(result));
}

Status read_code_lines(http::ResponseStream& stream, const CancelFlag& cancel, CodeOutput& out) {
  std::string pending;
  while (!stream.done()) {
    auto bytes = read_unless_cancelled(stream, cancel);
    if (!bytes) return bytes.error();
    pending += *bytes;
    for (size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      auto line = json_text::parse_object(std::string_view(pending).substr(0, newline));
      pending.erase(0, newline + 1);
      if (line) on_code_line(*line, out);
    }
  }
  return {};
}

std::string section(const char* title, const std::string& body) {
  return body.empty() ? "" : std::string(title) + ":\n" + clip(body) + "\n";
}

ToolResult code_result(const std::string& id, CodeOutput out) {
  ToolResult result;
  result.text = section("stdout", out.stdout_text) + section("stderr", out.stderr_text) +
                section("result", out.text);
  if (!out.error.is_null()) {
    result.is_error = true;  // the code raised: the agent should fix it
    result.text += "error: " + out.error.value("name", "") + ": " + out.error.value("value", "") +
                   "\n" + clip(out.error.value("traceback", "")) + "\n";
  }
  if (result.text.empty()) result.text = "(no output)";
  result.structured = {{"sandbox_id", id},
                       {"stdout", clip(out.stdout_text)},
                       {"stderr", clip(out.stderr_text)},
                       {"text", clip(out.text)},
                       {"results", std::move(out.results)},
                       {"error", std::move(out.error)},
                       {"execution_count", out.execution_count}};
  result.images = std::move(out.images);
  return result;
}

struct CommandOutput {
  std::optional<int> pid;
  std::string stdout_text, stderr_text;
  std::optional<json> end;
  std::string stream_error;
  std::string stream_error_code;
};

Status on_command_frame(const connect::Frame& frame, CommandOutput& out) {
  auto parsed = json_text::parse(frame.payload);
  if (!parsed) return Error{"bad JSON in the command's output stream"};
  const json& message = *parsed;
  if (frame.end_stream()) {
    if (message.contains("error")) {
      out.stream_error = message["error"].value("message", "the command's stream failed");
      out.stream_error_code = message["error"].value("code", "");
    }
    return {};
  }
  const json& event = message.value("event", json::object());
  if (event.contains("start")) out.pid = event["start"].value("pid", 0);
  if (event.contains("end")) out.end = event["end"];
  if (!event.contains("data")) return {};
  for (const auto& [name, sink] :
       {std::pair{"stdout", &out.stdout_text}, std::pair{"stderr", &out.stderr_text}}) {
    const auto& data = event["data"];
    if (!data.contains(name) || !data[name].is_string()) continue;
    if (auto bytes = base64::decode(data[name].get<std::string>())) *sink += *bytes;
  }
  return {};
}

// Reads until the end event (or only the start event when `until_started`).
Status read_command(http::ResponseStream& stream, const CancelFlag& cancel, bool until_started,
                    CommandOutput& out) {
  connect::FrameReader frames;
  while (!stream.done() && !out.end && !(until_started && out.pid)) {
    auto bytes = read_unless_cancelled(stream, cancel);
    if (!bytes) return bytes.error();
    frames.feed(*bytes);
    std::string error;
    while (auto frame = frames.next(&error)) {
      if (auto handled = on_command_frame(*frame, out); !handled) return handled;
    }
    if (!error.empty()) return Error{error};
  }
  return {};
}

json start_request(const json& args) {
  json process = {{"cmd", "/bin/bash"},
                  {"args", json::array({"-l", "-c", string_arg(args, "command")})},
                  {"envs", args.value("envs", json::object())}};
  if (auto cwd = string_arg(args, "cwd"); !cwd.empty()) process["cwd"] = cwd;
  return {{"process", process}, {"stdin", false}};
}

// The daemon SIGKILLs a command at its Connect-Timeout-Ms deadline and ends
// its stream with deadline_exceeded (as envd does) instead of an exit status.
constexpr int kKilledExit = 128 + 9;

bool hit_deadline(int exit_code, std::chrono::steady_clock::duration elapsed, int timeout) {
  return exit_code == kKilledExit && elapsed >= std::chrono::seconds(timeout);
}

ToolResult command_result(const std::string& id, const CommandOutput& out, int timeout,
                          std::chrono::steady_clock::duration elapsed) {
  const bool past_deadline = !out.end && out.stream_error_code == "deadline_exceeded";
  if (!out.end && !past_deadline) {
    return ToolResult::failure(out.stream_error.empty()
                                   ? "the command ended without an exit status"
                                   : "the command failed: " + out.stream_error);
  }
  ToolResult result;
  const int exit_code = past_deadline ? kKilledExit : e2b::exit_code_from_end(*out.end);
  const bool timed_out = past_deadline || hit_deadline(exit_code, elapsed, timeout);
  result.text = section("stdout", out.stdout_text) + section("stderr", out.stderr_text) +
                "exit code: " + std::to_string(exit_code) + "\n";
  if (timed_out) {
    result.is_error = true;
    result.text += "The command was killed after its timeout of " + std::to_string(timeout) +
                   " s; pass a larger timeout, or background: true for servers.\n";
  }
  result.structured = {{"sandbox_id", id},
                       {"stdout", clip(out.stdout_text)},
                       {"stderr", clip(out.stderr_text)},
                       {"exit_code", exit_code},
                       {"timed_out", timed_out}};
  return result;
}

// A cancelled foreground command must not keep running in the sandbox.
void kill_process(const e2b::SandboxPlane& plane, int pid) {
  (void)plane.rpc("process.Process/SendSignal",
                  {{"process", {{"pid", pid}}}, {"signal", "SIGNAL_SIGKILL"}});
}

}  // namespace

ToolResult run_code(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string& id = plane->id();
  json request = {{"code", string_arg(call.args, "code")},
                  {"timeout", int_arg(call.args, "timeout", kDefaultCodeTimeout)}};
  if (auto context = string_arg(call.args, "context"); !context.empty()) {
    request["context_id"] = context;
  } else {
    request["language"] = string_arg(call.args, "language", "python");
  }
  auto stream = plane->execute(request);
  if (!stream) return ToolResult::failure(stream.error().message());
  CodeOutput out;
  if (auto read = read_code_lines(**stream, call.cancel, out); !read) {
    return ToolResult::failure("run_code: " + read.error().message());
  }
  return code_result(id, std::move(out));
}

ToolResult run_command(Call& call) {
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string& id = plane->id();
  const bool background = call.args.value("background", false);
  const int timeout = int_arg(call.args, "timeout", kDefaultCommandTimeout);
  http::Headers headers{{"Keepalive-Ping-Interval", "30"}};
  if (!background) headers.emplace_back("Connect-Timeout-Ms", std::to_string(timeout * 1000LL));
  const auto started = std::chrono::steady_clock::now();
  auto stream = plane->stream("process.Process/Start", start_request(call.args), headers);
  if (!stream) return ToolResult::failure(stream.error().message());
  CommandOutput out;
  if (auto read = read_command(**stream, call.cancel, background, out); !read) {
    if (out.pid && !background) kill_process(*plane, *out.pid);
    return ToolResult::failure("run_command: " + read.error().message());
  }
  if (!background) {
    return command_result(id, out, timeout, std::chrono::steady_clock::now() - started);
  }
  ToolResult result;
  result.structured = {{"sandbox_id", id}, {"pid", out.pid.value_or(0)}};
  result.text = "Started in the background as pid " + std::to_string(out.pid.value_or(0)) +
                " in sandbox " + id + "; it keeps running after this call.";
  return result;
}

}  // namespace abx::mcp::tools
