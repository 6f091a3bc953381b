// abx dashboard: where the web dashboard is (the daemon serves it at
// /dashboard, starting the local daemon if none runs), opened in the
// desktop's browser when there is one. The key is never put in the URL:
// the login page asks for it, so it stays out of browser history and logs.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "cli/api.h"
#include "cli/commands.h"
#include "common/paths.h"

extern char** environ;

namespace abx::cli {
namespace {

bool has_desktop() { return std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY"); }

// xdg-open, run without a shell (the URL is one argument, never parsed);
// false when it is missing or failed.
bool open_in_browser(const std::string& url) {
  std::string program = "xdg-open";
  char* argv[] = {program.data(), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Result<int> run_dashboard(bool open) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const std::string url = endpoint->url.str() + "/dashboard";
  std::cout << url << "\n";
  std::cerr << "log in with an API key: the one `abx config get sandbox_api_key` shows, or the "
               "local daemon's in "
            << paths::api_key_file(paths::state_dir()).string() << "\n";
  if (open && has_desktop() && !open_in_browser(url))
    std::cerr << "could not start a browser (xdg-open): open the address above yourself\n";
  return 0;
}

}  // namespace

void add_dashboard(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("dashboard", "Print (and open) the daemon's web dashboard");
  auto no_open = std::make_shared<bool>(false);
  app->add_flag("--no-open", *no_open, "Only print the address, open no browser");
  commands.push_back({app, [no_open] { return run_dashboard(!*no_open); }});
}

}  // namespace abx::cli
