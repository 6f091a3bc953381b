// What `abx serve` (abx-daemon's command line) sets: a plain struct, so the
// CLI can offer the same flags (help, completion, man page) without linking the daemon.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace abx::daemon {

struct ServeOptions {
  std::string listen = "127.0.0.1:49980";  // host:port; port 0 picks a free one
  std::filesystem::path data_dir;          // sqlite db, sandboxes/, templates/, api_key
  // Where templates and their layers live; default <data_dir>/templates.
  // Daemons of one machine may share it (builds take a file lock).
  std::filesystem::path templates_dir;
  // Ready sandboxes kept per template and limits, so a create takes one
  // instead of starting one; 0 turns the pool off.
  size_t warm_pool = 2;
  // Client connections held at once; 0: 4096, or half the open-files limit
  // when that is lower. Over it, new connections answer only GET /health.
  size_t max_connections = 0;
  size_t max_connections_per_address = 0;  // 0: a quarter of max_connections
  unsigned header_timeout_s = 10;          // a request head must arrive within this
  // What each command's stdout and stderr hold while no daemon reads them
  // (a restart): past it the command's writes wait for the next daemon.
  size_t output_buffer = 1024 * 1024;
  // Commands run in band: the sandbox's agent holds their pipes, the daemon
  // none (see ProcessTable); off until it is measured against the default.
  bool in_band_commands = false;
  std::string log_level = "info";     // trace|debug|info|warn|error
  std::filesystem::path init_binary;  // abx-init; default: beside /proc/self/exe
  // Written once the server listens: "http://127.0.0.1:PORT\n". Lets the CLI
  // and tests find a daemon started with port 0.
  std::filesystem::path address_file;
  // Quotas and host caps (quotas.h); default <data_dir>/config.json.
  std::filesystem::path config_file;
  // A file to log to instead of stderr, rotated at log_max_bytes with
  // log_files old ones kept (abx.1.log … for abx.log). Empty: stderr.
  std::filesystem::path log_file;
  size_t log_max_bytes = 10 * 1024 * 1024;
  size_t log_files = 3;
};

}  // namespace abx::daemon
