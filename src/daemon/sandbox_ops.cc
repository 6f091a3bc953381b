#include "daemon/sandbox_ops.h"

#include <unistd.h>

#include <optional>

#include "daemon/service.h"
#include "runtime/sandbox_net.h"

namespace abx::daemon::sandbox_ops {
namespace {

namespace sfs = runtime::sandbox_fs;

// `work()`'s value, computed on the short lane.
template <class T, class Work>
Task<T> short_lane(Service& service, Work work) {
  std::optional<T> out;
  co_await service.pool().run([&] { out.emplace(work()); });
  co_return std::move(*out);
}

// `work()`'s value, computed on the long lane.
template <class T, class Work>
Task<T> long_lane(Service& service, Work work) {
  std::optional<T> out;
  co_await service.pool().run_long([&] { out.emplace(work()); });
  co_return std::move(*out);
}

}  // namespace

Task<Result<EntryInfo>> stat(Service& service, const runtime::Sandbox& sb, std::string path) {
  co_return co_await short_lane<Result<EntryInfo>>(service, [&] { return sfs::stat(sb, path); });
}

Task<Result<std::vector<EntryInfo>>> list_dir(Service& service, const runtime::Sandbox& sb,
                                              std::string path, int depth) {
  co_return co_await short_lane<Result<std::vector<EntryInfo>>>(
      service, [&] { return sfs::list_dir(sb, path, depth); });
}

Task<Status> make_dir(Service& service, const runtime::Sandbox& sb, std::string path,
                      uint32_t owner_uid) {
  co_return co_await short_lane<Status>(service,
                                        [&] { return sfs::make_dir(sb, path, owner_uid); });
}

Task<Status> move(Service& service, const runtime::Sandbox& sb, std::string from, std::string to) {
  co_return co_await short_lane<Status>(service, [&] { return sfs::move(sb, from, to); });
}

Task<Status> remove(Service& service, const runtime::Sandbox& sb, std::string path) {
  co_return co_await short_lane<Status>(service, [&] { return sfs::remove(sb, path); });
}

Task<Result<UniqueFd>> open_read(Service& service, runtime::Sandbox& sb, std::string path,
                                 uint32_t uid, uint32_t gid) {
  co_return co_await short_lane<Result<UniqueFd>>(
      service, [&] { return sfs::open_read_as(sb, path, uid, gid); });
}

Task<Result<std::string>> read_chunk(Service& service, int fd, size_t max) {
  co_return co_await short_lane<Result<std::string>>(service, [&]() -> Result<std::string> {
    std::string buffer(max, '\0');
    for (;;) {
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::from_errno("read");
      buffer.resize(static_cast<size_t>(n));
      return buffer;
    }
  });
}

Task<void> file_io(Service& service, std::function<void()> step) {
  co_await service.pool().run(std::move(step));
}

Task<Result<std::shared_ptr<Subscription>>> start_process(Service& service, ProcessTable& table,
                                                          StartProcess request,
                                                          boost::asio::any_io_executor subscriber) {
  co_return co_await short_lane<Result<std::shared_ptr<Subscription>>>(
      service, [&] { return table.start(std::move(request), subscriber); });
}

Task<Status> send_input(Service& service, ProcessTable& table, ProcessSelector selector,
                        std::string bytes, bool to_pty) {
  co_return co_await short_lane<Status>(service,
                                        [&] { return table.send_input(selector, bytes, to_pty); });
}

Task<Status> signal(Service& service, ProcessTable& table, ProcessSelector selector, int signo) {
  co_return co_await short_lane<Status>(service, [&] { return table.signal(selector, signo); });
}

Task<CommandProcesses> command_processes(Service& service, const runtime::Sandbox& sb) {
  co_return co_await short_lane<CommandProcesses>(service, [&] { return sb.command_processes(); });
}

Task<Result<runtime::OutputSlice>> read_output(Service& service, runtime::Sandbox& sb, int pid,
                                               uint64_t offset, size_t max) {
  co_return co_await short_lane<Result<runtime::OutputSlice>>(
      service, [&] { return sb.read_output(pid, offset, max); });
}

Task<Status> close_stdin(Service& service, ProcessTable& table, ProcessSelector selector) {
  co_return co_await short_lane<Status>(service, [&] { return table.close_stdin(selector); });
}

Task<Status> resize_pty(Service& service, ProcessTable& table, ProcessSelector selector,
                        uint16_t cols, uint16_t rows) {
  co_return co_await short_lane<Status>(service,
                                        [&] { return table.resize_pty(selector, cols, rows); });
}

Task<Result<std::unique_ptr<DirWatch>>> open_watch(Service& service,
                                                   std::shared_ptr<runtime::Sandbox> sandbox,
                                                   std::string path, bool recursive) {
  co_return co_await short_lane<Result<std::unique_ptr<DirWatch>>>(
      service, [&] { return DirWatch::open(sandbox, path, recursive); });
}

Task<std::vector<WatchEvent>> drain_watch(Service& service, std::shared_ptr<DirWatch> watch) {
  co_return co_await short_lane<std::vector<WatchEvent>>(service, [&] { return watch->drain(); });
}

Task<Result<interp::ContextInfo>> create_context(Service& service,
                                                 std::shared_ptr<interp::Interpreter> interpreter,
                                                 std::string language, std::string cwd) {
  co_return co_await long_lane<Result<interp::ContextInfo>>(
      service, [&] { return interpreter->create_context(language, cwd); });
}

Task<std::vector<interp::ContextInfo>> list_contexts(
    Service& service, std::shared_ptr<interp::Interpreter> interpreter) {
  co_return co_await long_lane<std::vector<interp::ContextInfo>>(
      service, [&] { return interpreter->list_contexts(); });
}

Task<Status> restart_context(Service& service, std::shared_ptr<interp::Interpreter> interpreter,
                             std::string id) {
  co_return co_await long_lane<Status>(service, [&] { return interpreter->restart_context(id); });
}

Task<Status> remove_context(Service& service, std::shared_ptr<interp::Interpreter> interpreter,
                            std::string id) {
  co_return co_await long_lane<Status>(service, [&] { return interpreter->remove_context(id); });
}

void execute_code(Service& service, std::function<void()> execution) {
  service.pool().post_long(std::move(execution));
}

Task<Result<UniqueFd>> connect_port(Service& service, const runtime::Sandbox& sb, uint16_t port) {
  co_return co_await short_lane<Result<UniqueFd>>(service,
                                                  [&] { return runtime::connect_tcp(sb, port); });
}

}  // namespace abx::daemon::sandbox_ops
