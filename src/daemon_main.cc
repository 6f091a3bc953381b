// abx-daemon: the daemon's own program. `abx serve` and the CLI's auto-start
// exec it from beside abx with serve's arguments, so the CLI itself links none
// of the daemon's libraries (runtime, templates, egress, SQLite, libnl, ...).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/serve_flags.h"
#include "common/paths.h"
#include "common/version.h"
#include "daemon/daemon.h"

int main(int argc, char** argv) {
  CLI::App app{"abx-daemon: the abx daemon; run it as `abx serve`", "abx-daemon"};
  app.set_version_flag("--version", "abx-daemon " + abx::version::text());
  app.require_subcommand(1);
  abx::daemon::ServeOptions options;
  abx::cli::add_serve_flags(*app.add_subcommand("serve", "Run the daemon in the foreground"),
                            options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    std::cerr << "abx serve: " << error.what() << "\nrun `abx serve --help` for more\n";
    return 2;
  }
  if (options.data_dir.empty()) options.data_dir = abx::paths::state_dir();
  if (options.address_file.empty())
    options.address_file = abx::paths::daemon_address_file(options.data_dir);
  return abx::daemon::serve(options);
}
