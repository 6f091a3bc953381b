// abx daemon start|stop|status (the background daemon) and abx serve (the
// daemon in the foreground).
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/local_daemon.h"
#include "common/paths.h"
#include "daemon/daemon.h"
#include "daemon/data_dir_lock.h"

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
  std::ifstream in(daemon::api_key_path(paths::state_dir()));
  std::string key;
  in >> key;
  auto sandboxes = ControlPlane({*parsed, key}).list_sandboxes();
  return sandboxes ? std::to_string(sandboxes->size()) : "?";
}

Result<int> run_status() {
  const auto data_dir = paths::state_dir();
  const auto url = local_daemon::healthy_url(data_dir);
  if (!url) {
    if (const auto holder = daemon::lock_holder(data_dir)) {
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

void add_serve(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<daemon::ServeOptions>();
  auto* app = root.add_subcommand("serve", "Run the daemon in the foreground");
  app->add_option("--listen", options->listen, "HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  app->add_option("--data-dir", options->data_dir, "State directory (default: the state dir)");
  app->add_option("--templates-dir", options->templates_dir,
                  "Templates and their layers (default: <data>/templates)")
      ->envname("ABX_TEMPLATES_DIR");
  app->add_option("--warm-pool", options->warm_pool,
                  "Ready sandboxes kept per template for fast creates (0: none)")
      ->envname("ABX_WARM_POOL")
      ->capture_default_str();
  app->add_option("--output-buffer", options->output_buffer,
                  "Bytes of each command's newest output the sandbox keeps (a restart, "
                  "GET .../processes/{pid}/output); past it, while no daemon reads, the "
                  "oldest is dropped")
      ->envname("ABX_OUTPUT_BUFFER")
      ->check(CLI::Range(size_t{4096}, size_t{64} * 1024 * 1024))
      ->capture_default_str();
  app->add_option("--max-connections", options->max_connections,
                  "Client connections held at once (0: 4096, or half the open-files limit)")
      ->envname("ABX_MAX_CONNECTIONS")
      ->capture_default_str();
  app->add_option("--max-connections-per-address", options->max_connections_per_address,
                  "Of those, how many one client address may hold (0: a quarter)")
      ->envname("ABX_MAX_CONNECTIONS_PER_ADDRESS")
      ->capture_default_str();
  app->add_option("--header-timeout", options->header_timeout_s,
                  "Seconds a connection has to send a complete request head")
      ->envname("ABX_HTTP_HEADER_TIMEOUT_S")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
  app->add_option("--log-level", options->log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app->add_option("--address-file", options->address_file,
                  "Where to write the URL once listening (default: <data>/daemon.addr)");
  app->add_option("--log-file", options->log_file, "Log to FILE, rotated (default: stderr)")
      ->envname("ABX_LOG_FILE");
  app->add_option("--log-max-bytes", options->log_max_bytes, "Rotate the log file at this size")
      ->envname("ABX_LOG_MAX_BYTES")
      ->capture_default_str();
  app->add_option("--log-files", options->log_files, "Rotated log files kept")
      ->envname("ABX_LOG_FILES")
      ->capture_default_str();
  app->add_option("--config", options->config_file,
                  "Quotas and host caps, JSON (default: <data>/config.json; see README)");
  commands.push_back({app, [options]() -> Result<int> {
                        if (options->data_dir.empty()) options->data_dir = paths::state_dir();
                        if (options->address_file.empty()) {
                          options->address_file = paths::daemon_address_file(options->data_dir);
                        }
                        return daemon::serve(*options);
                      }});
}

}  // namespace abx::cli
