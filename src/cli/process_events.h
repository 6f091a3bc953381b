// The CLI's names for the shared process-event helpers (src/common/process_events.h).
#pragma once

#include "common/process_events.h"

namespace abx::cli {
using e2b::exit_code_from_end;
using e2b::signal_from_status;
}  // namespace abx::cli
