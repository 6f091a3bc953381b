// Runs a helper program (mmdebstrap) to completion, handing each line it
// prints to a callback. posix_spawn, not fork: the daemon is multi-threaded.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates {

using LineFn = std::function<void(const std::string& line)>;

struct ChildResult {
  int exit_code = 0;             // 128+signal when killed
  std::deque<std::string> tail;  // the last lines of its output
};

// Asked a few times a second while the child runs: false kills it (SIGKILL).
using KeepGoingFn = std::function<bool()>;

// stdout and stderr both go to `on_line`; stdin is /dev/null.
Result<ChildResult> run_child(const std::vector<std::string>& argv, const LineFn& on_line,
                              const KeepGoingFn& keep_going = {});

}  // namespace abx::templates
