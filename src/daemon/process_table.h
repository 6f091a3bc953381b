// The processes started in one sandbox: their output is drained from the
// pipes continuously (so a process never blocks on a full pipe) and fanned out
// as envd ProcessEvent JSON to every stream attached to them.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/blocking_pool.h"
#include "daemon/http_exchange.h"
#include "daemon/output_lines.h"
#include "daemon/sandbox_log.h"
#include "runtime/runtime.h"

namespace abx::daemon {

struct ProcessConfig {
  std::string cmd;
  std::vector<std::string> args;
  std::map<std::string, std::string> envs;  // as the client asked (reported by List)
  std::string cwd;
};

struct StartProcess {
  ProcessConfig config;
  std::string tag;
  runtime::ProcessSpec spec;             // argv, full env, cwd, uid, pty, stdin
  std::chrono::milliseconds timeout{0};  // process lifetime; 0 = none
  // When set, hears the output line by line and the end (a template's start command).
  std::shared_ptr<OutputLines> lines;
};

// Selects a process by pid, or by tag when pid is 0.
struct ProcessSelector {
  int pid = 0;
  std::string tag;
};

// How a process's stream ended, beyond its end event.
enum class StreamEnd {
  kExited,          // the process ended on its own or by a signal
  kDeadline,        // Connect-Timeout-Ms passed and the process was killed for it
  kSandboxStopped,  // the sandbox went away (killed, timed out) before the process ended
};

struct StreamEvent {
  std::string json;  // {"event":{...}}
  bool last = false;
  StreamEnd end = StreamEnd::kExited;  // meaningful on the last event only
};

// One attached stream. Events are pushed on its executor (the connection's strand).
class Subscription {
 public:
  explicit Subscription(boost::asio::any_io_executor executor) : wake_(std::move(executor)) {}
  boost::asio::any_io_executor executor() { return wake_.get_executor(); }
  void push(StreamEvent event) {
    add_queued(event.json.size());
    push_counted(std::move(event));
  }
  // An event add_queued already counted (published from another thread).
  void push_counted(StreamEvent event);
  // The next event, or one with empty json after `wait` of silence.
  http::Task<StreamEvent> next(std::chrono::milliseconds wait);
  // Bytes of events published to it and not yet taken by next(): the
  // process's output waits while its slowest stream holds too many.
  void add_queued(size_t bytes) { queued_ += bytes; }
  size_t queued() const { return queued_; }

 private:
  boost::asio::steady_timer wake_;
  std::deque<StreamEvent> queue_;
  std::atomic<size_t> queued_{0};
};

struct ProcessSummary {
  int pid = 0;
  std::string tag;
  ProcessConfig config;
};

// What a stream of each stdout and stderr holds while no daemon reads it
// (ServeOptions::output_buffer).
inline constexpr size_t kDefaultOutputBuffer = 1024 * 1024;

class ProcessTable : public std::enable_shared_from_this<ProcessTable> {
 public:
  // `pool` runs the deadline's kill: a request to the sandbox's init, which
  // must not block the io thread the deadline fires on.
  // `log` hears each command's start and end (the sandbox's logs).
  // `in_band`: commands run in band (runtime::Sandbox::spawn_in_band): the
  // sandbox's agent holds their pipes, this table follows their output from
  // the agent's ring and holds no fd of them.
  // `output_buffer`: the newest output of each command the agent keeps, and
  // each output pipe's size (what a command writes while no daemon reads
  // before its writes wait), the pipe at most `pipe_cap` (0: no cap): a
  // create may ask for a larger ring, not for more kernel pipe memory than
  // the operator's --output-buffer.
  ProcessTable(boost::asio::io_context& ioc, BlockingPool& pool,
               std::shared_ptr<runtime::Sandbox> sandbox,
               std::shared_ptr<SandboxLog> log = std::make_shared<SandboxLog>(),
               size_t output_buffer = kDefaultOutputBuffer, size_t pipe_cap = 0,
               bool in_band = false)
      : ioc_(ioc),
        pool_(pool),
        sandbox_(std::move(sandbox)),
        log_(std::move(log)),
        output_buffer_(output_buffer),
        pipe_bytes_(pipe_cap ? std::min(output_buffer, pipe_cap) : output_buffer),
        in_band_(in_band) {}

