// E2B's pause and resume: a paused sandbox is frozen whole (its init too) by
// the runtime, keeps no deadline, and is stored as paused, so a daemon
// restart finds it paused. Memory stays where it is (no checkpoint to disk).
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "daemon/sandbox_adoption.h"
#include "daemon/service.h"

namespace abx::daemon {
namespace {

// Freezes or thaws `live` unless it is in that state already (false then),
// and stores the change; `seconds` is the resumed sandbox's time to live.
Result<bool> set_paused(LiveSandbox& live, Store& store, Usage& usage, bool paused, int seconds) {
  std::unique_lock turn(live.pausing, std::try_to_lock);
  if (!turn.owns_lock())
    return Error::with_message("a pause or resume of this sandbox is under way: retry", EBUSY);
  if (live.dying) return Error::with_message("the sandbox is being killed", ENOENT);
  if (live.snapshot().paused == paused) return false;
  if (Status s = live.sandbox->set_frozen(paused); !s) return s.error();
  // Paused when the daemon restarted, its commands are found again now
  // (those found before are this daemon's already: init hands over only
  // what no daemon holds).
  if (!paused) adopt_running_processes(live);
  SandboxRow row;
  {
    std::lock_guard lock(live.mutex);
    const int64_t now = unix_ms_now();
    // Paused time is not sandbox time: account what ran until now.
    if (paused)
      usage.add_seconds(live.row.owner, static_cast<double>(now - live.accounted_ms) / 1000, now);
    live.accounted_ms = now;
    live.row.paused = paused;
    if (paused) live.row.paused_at_ms = now;
    if (!paused) live.row.end_at_ms = now + int64_t{seconds} * 1000;
    row = live.row;
  }
  // Unsaved, a restart would find a frozen sandbox it thinks runs (it thaws
  // those) or a running one it thinks paused: say so, the state in memory holds.
  if (Status s = store.put(row); !s) spdlog::warn("sandbox {}: {}", row.id, s.error().message());
  spdlog::info("sandbox {} {}", row.id, paused ? "paused" : "resumed");
  live.log->add("info", paused ? "paused" : "resumed for " + std::to_string(seconds) + " s");
  if (paused) live.log->event("lifecycle", "paused");
  if (!paused) live.log->event("lifecycle", "resumed", {{"timeoutS", seconds}});
  return true;
}

}  // namespace

void Service::mark_dying(LiveSandbox& live) {
  std::lock_guard turn(live.pausing);
  live.dying = true;
  if (live.snapshot().paused) (void)live.sandbox->set_frozen(false);
}

http::Task<Result<bool>> Service::pause(std::shared_ptr<LiveSandbox> live) {
  Result<bool> done = false;
  co_await pool_.run([&] { done = set_paused(*live, store_, usage(), true, 0); });
  co_return done;
}

http::Task<Result<bool>> Service::resume(std::shared_ptr<LiveSandbox> live, int seconds) {
  if (Status s = quotas().check_timeout(live->snapshot().owner, seconds); !s) co_return s.error();
  Result<bool> done = false;
  co_await pool_.run([&] { done = set_paused(*live, store_, usage(), false, seconds); });
  co_return done;
}

}  // namespace abx::daemon
