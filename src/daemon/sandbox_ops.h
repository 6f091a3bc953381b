// The sandbox plane's blocking calls as awaitables, so that no route blocks
// an io thread and no route picks a thread itself. This file decides the
// lane: short work (file operations, spawns, signals, watch setup) on
// BlockingPool::run; work whose length the caller controls (code executions,
// interpreter contexts, which start a language runtime) on the long lane, so
// that creates, kills and file calls never wait behind them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "daemon/dir_watch.h"
#include "daemon/http_exchange.h"
#include "daemon/process_table.h"
#include "interp/interp.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon {
class Service;
}

namespace abx::daemon::sandbox_ops {

using http::Task;
using runtime::sandbox_fs::EntryInfo;

// Files (runtime::sandbox_fs, paths absolute inside the sandbox).
Task<Result<EntryInfo>> stat(Service& service, const runtime::Sandbox& sb, std::string path);
Task<Result<std::vector<EntryInfo>>> list_dir(Service& service, const runtime::Sandbox& sb,
                                              std::string path, int depth);
Task<Status> make_dir(Service& service, const runtime::Sandbox& sb, std::string path,
                      uint32_t owner_uid);
Task<Status> move(Service& service, const runtime::Sandbox& sb, std::string from, std::string to);
Task<Status> remove(Service& service, const runtime::Sandbox& sb, std::string path);
// As sandbox uid/gid, with that user's permissions (sandbox_fs::open_read_as).
Task<Result<UniqueFd>> open_read(Service& service, runtime::Sandbox& sb, std::string path,
                                 uint32_t uid, uint32_t gid);
// Up to `max` bytes from `fd`; empty at end of file.
Task<Result<std::string>> read_chunk(Service& service, int fd, size_t max);
// One step of an upload (open, write a piece, sync, remove a partial file):
// sandbox file writes, on the short lane.
Task<void> file_io(Service& service, std::function<void()> step);

// Processes.
Task<Result<std::shared_ptr<Subscription>>> start_process(Service& service, ProcessTable& table,
                                                          StartProcess request,
                                                          boost::asio::any_io_executor subscriber);
Task<Status> send_input(Service& service, ProcessTable& table, ProcessSelector selector,
                        std::string bytes, bool to_pty);
Task<Status> signal(Service& service, ProcessTable& table, ProcessSelector selector, int signo);
// Each API command's processes (runtime::Sandbox::command_processes).
using CommandProcesses = std::map<int, std::vector<runtime::ProcessEntry>>;
Task<CommandProcesses> command_processes(Service& service, const runtime::Sandbox& sb);
// A command's output as the sandbox's agent keeps it (runtime::Sandbox::read_output).
Task<Result<runtime::OutputSlice>> read_output(Service& service, runtime::Sandbox& sb, int pid,
                                               uint64_t offset, size_t max);
Task<Status> close_stdin(Service& service, ProcessTable& table, ProcessSelector selector);
Task<Status> resize_pty(Service& service, ProcessTable& table, ProcessSelector selector,
                        uint16_t cols, uint16_t rows);

// Directory watches: opening one and draining it both resolve directories
// in the sandbox (a recursive watch adds the subdirectories it sees created).
Task<Result<std::unique_ptr<DirWatch>>> open_watch(Service& service,
                                                   std::shared_ptr<runtime::Sandbox> sandbox,
                                                   std::string path, bool recursive);
Task<std::vector<WatchEvent>> drain_watch(Service& service, std::shared_ptr<DirWatch> watch);

// The code interpreter: all on the long lane, since a context's creation
// starts a language runtime and its mutex may be held by one meanwhile.
Task<Result<interp::ContextInfo>> create_context(Service& service,
                                                 std::shared_ptr<interp::Interpreter> interpreter,
                                                 std::string language, std::string cwd);
Task<std::vector<interp::ContextInfo>> list_contexts(
    Service& service, std::shared_ptr<interp::Interpreter> interpreter);
Task<Status> restart_context(Service& service, std::shared_ptr<interp::Interpreter> interpreter,
                             std::string id);
Task<Status> remove_context(Service& service, std::shared_ptr<interp::Interpreter> interpreter,
                            std::string id);
// Runs one code execution without waiting for it (it reports through its own callbacks).
void execute_code(Service& service, std::function<void()> execution);

// A TCP connection to `port` inside the sandbox's network namespace.
Task<Result<UniqueFd>> connect_port(Service& service, const runtime::Sandbox& sb, uint16_t port);

}  // namespace abx::daemon::sandbox_ops
