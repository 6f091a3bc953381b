// The read and write loops every file, pipe and socket copy needs: EINTR and
// short writes retried, reads until EOF, files opened close-on-exec.
#pragma once

#include <signal.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx {

// Blocks SIGPIPE for this thread while it lives and discards those raised
// meanwhile, so a closed reader shows up as EPIPE (write, send, splice(2)).
class SigpipeBlocked {
 public:
  SigpipeBlocked();
  ~SigpipeBlocked();
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
  void discard_pending();

 private:
  sigset_t sigpipe_{}, previous_{};
};

// A pipe whose two ends are close-on-exec: a child gets an end only by an
// explicit dup2 or fd passing. A failure is Error{"pipe", errno, detail}.
struct Pipe {
  UniqueFd read, write;
};
Result<Pipe> make_pipe(std::string detail = {});

// Writes all of `data`. A reader that closed its pipe or socket gives EPIPE, never a SIGPIPE
// that would kill the process. A failure is Error{step, errno, detail}.
Status write_all(int fd, std::string_view data, std::string step = "write",
                 std::string detail = {});

// One read(2), retried on EINTR: the bytes read (0 at EOF), or -1 with errno set.
ssize_t read_some(int fd, char* buffer, size_t size);

// Hands what `fd` holds to `sink` piece by piece until EOF or the first failing sink. A read
// failure is Error{"read", errno, detail}.
using PieceSink = std::function<Status(std::string_view)>;
Status read_to_end(int fd, const PieceSink& sink, const std::string& detail);

// The whole file (opened close-on-exec), or the open/read error naming `path`.
Result<std::string> read_file(const std::filesystem::path& path);

}  // namespace abx
