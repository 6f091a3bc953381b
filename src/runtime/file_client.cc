#include "runtime/file_client.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/protocol.h"
#include "common/fd_io.h"
#include "runtime/local_sandbox.h"

namespace abx::runtime::file_client {
namespace {

// How long an answer may take: init kills a worker that is not done within
// a minute (or whose daemon hung up), and this daemon thread is not held
// longer either, whatever sandbox code does to the worker.
constexpr time_t kAnswerSeconds = 65;
// A listing bigger than this is refused rather than held in the daemon.
constexpr size_t kMaxListingBytes = 64 << 20;
// The data pipe's size: one trip's worth of an upload (routes_files.cc).
constexpr int kPipeBytes = 256 << 10;
constexpr const char* kStep = "file operation in the sandbox";

Status set_answer_timeout(int fd) {
  const timeval timeout{kAnswerSeconds, 0};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0)
    return Error::from_errno("set socket timeout");
  return {};
}

// An init that predates file workers answers with a plain Reply.
bool is_old_init(const std::string& bytes) {
  proto::Reply old;
  return proto::decode(bytes, &old) && old.errnum == EPROTO && old.step == "decode request";
}

Result<proto::FileReply> next_reply(int session, std::vector<UniqueFd>* fds) {
  std::string bytes;
  auto got = proto::recv_message(session, &bytes, fds);
  if (!got && (got.error().errnum == EAGAIN || got.error().errnum == EWOULDBLOCK))
    return Error{kStep, ETIMEDOUT, "no answer in " + std::to_string(kAnswerSeconds) + " s"};
  if (!got) return got.error();
  if (!*got)
    return Error{kStep, ECONNRESET, "it ended without an answer (killed, or out of memory)"};
  proto::FileReply reply;
  if (!proto::decode(bytes, &reply)) {
    if (is_old_init(bytes)) return Error{kStep, ENOSYS, kNoFileWorkers};
    return Error{kStep, EPROTO, "malformed answer"};
  }
  if (!reply.ok()) return Error{reply.step, reply.errnum, reply.detail};
  return reply;
}

// The pipe a write's bytes reach init through; our end, handed to the caller
// as FileResult::data, is non-blocking.
Result<Pipe> data_pipe() {
  auto pipe = make_pipe();
  if (!pipe) return pipe.error();
  (void)::fcntl(pipe->write.get(), F_SETPIPE_SZ, kPipeBytes);  // a smaller pipe works too
  if (::fcntl(pipe->write.get(), F_SETFL, O_NONBLOCK) != 0) return Error::from_errno("pipe");
  return pipe;
}

}  // namespace

Result<FileResult> run(const fs::path& control_socket, const FileRequest& request) {
  auto session = connect_control(control_socket, /*wait=*/false);
  if (!session && session.error().errnum == EAGAIN)
    return Error{kStep, EBUSY, "its init is not taking requests (try again)"};
  if (!session) return session.error();
  if (auto s = set_answer_timeout(session->get()); !s) return s.error();
  const bool writes = request.op == FileOp::kWrite;
  Pipe pipe;
  if (writes) {
    auto made = data_pipe();
    if (!made) return made.error();
    pipe = std::move(*made);
  }
  proto::Request message;
  message.type = proto::RequestType::kFile;
  message.file = request;
  std::vector<int> fds;
  if (writes) fds.push_back(pipe.read.get());
  if (auto s = proto::send_message(session->get(), proto::encode(message), fds); !s)
    return s.error();
  pipe.read.reset();
  FileResult result;
  size_t listed_bytes = 0;
  for (;;) {
    std::vector<UniqueFd> received;
    auto reply = next_reply(session->get(), &received);
    if (!reply) return reply.error();
    for (auto& entry : reply->entries) {
      listed_bytes += sizeof entry + entry.name.size() + entry.path.size() +
                      entry.symlink_target.size() + entry.owner.size() + entry.group.size();
      if (listed_bytes > kMaxListingBytes)
        return Error{"list", E2BIG, "over 64 MiB of entries: list fewer levels"};
      result.entries.push_back(std::move(entry));
    }
    if (!received.empty()) result.fd = std::move(received.front());
    if (writes && !reply->done) {
      result.data = std::move(pipe.write);
      result.session = std::move(*session);
      return result;
    }
    if (reply->done) return result;
  }
}

Result<uint64_t> outcome(int session) {
  std::vector<UniqueFd> received;
  auto reply = next_reply(session, &received);
  if (!reply) return reply.error();
  return reply->written;
}

// The commit goes before the pipe's EOF, so the worker finds it there.
Result<uint64_t> finish_write(FileResult& io, uint64_t sent) {
  proto::FileReply commit;
  commit.written = sent;
  const Status committed = proto::send_message(io.session.get(), proto::encode(commit), {});
  io.data.reset();
  if (!committed) return committed.error();
  return outcome(io.session.get());
}

}  // namespace abx::runtime::file_client
