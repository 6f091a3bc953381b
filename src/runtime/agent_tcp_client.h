// A client of a sandbox agent's TCP transport (agent/protocol.h): what a
// daemon that is not on the sandbox's host speaks to the agent. Blocking;
// one request at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/protocol.h"
#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime {

class AgentTcpClient {
 public:
  // Sends the Hello on `connected` (a TCP connection to the agent's port). A
  // wrong token or version is known only at the first call: the agent closes.
  static Result<AgentTcpClient> start(UniqueFd connected, const std::string& token);

  // A supervised command whose output the agent keeps (ring_bytes, 0: the
  // agent's default) and which it kills after timeout_ms (0: never). With
  // spec.stdin_pipe its stdin stays open for send_input until close_stdin;
  // with spec.pty what its terminal shows is its stdout.
  Result<int> spawn(const ProcessSpec& spec, uint32_t timeout_ms, uint32_t ring_bytes = 0);
  // With `wait_ms`, and nothing past `offset` yet, the agent answers once
  // output comes, the command ends, or wait_ms pass (an empty slice).
  Result<OutputSlice> read(int pid, uint64_t offset, uint32_t max_bytes = proto::kMaxReadBytes,
                           uint32_t wait_ms = 0);
  Status signal(int pid, int signo);
  // At most proto::kMaxInputBytes at a time; EAGAIN while the command has
  // not read proto::kMaxPendingInput sent before.
  Status send_input(int pid, const std::string& bytes);
  Status close_stdin(int pid);
  Status resize(int pid, uint16_t cols, uint16_t rows);
  // Every command the agent supervises, with the label it was spawned with:
  // what a daemon rebuilds its view of the sandbox from.
  Result<std::vector<proto::Supervised>> list();

  // A file operation takes the connection over (the agent hands it to a
  // worker inside the sandbox, which ends with the operation): one client
  // per operation, spent by it.
  // kStat, kList (the entries), kMakeDir, kSymlink, kMove, kRemove (none).
  Result<std::vector<EntryInfo>> file_op(const FileRequest& request) &&;
  // kWrite: the bytes written, once the file is synced and in place.
  Result<uint64_t> write_file(const FileRequest& request, std::string_view data) &&;
  // The bytes of the regular file at request.path (op is set to kReadFile).
  Result<std::string> read_file(FileRequest request) &&;

 private:
  explicit AgentTcpClient(UniqueFd fd) : fd_(std::move(fd)) {}
  Result<std::string> call(const proto::Request& request);
  // A request answered with a Reply: its error, or the Reply.
  Result<proto::Reply> call_for_reply(const proto::Request& request);
  Status status_of(const proto::Request& request);
  Status send_file_request(const FileRequest& request);
  Result<proto::FileReply> next_file_reply();
  UniqueFd fd_;
};

}  // namespace abx::runtime
