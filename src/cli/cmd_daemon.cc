// abx daemon start|stop|status (the background daemon) and abx serve (the
// daemon in the foreground).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/daemon_binary.h"
#include "cli/local_daemon.h"
#include "cli/serve_flags.h"
#include "common/data_dir_lock.h"
#include "common/paths.h"

namespace abx::cli {
namespace {

constexpr int kStatusStopped = 3;

Result<int> run_start() {
  const auto data_dir = paths::state_dir();
  auto started = local_daemon::start(data_dir);
  if (!started) return started.error();
  if (started->already_running) {
    std::cout << "the local daemon is already running at " << started->url << "\n";
  } else {
    std::cout << "started the local daemon at " << started->url
              << " (logs: " << paths::daemon_log_file(data_dir).string() << ")\n";
  }
  return 0;
}

Result<int> run_stop() {
  auto stopped = local_daemon::stop(paths::state_dir());
  if (!stopped) return stopped.error();
  std::cout << (*stopped ? "stopped the local daemon" : "the local daemon is not running") << "\n";
  return 0;
}

// The count needs the key file; a daemon we cannot ask still shows as running.
std::string sandbox_count(const std::string& url) {
  auto parsed = http::Url::parse(url);
  if (!parsed) return "?";
  std::ifstream in(paths::api_key_file(paths::state_dir()));
  std::string key;
  in >> key;
  auto sandboxes = ControlPlane({*parsed, key}).list_sandboxes();
  return sandboxes ? std::to_string(sandboxes->size()) : "?";
}

Result<int> run_status() {
  const auto data_dir = paths::state_dir();
  const auto url = local_daemon::healthy_url(data_dir);
  if (!url) {
    if (const auto holder = lock_holder(data_dir)) {
      return local_daemon::not_answering(data_dir, *holder);
    }
    std::cout << "stopped (data: " << data_dir.string() << ")\n";
    return kStatusStopped;
  }
  const auto pid = local_daemon::running_pid(data_dir);
  std::cout << "running\n"
            << "address:   " << *url << "\n"
            << "pid:       " << (pid ? std::to_string(*pid) : "unknown") << "\n"
            << "sandboxes: " << sandbox_count(*url) << "\n"
            << "logs:      " << paths::daemon_log_file(data_dir).string() << "\n";
  return 0;
}

}  // namespace

void add_daemon(CLI::App& root, Commands& commands) {
  auto* daemon = root.add_subcommand("daemon", "Manage the local background daemon");
  daemon->require_subcommand(1);
  commands.push_back(
      {daemon->add_subcommand("start", "Start it unless it runs"), [] { return run_start(); }});
  commands.push_back({daemon->add_subcommand("stop", "Stop it"), [] { return run_stop(); }});
  commands.push_back({daemon->add_subcommand("status", "Say whether it runs (exit 3 if not)"),
                      [] { return run_status(); }});
}

void add_serve(CLI::App& root, Commands& commands, const std::vector<std::string>& args) {
  auto options = std::make_shared<daemon::ServeOptions>();
  auto* app = root.add_subcommand("serve", "Run the daemon in the foreground");
  add_serve_flags(*app, *options);
  // Parsed here for the usage errors; abx-daemon reads the same arguments again.
  commands.push_back({app, [&args]() -> Result<int> {
                        const auto serve = std::find(args.begin(), args.end(), "serve");
                        const std::vector<std::string> rest(serve == args.end() ? serve : serve + 1,
                                                            args.end());
                        auto binary = daemon_binary();
                        if (!binary) return binary.error();
                        return exec_daemon(*binary, rest);
                      }});
}

}  // namespace abx::cli
