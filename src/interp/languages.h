// The languages a context can speak: how to start its driver and how to
// phrase one execution request for it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "interp/interp.h"

namespace abx::interp {

struct Language {
  std::string name;
  std::vector<std::string> argv;  // the driver process, source embedded
  // One request line (with its newline) for the driver's stdin.
  std::string (*request_line)(const ExecuteRequest& request);
  // A program whose exit status 0 means the sandbox can run this driver, or
  // empty when the template always can.
  std::string availability_check;
  std::string missing_hint;  // why it failed when the check fails
  // Code that prints its argument, a word of [a-z0-9-] (fmt's "{}"): what an
  // adopted context's first execution is preceded by (Context::resync_locked).
  std::string echo_format;
};

// The language called `name` (or one of E2B's aliases: js, ts);
// Error{"context language", EINVAL, ...} for an unknown name.
Result<const Language*> find_language(std::string_view name);

// Bash $'...' quoting: any bytes survive and the result is one line.
std::string bash_ansi_c_quote(std::string_view text);

}  // namespace abx::interp
