#include "interp/execution_stream.h"

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "interp/events.h"

namespace abx::interp {

using runtime::OutputStream;

ExecutionStream::ExecutionStream(DriverChannel& channel, const std::string& token,
                                 const LineSink& sink)
    : channel_(channel),
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
  const DriverChannel::Ready ready = channel_.wait(wait);
  if (ready.out && forward(OutputStream::kStdout, stdout_demux_, "stdout", stdout_eof_)) {
    // Output the code wrote on stderr before it finished is in the pipe by now.
    bool ignored_eof = stderr_eof_;
    if (!stderr_eof_) forward(OutputStream::kStderr, stderr_demux_, "stderr", ignored_eof);
    emit(events::end_of_execution());
    return State::kFinished;
  }
  if (ready.err && forward(OutputStream::kStderr, stderr_demux_, "stderr", stderr_eof_)) {
    emit(events::end_of_execution());
    return State::kFinished;
  }
  if (ready.ended || stdout_eof_) {
    read_exit_status();
    return State::kDied;
  }
  return State::kRunning;
}

bool ExecutionStream::forward(OutputStream stream, StreamDemux& demux, const char* type,
                              bool& eof) {
  std::string data;
  eof = channel_.read(stream, data) == ReadState::kEof;
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
  exit_description_ = channel_.exit_description();
  bool eof = false;
  if (!stdout_eof_) forward(OutputStream::kStdout, stdout_demux_, "stdout", eof);
  if (!stderr_eof_) forward(OutputStream::kStderr, stderr_demux_, "stderr", eof);
}

}  // namespace abx::interp