  // Takes over commands an earlier daemon started in this sandbox
  // (runtime::Sandbox::adopt_processes): listed again, their output and end
  // streamed to whoever attaches, their deadlines kept. What they wrote
  // before the first attach waits for it (twice the output buffer, shared
  // by the sandbox's adopted commands, at least 64 KiB each).
  void adopt(std::vector<runtime::AdoptedProcess> adopted);
  // Takes over in-band commands (runtime::Sandbox::list_processes) that are
  // not in the table: followed from where their last follower got to.
  void adopt_in_band(const std::vector<runtime::ListedProcess>& listed);

  // Spawns (blocks briefly: one request to the sandbox's init). The returned
  // subscription already holds the start event.
  Result<std::shared_ptr<Subscription>> start(StartProcess request,
                                              boost::asio::any_io_executor subscriber);
  Result<std::shared_ptr<Subscription>> attach(const ProcessSelector& selector,
                                               boost::asio::any_io_executor subscriber);
  void detach(const std::shared_ptr<Subscription>& subscription);

  std::vector<ProcessSummary> list();
  Status send_input(const ProcessSelector& selector, const std::string& bytes, bool to_pty);
  Status signal(const ProcessSelector& selector, int signo);
  // Returns once the selected process has been reaped (its exit status came),
  // is not in the table, or `limit` passed. Waits without blocking a thread.
  http::Task<void> wait_reaped(const ProcessSelector& selector, std::chrono::milliseconds limit);
  Status close_stdin(const ProcessSelector& selector);
  Status resize_pty(const ProcessSelector& selector, uint16_t cols, uint16_t rows);

  struct Managed;  // one running process (defined in process_table.cc)

 private:
  Result<std::shared_ptr<Managed>> find(const ProcessSelector& selector);
  // Starts forwarding a process's output and waiting for its end.
  void follow(std::shared_ptr<Managed> process, runtime::Process& proc,
              std::chrono::milliseconds timeout);
  // A command an earlier daemon started, as its label describes it, what it
  // writes kept for the first attach (at most `backlog`), its deadline's
  // time left in `timeout`.
  std::shared_ptr<Managed> found_again(int pid, const std::string& label, size_t backlog,
                                       std::chrono::milliseconds* timeout);
  // Lists an in-band command and follows its output from offset `from`.
  void track_in_band(std::shared_ptr<Managed> process, uint64_t from,
                     std::chrono::milliseconds timeout);
  using Output = std::pair<std::shared_ptr<boost::asio::posix::stream_descriptor>, std::string>;
  // Forwards output, enforces the deadline, then sends the end event.
  // SIGKILLs a process past its deadline; in a paused sandbox (EBUSY) it
  // tries again every second, so the kill lands once the sandbox resumes.
  void kill_at_deadline(std::shared_ptr<Managed> process);
  http::Task<void> supervise(std::shared_ptr<Managed> process, std::vector<Output> outputs,
                             std::shared_ptr<boost::asio::posix::stream_descriptor> exit_source,
                             std::chrono::milliseconds timeout);
  http::Task<void> supervise_in_band(std::shared_ptr<Managed> process, uint64_t from,
                                     std::chrono::milliseconds timeout);
  void arm_deadline(const std::shared_ptr<Managed>& process, std::chrono::milliseconds timeout);
  // The end: logged, recorded, and the end event to every stream.
  void finish(const std::shared_ptr<Managed>& process, const runtime::ExitInfo& exit,
              std::string error);
  Result<runtime::Process> spawn(const runtime::ProcessSpec& spec);

  boost::asio::io_context& ioc_;
  BlockingPool& pool_;
  std::shared_ptr<runtime::Sandbox> sandbox_;
  std::shared_ptr<SandboxLog> log_;
  const size_t output_buffer_;
  const size_t pipe_bytes_;
  const bool in_band_;
  std::mutex mutex_;
  std::map<int, std::shared_ptr<Managed>> processes_;
};

}  // namespace abx::daemon
