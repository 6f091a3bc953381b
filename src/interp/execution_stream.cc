#include "interp/execution_stream.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "interp/events.h"
#include "interp/fd_io.h"

namespace abx::interp {

namespace {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

ExecutionStream::ExecutionStream(runtime::Process& process, const std::string& token,
                                 const LineSink& sink)
    : process_(process),
      sink_(sink),
      stdout_demux_(token),
      stderr_demux_(token),
      last_emit_(std::chrono::steady_clock::now()) {}

void ExecutionStream::emit(const std::string& line) {
  sink_(line);
  last_emit_ = std::chrono::steady_clock::now();
}

void ExecutionStream::keepalive_if_quiet(std::chrono::seconds quiet) {
  if (std::chrono::steady_clock::now() - last_emit_ >= quiet) emit(events::keepalive());
}

ExecutionStream::State ExecutionStream::step(std::chrono::milliseconds wait) {
  pollfd fds[3] = {
      {stdout_eof_ ? -1 : process_.stdout_fd.get(), POLLIN, 0},
      {stderr_eof_ ? -1 : process_.stderr_fd.get(), POLLIN, 0},
      {process_.exit_fd.get(), POLLIN, 0},
  };
  if (::poll(fds, 3, static_cast<int>(wait.count())) < 0) return State::kRunning;  // EINTR
  if (fds[0].revents != 0 && forward(fds[0].fd, stdout_demux_, "stdout", stdout_eof_)) {
    // Output the code wrote on stderr before it finished is in the pipe by now.
    bool ignored_eof = stderr_eof_;
    if (!stderr_eof_) forward(process_.stderr_fd.get(), stderr_demux_, "stderr", ignored_eof);
    emit(events::end_of_execution());
    return State::kFinished;
  }
  if (fds[1].revents != 0 && forward(fds[1].fd, stderr_demux_, "stderr", stderr_eof_)) {
    emit(events::end_of_execution());
    return State::kFinished;
  }
  if (fds[2].revents != 0 || stdout_eof_) {
    read_exit_status();
    return State::kDied;
  }
  return State::kRunning;
}

bool ExecutionStream::forward(int fd, StreamDemux& demux, const char* type, bool& eof) {
  std::string data;
  eof = read_available(fd, data) == ReadState::kEof;
  auto pieces = demux.feed(data);
  if (eof) {
    for (auto& piece : demux.finish()) pieces.push_back(std::move(piece));
  }
  for (const StreamPiece& piece : pieces) {
    if (!piece.protocol) {
      emit(events::output(type, piece.text));
    } else if (forward_protocol_line(piece.text, type)) {
      return true;
    }
  }
  return false;
}

bool ExecutionStream::forward_protocol_line(const std::string& json_text, const char* type) {
  // The line comes from inside the sandbox: parsed with the depth bound.
  auto event = abx::json_text::parse_object(json_text);
  if (!event || !event->contains("type")) {
    emit(events::output(type, json_text + "\n"));  // not ours after all: keep it as output
    return false;
  }
  if (event->at("type") == "end_of_execution") return true;
  emit(json_text);
  return false;
}

void ExecutionStream::read_exit_status() {
  // The exit fd yields an int32 wait status once the process is reaped; give
  // it a moment in case stdout closed first.
  pollfd exit_poll{process_.exit_fd.get(), POLLIN, 0};
  int32_t status = 0;
  if (::poll(&exit_poll, 1, 500) == 1 &&
      ::read(process_.exit_fd.get(), &status, sizeof status) == sizeof status) {
    exit_description_ = describe_wait_status(status);
  } else {
    exit_description_ = "ended without an exit status";
  }
  bool eof = false;
  if (!stdout_eof_) forward(process_.stdout_fd.get(), stdout_demux_, "stdout", eof);
  if (!stderr_eof_) forward(process_.stderr_fd.get(), stderr_demux_, "stderr", eof);
}

}  // namespace abx::interp
