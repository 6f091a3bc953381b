// The flags of `abx serve`, in one place for both programs that read them: the
// CLI (its help, completion and man page, and a usage error before anything
// starts) and abx-daemon, which `abx serve` execs with the same arguments.
#pragma once

#include <CLI/CLI.hpp>

#include "daemon/serve_options.h"

namespace abx::cli {

inline void add_serve_flags(CLI::App& app, daemon::ServeOptions& options) {
  app.add_option("--listen", options.listen, "HOST:PORT (port 0 picks a free one)")
      ->capture_default_str();
  app.add_option("--data-dir", options.data_dir, "State directory (default: the state dir)");
  app.add_option("--templates-dir", options.templates_dir,
                 "Templates and their layers (default: <data>/templates)")
      ->envname("ABX_TEMPLATES_DIR");
  app.add_option("--warm-pool", options.warm_pool,
                 "Ready sandboxes kept per template for fast creates (0: none)")
      ->envname("ABX_WARM_POOL")
      ->capture_default_str();
  app.add_option("--output-buffer", options.output_buffer,
                 "Bytes of each command's newest output the sandbox keeps (a restart, "
                 "GET .../processes/{pid}/output); past it, while no daemon reads, the "
                 "oldest is dropped")
      ->envname("ABX_OUTPUT_BUFFER")
      ->check(CLI::Range(size_t{4096}, size_t{64} * 1024 * 1024))
      ->capture_default_str();
  app.add_flag("--in-band-commands", options.in_band_commands,
               "The pipes of commands and interpreter contexts stay in the sandbox's agent "
               "and the daemon follows their output from it (what a daemon on another host "
               "does); experimental")
      ->envname("ABX_IN_BAND_COMMANDS");
  app.add_option("--max-connections", options.max_connections,
                 "Client connections held at once (0: 4096, or half the open-files limit)")
      ->envname("ABX_MAX_CONNECTIONS")
      ->capture_default_str();
  app.add_option("--max-connections-per-address", options.max_connections_per_address,
                 "Of those, how many one client address may hold (0: a quarter)")
      ->envname("ABX_MAX_CONNECTIONS_PER_ADDRESS")
      ->capture_default_str();
  app.add_option("--header-timeout", options.header_timeout_s,
                 "Seconds a connection has to send a complete request head")
      ->envname("ABX_HTTP_HEADER_TIMEOUT_S")
      ->check(CLI::Range(1u, 3600u))
      ->capture_default_str();
  app.add_option("--log-level", options.log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--address-file", options.address_file,
                 "Where to write the URL once listening (default: <data>/daemon.addr)");
  app.add_option("--log-file", options.log_file, "Log to FILE, rotated (default: stderr)")
      ->envname("ABX_LOG_FILE");
  app.add_option("--log-max-bytes", options.log_max_bytes, "Rotate the log file at this size")
      ->envname("ABX_LOG_MAX_BYTES")
      ->capture_default_str();
  app.add_option("--log-files", options.log_files, "Rotated log files kept")
      ->envname("ABX_LOG_FILES")
      ->capture_default_str();
  app.add_option("--config", options.config_file,
                 "Quotas and host caps, JSON (default: <data>/config.json; see README)");
}

}  // namespace abx::cli
