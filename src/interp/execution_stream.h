// One execution's view of a context process: reads its stdout, stderr and
// exit status from its channel (pipes or in band), and turns them into E2B
// lines for the sink, until the driver says end_of_execution or it dies.
#pragma once

#include <chrono>
#include <string>

#include "interp/driver_channel.h"
#include "interp/interp.h"
#include "interp/stream_demux.h"

namespace abx::interp {

class ExecutionStream {
 public:
  enum class State { kRunning, kFinished, kDied };

  ExecutionStream(DriverChannel& channel, const std::string& token, const LineSink& sink);

  // Waits up to `wait` for output and forwards it. kFinished: the driver's
  // end_of_execution has been emitted. kDied: the process is gone; nothing
  // ends the stream yet (see exit_description()).
  State step(std::chrono::milliseconds wait);

  void emit(const std::string& line);
  void keepalive_if_quiet(std::chrono::seconds quiet);
  // "exit status 1" / "killed by signal 9" / ... once kDied.
  const std::string& exit_description() const { return exit_description_; }

 private:
  // Forwards what is readable; returns true when end_of_execution arrived.
  bool forward(runtime::OutputStream stream, StreamDemux& demux, const char* type, bool& eof);
  bool forward_protocol_line(const std::string& json_text, const char* type);
  void read_exit_status();

  DriverChannel& channel_;
  const LineSink& sink_;
  StreamDemux stdout_demux_;
  StreamDemux stderr_demux_;
  bool stdout_eof_ = false;
  bool stderr_eof_ = false;
  std::string exit_description_;
  std::chrono::steady_clock::time_point last_emit_;
};

}  // namespace abx::interp
