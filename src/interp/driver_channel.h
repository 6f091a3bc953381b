// How the daemon talks to a context's driver: it writes the driver's
// requests, reads what the driver writes on stdout and stderr, and hears
// when it ended. Two ways: over pipes the daemon holds (the sandbox's init
// keeps copies for the next daemon), or in band, through the sandbox's
// agent, which holds every fd of the driver (runtime::Sandbox::spawn_in_band)
// while the daemon follows its output ring.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/error.h"
#include "interp/fd_io.h"
#include "runtime/runtime.h"

namespace abx::interp {

class DriverChannel {
 public:
  // What has something to read after wait(): a stream (or its EOF), the end.
  struct Ready {
    bool out = false;
    bool err = false;
    bool ended = false;
  };

  virtual ~DriverChannel() = default;
  virtual int pid() const = 0;
  // Hands `bytes` (a request line) to the driver's stdin; false once it is gone.
  virtual bool send(const std::string& bytes) = 0;
  // Waits up to `wait` for output or the driver's end.
  virtual Ready wait(std::chrono::milliseconds wait) = 0;
  // Appends what the driver wrote on `stream` that is here now; kEof at its end.
  virtual ReadState read(runtime::OutputStream stream, std::string& out) = 0;
  // "exit status 1" / "killed by signal 9" / ..., once ended (may wait briefly).
  virtual std::string exit_description() = 0;
  // In band: the offset of the driver's output read so far (0 over pipes).
  virtual uint64_t output_offset() const { return 0; }
};

// A driver with pipes (started by spawn, or handed over by the sandbox's
// init after a restart); its output pipes are made non-blocking here.
Result<std::unique_ptr<DriverChannel>> pipe_channel(runtime::Process process);

// An in-band driver, read from `offset` of its output on. Holds `sandbox`,
// which must outlive it.
std::unique_ptr<DriverChannel> in_band_channel(runtime::Sandbox& sandbox, int pid, uint64_t offset);

// "exit status 1" / "killed by signal 9" / ... for a waitpid status.
std::string describe_wait_status(int status);

}  // namespace abx::interp
