#include "runtime/agent_follower.h"

#include <fcntl.h>

#include <algorithm>

#include "agent/protocol.h"

namespace abx::runtime {
namespace {

class ControlFollower final : public OutputFollower {
 public:
  ControlFollower(UniqueFd connection, int pid) : fd_(std::move(connection)), pid_(pid) {}

  int fd() const override { return fd_.get(); }

  Status ask(uint64_t offset, uint32_t wait_ms) override {
    proto::Request request{proto::RequestType::kRead, {}, pid_, 0};
    request.offset = offset;
    request.max_bytes = proto::kMaxReadBytes;
    request.wait_ms = std::min(wait_ms, proto::kMaxReadWaitMs);
    // One small message, and at most two reads in flight: the send does not wait.
    return proto::send_message(fd_.get(), proto::encode(request), {});
  }

  Status ask_next(uint32_t wait_ms) override { return ask(proto::kFollowOn, wait_ms); }

  Result<std::optional<OutputSlice>> answer() override {
    std::string bytes;
    std::vector<UniqueFd> fds;  // none expected; closed if any came
    auto got = proto::recv_message(fd_.get(), &bytes, &fds);
    if (!got && got.error().errnum == EAGAIN) return std::optional<OutputSlice>();
    if (!got) return got.error();
    if (!*got) return Error{"follow output", ECONNRESET, "the sandbox's agent went away"};
    proto::ReadReply reply;
    if (!proto::decode(bytes, &reply)) return Error{"follow output", EPROTO, "malformed reply"};
    if (reply.errnum != 0) return Error::with_message(reply.step, reply.errnum);
    return std::optional<OutputSlice>(std::move(reply.slice));
  }

 private:
  UniqueFd fd_;
  const int pid_;
};

}  // namespace

std::unique_ptr<OutputFollower> make_control_follower(UniqueFd connection, int pid) {
  (void)::fcntl(connection.get(), F_SETFL, ::fcntl(connection.get(), F_GETFL) | O_NONBLOCK);
  return std::make_unique<ControlFollower>(std::move(connection), pid);
}

}  // namespace abx::runtime
