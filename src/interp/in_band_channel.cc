// An in-band driver: its requests go to the sandbox's agent (send_input),
// which queues them for the driver's stdin, and its output comes from the
// agent's ring through a follower of the context's own, one waiting read at
// a time, so nothing polls while the driver is quiet.
#include <poll.h>

#include <thread>

#include "interp/driver_channel.h"

namespace abx::interp {
namespace {

using Clock = std::chrono::steady_clock;
// One read waits at most this long in the agent; a wait() shorter than it
// leaves the read asked and takes its answer on a later wait().
constexpr uint32_t kFollowWaitMs = 30 * 1000;
// After an answer with nothing in it, before the next read: never a spin.
constexpr auto kEmptyAnswerPause = std::chrono::milliseconds(10);
// How long input may wait for the agent's queue to take it (the driver
// reads its requests once it finished the one before).
constexpr auto kInputWait = std::chrono::seconds(10);

class InBandChannel final : public DriverChannel {
 public:
  InBandChannel(runtime::Sandbox& sandbox, int pid, uint64_t offset)
      : sandbox_(sandbox), pid_(pid), offset_(offset) {}

  int pid() const override { return pid_; }
  uint64_t output_offset() const override { return offset_; }

  // In pieces the agent takes; while its queue is full (EAGAIN), retried.
  bool send(const std::string& bytes) override {
    const auto give_up = Clock::now() + kInputWait;
    std::string_view rest = bytes;
    while (!rest.empty()) {
      const std::string piece(rest.substr(0, runtime::kMaxInputPiece));
      const Status sent = sandbox_.send_input(pid_, piece);
      if (sent) {
        rest.remove_prefix(piece.size());
      } else if (sent.error().errnum != EAGAIN || Clock::now() >= give_up) {
        return false;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    return true;
  }

  Ready wait(std::chrono::milliseconds wait) override {
    const auto deadline = Clock::now() + wait;
    while (out_.empty() && err_.empty() && !ended_) {
      if (!ask()) break;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd ready{follower_->fd(), POLLIN, 0};
      if (left.count() <= 0 || ::poll(&ready, 1, static_cast<int>(left.count())) != 1) break;
      if (!take_answer()) break;
    }
    return {!out_.empty() || ended_, !err_.empty() || ended_, ended_};
  }

  ReadState read(runtime::OutputStream stream, std::string& out) override {
    std::string& kept = stream == runtime::OutputStream::kStdout ? out_ : err_;
    out += kept;
    kept.clear();
    return ended_ ? ReadState::kEof : ReadState::kOpen;
  }

  std::string exit_description() override { return ended_how_; }

 private:
  // A waiting read is out (asked before, or now); false once the driver
  // cannot be followed (then ended_).
  bool ask() {
    if (asked_) return true;
    if (!follower_ && !follow()) return false;
    if (Status s = follower_->ask(offset_, kFollowWaitMs); !s) return lost(s.error());
    asked_ = true;
    return true;
  }

  // The agent's backlog of connections may be full for a moment (EAGAIN):
  // tried again on the next wait().
  bool follow() {
    auto follower = sandbox_.follow_output(pid_);
    if (follower) {
      follower_ = std::move(*follower);
      return true;
    }
    if (follower.error().errnum == EAGAIN) {
      std::this_thread::sleep_for(kEmptyAnswerPause);
      return false;
    }
    return lost(follower.error());
  }

  // The answer, if it came; false when there is no point waiting more now.
  bool take_answer() {
    auto answer = follower_->answer();
    if (!answer) return lost(answer.error());
    if (!*answer) return true;  // not whole yet
    asked_ = false;
    const runtime::OutputSlice& slice = **answer;
    for (const auto& chunk : slice.chunks) {
      (chunk.stream == runtime::OutputStream::kStderr ? err_ : out_) += chunk.bytes;
      offset_ = chunk.offset + chunk.bytes.size();
    }
    if (slice.ended && offset_ >= slice.end) {
      ended_ = true;
      ended_how_ = describe_wait_status(slice.wait_status);
    }
    if (slice.chunks.empty() && !ended_) std::this_thread::sleep_for(kEmptyAnswerPause);
    return true;
  }

  bool lost(const Error& error) {
    ended_ = true;
    ended_how_ = "could not be followed (" + error.message() + ")";
    follower_.reset();
    return false;
  }

  runtime::Sandbox& sandbox_;
  const int pid_;
  uint64_t offset_;
  std::unique_ptr<runtime::OutputFollower> follower_;
  bool asked_ = false;  // a read of follower_ waits for its answer
  std::string out_, err_;
  bool ended_ = false;
  std::string ended_how_ = "ended without an exit status";
};

}  // namespace

std::unique_ptr<DriverChannel> in_band_channel(runtime::Sandbox& sandbox, int pid,
                                               uint64_t offset) {
  return std::make_unique<InBandChannel>(sandbox, pid, offset);
}

}  // namespace abx::interp
