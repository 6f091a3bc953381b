#include "cli/process_logs.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cli/command_output.h"
#include "cli/sandbox_end.h"
#include "common/base64.h"

namespace abx::cli {
namespace {

// The route's largest page.
constexpr size_t kPageBytes = 128 * 1024;
// The route answers at once, so following is asking again: soon after
// output came, less often while the command is quiet.
constexpr auto kQuickestPoll = std::chrono::milliseconds(50);
constexpr auto kSlowestPoll = std::chrono::milliseconds(500);
constexpr int kBrokenPipeExit = 128 + SIGPIPE;
constexpr int kSandboxEndedExit = 128 + SIGKILL;

Result<json> fetch_page(const Endpoint& endpoint, const std::string& id, int pid, uint64_t offset) {
  const std::string target = "/abx/v1/sandboxes/" + http::url_encode(id) + "/processes/" +
                             std::to_string(pid) + "/output?offset=" + std::to_string(offset) +
                             "&limit=" + std::to_string(kPageBytes);
  auto response = http::Client(endpoint.url).send(api_request(endpoint, "GET", target));
  if (!response) return response.error();
  if (response->status != 200) return Error{describe_failure(*response)};
  auto page = json::parse(response->body, nullptr, false);
  if (!page.is_object())
    return Error{"the daemon's answer for pid " + std::to_string(pid) +
                 " is not a JSON object: " + response->body.substr(0, 200)};
  return page;
}

class OutputFollower {
 public:
  OutputFollower(const Endpoint& endpoint, const std::string& id, int pid)
      : endpoint_(endpoint), id_(id), pid_(pid), output_(false) {}

  Result<int> run(bool follow) {
    const IgnoredSigpipe sigpipe;
    auto wait = kQuickestPoll;
    for (;;) {
      auto page = fetch_page(endpoint_, id_, pid_, offset_);
      if (!page) return follow && answered_ ? ended_under_us(page.error()) : page.error();
      answered_ = true;
      const uint64_t before = offset_;
      if (!print(*page)) return kBrokenPipeExit;
      if (offset_ < page->value("end", uint64_t{0})) continue;  // more to read at once
      if (!follow) break;
      if (page->value("ended", false)) {
        output_.finish();
        return page->value("exitCode", 0);
      }
      wait = offset_ != before ? kQuickestPoll : std::min(wait * 2, kSlowestPoll);
      std::this_thread::sleep_for(wait);
    }
    output_.finish();
    return 0;
  }

 private:
  // Writes a page's chunks in order; false when our reader is gone.
  bool print(const json& page) {
    note_dropped(page.value("start", uint64_t{0}));
    for (const auto& chunk : page.value("chunks", json::array())) {
      auto bytes = base64::decode(chunk.value("data", ""));
      if (!bytes) continue;
      const bool written = chunk.value("stream", "") == "stderr" ? output_.write_stderr(*bytes)
                                                                 : output_.write_stdout(*bytes);
      if (!written) return false;
    }
    offset_ = std::max(offset_, page.value("next", offset_));
    return true;
  }

  // The sandbox keeps the newest output only: say where a part is missing
  // rather than join what came before and after it.
  void note_dropped(uint64_t start) {
    if (start <= offset_) return;
    write_all(STDERR_FILENO, "abx: " + std::to_string(start - offset_) +
                                 " bytes of its output are no longer kept here (the sandbox "
                                 "keeps its newest --output-buffer bytes)\n");
  }

  // A page failed while following: the sandbox ending is the usual reason.
  Result<int> ended_under_us(const Error& error) const {
    auto why = sandbox_end_reason(endpoint_, id_);
    if (!why) return error;
    write_all(STDERR_FILENO, "abx: " + sandbox_ended_message(id_, *why) + "\n");
    return kSandboxEndedExit;
  }

  const Endpoint& endpoint_;
  const std::string& id_;
  const int pid_;
  CommandOutput output_;
  uint64_t offset_ = 0;
  bool answered_ = false;  // a page came: the pid is a command of the sandbox
};

}  // namespace

Result<int> show_process_output(const Endpoint& endpoint, const std::string& id, int pid,
                                bool follow) {
  return OutputFollower(endpoint, id, pid).run(follow);
}

}  // namespace abx::cli
